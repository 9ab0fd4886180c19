"""GitHub App and PAT credentials, and the exchange that yields the Actions admin token.

The exchange runs lazily before an Actions-service call whenever the admin
token is missing or expires within 60 s:

1. (App only) an RS256 JWT (``iat = now - 60 s``, ``exp = iat + 9 min``,
   ``iss = app/client id``) buys an installation token:
   ``POST {api}/app/installations/{id}/access_tokens`` → 201.
2. PAT or installation token buys a registration token:
   ``POST {api}/{orgs|enterprises|repos}/…/actions/runners/registration-token`` → 201.
3. ``POST {api}/actions/runner-registration`` with ``RemoteAuth <registration
   token>`` returns the Actions service URL and the admin JWT (any 2xx; this
   call also retries 401 and 403).
4. The admin token expires at its ``exp`` claim, read without verifying.

Ports: github.com/actions/scaleset client.go (fetchAccessToken, getRunnerRegistrationToken, getActionsServiceAdminConnection, updateTokenIfNeeded)
"""  # noqa: E501

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from arc_controllers.actions.config import GitHubConfig
from arc_controllers.actions.errors import ActionsError, error_from_response
from arc_controllers.actions.redact import SecretSet
from arc_controllers.actions.transport import HttpRequest, HttpResponse

__all__ = [
    "ADMIN_TOKEN_REFRESH_MARGIN",
    "AdminConnection",
    "AdminTokenSource",
    "Credentials",
    "GitHubAppAuth",
    "PersonalAccessToken",
    "admin_token_expires_at",
    "create_jwt_for_github_app",
]

log = structlog.get_logger(__name__)

ADMIN_TOKEN_REFRESH_MARGIN = 60.0
"""Seconds before the admin token's expiry at which it is renewed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GitHubAppAuth:
    """GitHub App credentials. The private key never appears in a repr.

    Ports: scaleset.GitHubAppAuth
    """

    client_id: str
    """The App's client id, or its numeric App id as a string."""

    installation_id: int
    """The installation of the App on the organization, repository or enterprise."""

    private_key: str = field(repr=False)
    """The App's RSA private key, PEM."""

    def __post_init__(self) -> None:
        if not self.client_id:
            raise ValueError("client ID is required")
        if self.installation_id == 0:
            raise ValueError("app installation ID is required")
        if not self.private_key:
            raise ValueError("app private key is required")


@dataclass(frozen=True, slots=True)
class PersonalAccessToken:
    """A PAT. The token never appears in a repr.

    Ports: the token field of scaleset actionsAuth
    """

    token: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.token:
            raise ValueError("personal access token is required")


Credentials = GitHubAppAuth | PersonalAccessToken
"""Either way of authenticating to GitHub."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AdminConnection:
    """Where the Actions service is and the token for it.

    Ports: scaleset actionsServiceAdminConnection with its parsed expiry
    """

    actions_service_url: str
    """Base URL of the tenant, e.g. ``https://pipelines…/tenant/1/``."""

    admin_token: str = field(repr=False)
    """Bearer JWT for Actions-service calls."""

    expires_at: float
    """Unix seconds of the token's ``exp`` claim."""


