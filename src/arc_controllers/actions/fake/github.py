"""The GitHub REST side of the fake: installation, registration and admin tokens.

``POST …/app/installations/{id}/access_tokens`` (App JWT, RS256) → 201;
``POST …/{orgs|repos|enterprises}/…/actions/runners/registration-token``
(PAT or installation token) → 201; ``POST …/actions/runner-registration``
(``RemoteAuth <registration token>``) → 201 with the tenant URL and an admin
JWT (HS256, short-lived if asked). Every path works with and without the
GHES ``/api/v3`` prefix.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["FakeGitHub", "GitHubAuthError"]


class GitHubAuthError(Exception):
    """A refused credential: the route answers 401 ``{"message": …}``."""


@functools.cache
def _app_key() -> rsa.RSAPrivateKey:
    """One App key per process: generating RSA keys is slow, and the fake's key is no secret of anyone's."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _iso(unix: float) -> str:
    """Format Unix seconds as GitHub's ``expires_at``."""
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(kw_only=True)
class FakeGitHub:
    """Credentials the fake accepts and tokens it has issued."""

    app_id: int = 123
    client_id: str = "Iv1.fakeclientid"
    installation_id: int = 456
    pat: str = field(default_factory=lambda: "ghp_" + secrets.token_urlsafe(27), repr=False)
    admin_token_ttl: float = 3600.0
    """Seconds an admin JWT lives; short values exercise the client's refresh."""
    clock: Callable[[], float] = time.time
    private_key_pem: str = field(init=False, repr=False)
    _public_key: rsa.RSAPublicKey = field(init=False, repr=False)
    _signing_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    installation_tokens: dict[str, float] = field(default_factory=dict, repr=False)
    registration_tokens: dict[str, float] = field(default_factory=dict, repr=False)
    admin_tokens: dict[str, float] = field(default_factory=dict, repr=False)
    revoked: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        key = _app_key()
        self.private_key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        self._public_key = key.public_key()

    def issued_secrets(self) -> list[str]:
        """Every secret the fake knows: PAT, private key, tokens. For leak tests."""
        return [
            self.pat,
            self.private_key_pem,
            *self.installation_tokens,
            *self.registration_tokens,
            *self.admin_tokens,
        ]

    def _valid(self, tokens: dict[str, float], token: str) -> bool:
        expires = tokens.get(token)
        return expires is not None and token not in self.revoked and self.clock() < expires

    def access_token(self, installation_id: int, authorization: str) -> dict[str, str]:
        """Check the App JWT; mint an installation token (1 h)."""
        scheme, _, app_jwt = authorization.partition(" ")
        if scheme != "Bearer" or installation_id != self.installation_id:
            raise GitHubAuthError("A JSON web token could not be decoded")
        try:
            claims = jwt.decode(app_jwt, self._public_key, algorithms=["RS256"], options={"require": ["exp", "iat"]})
        except jwt.PyJWTError:
            raise GitHubAuthError("A JSON web token could not be decoded") from None
        if str(claims.get("iss")) not in {str(self.app_id), self.client_id}:
            raise GitHubAuthError("Integration not found")
        token = "ghs_" + secrets.token_urlsafe(27)
        expires = self.clock() + 3600
        self.installation_tokens[token] = expires
        return {"token": token, "expires_at": _iso(expires)}

    def registration_token(self, authorization: str) -> dict[str, str]:
        """Check the PAT or installation token; mint a registration token (1 h)."""
        scheme, _, bearer = authorization.partition(" ")
        pat_ok = bool(bearer) and secrets.compare_digest(bearer, self.pat)
        if scheme != "Bearer" or not (pat_ok or self._valid(self.installation_tokens, bearer)):
            raise GitHubAuthError("Bad credentials")
        token = "AREG" + secrets.token_urlsafe(24)
        expires = self.clock() + 3600
        self.registration_tokens[token] = expires
        return {"token": token, "expires_at": _iso(expires)}

    def admin_connection(self, authorization: str, tenant_url: str) -> dict[str, str]:
        """Check ``RemoteAuth <registration token>``; mint the admin JWT."""
        scheme, _, token = authorization.partition(" ")
        if scheme != "RemoteAuth" or not self._valid(self.registration_tokens, token):
            raise GitHubAuthError("Bad credentials")
        now = self.clock()
        expires = now + self.admin_token_ttl
        admin = jwt.encode(
            {"iat": int(now), "exp": int(expires), "iss": "fake-actions", "nonce": secrets.token_hex(8)},
            self._signing_secret,
            algorithm="HS256",
        )
        self.admin_tokens[admin] = expires
        return {"url": tenant_url, "token": admin}

    def check_admin(self, authorization: str) -> bool:
        """Whether ``Bearer <admin JWT>`` is a live admin token of ours."""
        scheme, _, token = authorization.partition(" ")
        if scheme != "Bearer" or token not in self.admin_tokens or token in self.revoked:
            return False
        try:
            jwt.decode(token, self._signing_secret, algorithms=["HS256"])
        except jwt.PyJWTError:
            return False
        return True

    def expire_admin_tokens(self) -> int:
        """Revoke every admin token issued so far; return how many."""
        live = [t for t in self.admin_tokens if t not in self.revoked]
        self.revoked.update(live)
        return len(live)