def create_jwt_for_github_app(app: GitHubAppAuth, *, now: float) -> str:
    """Sign the App JWT that buys an installation token.

    Args:
        app: Whose key signs and whose id is the issuer.
        now: Unix seconds; ``iat`` is a minute earlier (clock skew), ``exp`` nine minutes after ``iat``.

    Raises:
        ValueError: the private key is not an RSA PEM key (the message holds no key material).

    Ports: createJWTForGitHubApp
    """
    # Imported here, not at module level: cryptography and PyJWT cost a listener process about
    # 9 MiB of its RSS, and only GitHub App credentials sign anything (issue 20).
    import jwt
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(app.private_key.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError("failed to parse RSA private key from PEM") from None
    if not isinstance(key, RSAPrivateKey):
        raise ValueError("failed to parse RSA private key from PEM: not an RSA key")
    issued_at = int(now) - 60
    claims = {"iat": issued_at, "exp": issued_at + 9 * 60, "iss": app.client_id}
    return jwt.encode(claims, key, algorithm="RS256")


def admin_token_expires_at(token: str) -> float:
    """Read the ``exp`` claim of the admin JWT without checking its signature.

    Raises:
        ValueError: not a JWT, or no ``exp`` claim.

    Ports: actionsServiceAdminTokenExpiresAt
    Differs: a missing ``exp`` raises here; Go dereferences nil and crashes.
    """
    claims = _unverified_claims(token)
    exp = claims.get("exp")
    if not isinstance(exp, int | float):
        raise ValueError("admin token has no exp claim")
    return float(exp)


def _unverified_claims(token: str) -> dict[str, object]:
    """The claims of a compact JWT (``header.payload.signature``), signature unchecked.

    Both the header and the payload must be base64url JSON objects, as PyJWT's unverified
    decode requires; the signature segment is not read.

    Raises:
        ValueError: ``failed to parse jwt token``.

    Python only: PyJWT's ``decode(verify_signature=False)`` without importing PyJWT, which
    loads cryptography (about 9 MiB in every listener process, needed only for App keys).
    """
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("failed to parse jwt token")
    decoded: list[object] = []
    for segment in parts[:2]:
        try:
            raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
            decoded.append(json.loads(raw))
        except (binascii.Error, ValueError):
            raise ValueError("failed to parse jwt token") from None
    header, claims = decoded
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise ValueError("failed to parse jwt token")
    return claims


Send = Callable[[HttpRequest, bool], Awaitable[tuple[HttpResponse, int]]]
"""Sends a request with retries; the flag marks the admin-connection call (retry 401/403, return the last answer)."""


class AdminTokenSource:
    """Holds the admin connection and renews it 60 s before it expires.

    Renewals are serialised by its own lock; reads of a valid token are not.

    Ports: the token fields of scaleset.Client and updateTokenIfNeeded
    """

    def __init__(
        self,
        *,
        config: GitHubConfig,
        credentials: Credentials,
        send: Send,
        user_agent: Callable[[], str],
        secrets: SecretSet,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._credentials = credentials
        self._send = send
        self._user_agent = user_agent
        self._secrets = secrets
        self._clock = clock
        self._refresh_lock = asyncio.Lock()
        self._connection: AdminConnection | None = None
        self.refreshes = 0
        """How many exchanges have completed (for tests and metrics)."""

    @property
    def connection(self) -> AdminConnection | None:
        """The current connection, possibly stale; ``None`` before the first exchange.

        Python only: read access for the client.
        """
        return self._connection

    def invalidate(self) -> None:
        """Forget the admin token, so the next call exchanges afresh.

        Python only: used after the service refused the token with 401.
        """
        self._connection = None

    async def ensure(self) -> AdminConnection:
        """Return a connection whose token is valid for at least 60 more seconds.

        Raises:
            ActionsError: any step of the exchange failed (message redacted).
            ValueError: the App key or the admin token could not be parsed.

        Ports: Client.updateTokenIfNeeded
        """
        current = self._valid_connection()
        if current is not None:
            return current
        async with self._refresh_lock:
            # Differs: Go holds Client.mu around every call; only the renewal needs it, so
            # JIT registrations of many runners run concurrently on one client.
            current = self._valid_connection()
            if current is not None:
                return current
            log.info("refreshing token", github_config_url=self._config.config_url)
            registration_token = await self._registration_token()
            connection = await self._admin_connection(registration_token)
            self._connection = connection
            self.refreshes += 1
            return connection

    def _valid_connection(self) -> AdminConnection | None:
        """Python only: the current connection if its token has the refresh margin left."""
        current = self._connection
        if current is not None and self._clock() + ADMIN_TOKEN_REFRESH_MARGIN <= current.expires_at:
            return current
        return None

    def _request(self, path: str, authorization: str, content_type: str, body: bytes | None) -> HttpRequest:
        """Ports: Client.newGitHubAPIRequest plus the headers each step sets"""
        return HttpRequest(
            method="POST",
            url=self._config.github_api_url(path),
            headers={
                "User-Agent": self._user_agent(),
                "Content-Type": content_type,
                "Authorization": authorization,
            },
            body=body,
        )

    async def _access_token(self, app: GitHubAppAuth) -> str:
        """Ports: Client.fetchAccessToken"""
        app_jwt = create_jwt_for_github_app(app, now=self._clock())
        self._secrets.add(app_jwt)
        request = self._request(
            f"/app/installations/{app.installation_id}/access_tokens",
            f"Bearer {app_jwt}",
            "application/vnd.github+json",
            None,
        )
        log.info("getting access token for GitHub App auth", access_token_url=request.url)
        response, attempts = await self._send(request, False)
        if response.status != 201:
            raise self._error(
                request, response, f"failed to get access token for GitHub App auth ({response.status_line})", attempts
            )
        token = self._field(request, response, "token", "failed to decode access token for GitHub App auth", attempts)
        return token

    async def _registration_token(self) -> str:
        """Ports: Client.getRunnerRegistrationToken"""
        if isinstance(self._credentials, PersonalAccessToken):
            bearer = self._credentials.token
        else:
            bearer = await self._access_token(self._credentials)
        request = self._request(
            self._config.registration_token_path(),
            f"Bearer {bearer}",
            "application/vnd.github.v3+json",
            b"",
        )
        log.info("getting runner registration token", registration_token_url=request.url)
        response, attempts = await self._send(request, False)
        if response.status != 201:
            raise self._error(
                request, response, f"failed to get runner registration token ({response.status_line})", attempts
            )
        return self._field(request, response, "token", "failed to decode runner registration token", attempts)

    async def _admin_connection(self, registration_token: str) -> AdminConnection:
        """Ports: Client.getActionsServiceAdminConnection and getActionsServiceAdminConnectionRequest"""
        body = json.dumps({"url": self._config.config_url, "runner_event": "register"}, ensure_ascii=False)
        request = self._request(
            "/actions/runner-registration",
            f"RemoteAuth {registration_token}",
            "application/json",
            body.encode() + b"\n",
        )
        log.info("getting Actions tenant URL and JWT", registration_url=request.url)
        response, attempts = await self._send(request, True)
        if not 200 <= response.status <= 299:
            raise self._error(request, response, f"unexpected status code: {response.status}", attempts)
        url = self._field(request, response, "url", "actions service admin connection missing url", attempts)
        token = self._field(request, response, "token", "actions service admin connection missing token", attempts)
        try:
            expires_at = admin_token_expires_at(token)
        except ValueError as err:
            raise ActionsError(f"failed to get admin token expire at on refresh: {err}") from None
        return AdminConnection(actions_service_url=url, admin_token=token, expires_at=expires_at)

    def _field(self, request: HttpRequest, response: HttpResponse, name: str, problem: str, attempts: int) -> str:
        """Python only: read one non-empty string field of a token answer and remember it as a secret."""
        try:
            value = json.loads(response.body).get(name)
        except (ValueError, AttributeError):
            value = None
        if not isinstance(value, str) or not value:
            raise self._error(request, response, problem, attempts)
        if name == "token":
            self._secrets.add(value)
        return value

    def _error(self, request: HttpRequest, response: HttpResponse, cause: str, attempts: int) -> ActionsError:
        """Python only: the typed, redacted error for a failed step."""
        return error_from_response(request, response, cause, redact=self._secrets.redact, attempts=attempts)
