"""Credentials that change while a client runs: a token file, an exec credential plugin.

Both hand out an ``Authorization`` header and are told when the API server answered 401 to
one they handed out (`invalidate`). A token file is re-read once a minute and after a 401,
as client-go resets its cached token source on 401. An exec plugin (kubeconfig
``users[].user.exec``, the ``client.authentication.k8s.io`` ExecCredential protocol) runs
once, again shortly before the ``expirationTimestamp`` it reported, and again after a 401;
concurrent requests share one run, and a burst of 401s for the same credential causes one
run, not one per request.

Ports: k8s.io/client-go/plugin/pkg/client/auth/exec (exec.go Authenticator) and
transport's cachingTokenSource / token_source.go (the token-file part)
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "EXEC_TIMEOUT",
    "TOKEN_REREAD_SECONDS",
    "CredentialError",
    "Credentials",
    "ExecCredential",
    "ExecPlugin",
    "TokenFile",
    "refresh_margin",
]

TOKEN_REREAD_SECONDS = 60.0
"""A token file is re-read at least this often (projected service-account tokens rotate); client-go's."""
EXEC_TIMEOUT = 60.0
"""Seconds an exec plugin may run before it counts as failed."""


class CredentialError(Exception):
    """A credential could not be obtained: the plugin failed or printed no usable ExecCredential.

    The message never contains the credential or the plugin's output.
    """


class Credentials(Protocol):
    """**Protocol:** where a client's ``Authorization`` header comes from."""

    async def authorization(self) -> str | None:
        """The header value to send now (refreshing an expiring credential first)."""
        ...

    def invalidate(self, used: str | None, /) -> None:
        """The server answered 401 to a request sent with ``used``: obtain a new one next time."""
        ...


class TokenFile:
    """A bearer token read from a file: re-read every `TOKEN_REREAD_SECONDS` and after a 401.

    Args:
        path: the file (a projected service-account token, a kubeconfig's ``tokenFile``).
        clock: monotonic seconds.

    Ports: transport.NewCachedFileTokenSource (with the reset on 401 of transport.ResettableTokenSource)
    """

    def __init__(self, path: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._header: str | None = None
        self._read_at = 0.0

    def __repr__(self) -> str:
        return f"TokenFile({self.path!r})"

    async def authorization(self) -> str | None:
        now = self._clock()
        if self._header is None or now - self._read_at >= TOKEN_REREAD_SECONDS:
            text = await asyncio.to_thread(Path(self.path).read_text)
            self._header, self._read_at = f"Bearer {text.strip()}", now
        return self._header

    def invalidate(self, used: str | None, /) -> None:
        if used is not None and used == self._header:
            self._header = None


@dataclass(frozen=True, slots=True)
class ExecCredential:
    """What a plugin printed: a token and/or a client certificate, and when it expires.

    Ports: clientauthentication.ExecCredentialStatus
    """

    token: str | None
    expiration: float | None
    """Wall-clock seconds (epoch) after which the credential is no longer valid; ``None``: never."""
    client_certificate_data: str | None = None
    client_key_data: str | None = None

    def __repr__(self) -> str:
        return f"ExecCredential(token={'***' if self.token else None}, expiration={self.expiration})"


def refresh_margin(lifetime: float) -> float:
    """Seconds before expiry at which a credential living ``lifetime`` seconds is refreshed.

    A fifth of its lifetime, at most 60 s: an hour-long token is replaced a minute early, a
    ten-second test token two seconds early, so requests never carry one that is about to lapse.

    Python only: client-go runs the plugin only once the expiry has passed.
    """
    return min(60.0, max(0.0, lifetime) / 5)


class ExecPlugin:
    """Runs a kubeconfig's exec credential plugin and caches what it prints.

    Args:
        command: the executable (a relative path with a separator resolves against ``base_dir``).
        args: its arguments.
        env: extra environment variables (the kubeconfig's ``env`` list).
        api_version: the ExecCredential apiVersion to ask for and expect.
        cluster: the ``spec.cluster`` to pass (``provideClusterInfo``), or ``None``.
        install_hint: shown when the command is not found.
        base_dir: the kubeconfig's folder.
        clock: wall-clock epoch seconds (expirations are wall-clock times).

    Ports: exec.Authenticator
    """

    def __init__(
        self,
        *,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        api_version: str = "client.authentication.k8s.io/v1",
        cluster: Mapping[str, Any] | None = None,
        install_hint: str = "",
        base_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if os.sep in command and not os.path.isabs(command) and base_dir is not None:
            command = str(base_dir / command)
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.api_version = api_version
        self.cluster = dict(cluster) if cluster is not None else None
        self.install_hint = install_hint
        self._clock = clock
        self._lock = asyncio.Lock()
        self._credential: ExecCredential | None = None
        self._header: str | None = None
        self._refresh_at: float | None = None
        self.runs = 0
        """How many times the plugin ran (Python only: for tests and debugging)."""

    def __repr__(self) -> str:
        return f"ExecPlugin({self.command!r})"

    async def authorization(self) -> str | None:
        async with self._lock:
            if self._credential is None or (self._refresh_at is not None and self._clock() >= self._refresh_at):
                await self.refresh()
            return self._header

    def invalidate(self, used: str | None, /) -> None:
        if used is not None and used == self._header:
            self._credential = None  # the next request runs the plugin; later 401s for `used` are no-ops

    async def refresh(self) -> ExecCredential:
        """Run the plugin now and cache its credential.

        Raises:
            CredentialError: it could not run, failed, timed out or printed no usable credential.
        """
        started = self._clock()
        credential = await self._run()
        self.runs += 1
        self._credential = credential
        self._header = f"Bearer {credential.token}" if credential.token else None
        if credential.expiration is None:
            self._refresh_at = None
        else:
            self._refresh_at = credential.expiration - refresh_margin(credential.expiration - started)
        return credential

    async def _run(self) -> ExecCredential:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = self.cluster
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        try:
            proc = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,  # the plugin's messages go to our stderr, as with client-go
            )
        except FileNotFoundError:
            hint = f": {self.install_hint}" if self.install_hint else ""
            raise CredentialError(f"exec credential plugin {self.command!r} not found{hint}") from None
        except OSError as err:
            raise CredentialError(f"exec credential plugin {self.command!r} cannot run: {err.strerror}") from None
        try:
            async with asyncio.timeout(EXEC_TIMEOUT):
                out, _ = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise CredentialError(f"exec credential plugin {self.command!r} timed out after {EXEC_TIMEOUT} s") from None
        if proc.returncode != 0:
            raise CredentialError(f"exec credential plugin {self.command!r} exited with status {proc.returncode}")
        return self._parse(out)

    def _parse(self, out: bytes) -> ExecCredential:
        try:
            doc = json.loads(out)
        except ValueError:
            raise CredentialError(f"exec credential plugin {self.command!r} printed no JSON") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise CredentialError(f"exec credential plugin {self.command!r} printed no ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise CredentialError(
                f"exec credential plugin {self.command!r} answered apiVersion {doc.get('apiVersion')!r}, "
                f"not {self.api_version!r}"
            )
        status = doc.get("status")
        if not isinstance(status, dict):
            raise CredentialError(f"exec credential plugin {self.command!r} printed no status")
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData") or None, status.get("clientKeyData") or None
        if not token and not (cert and key):
            raise CredentialError(f"exec credential plugin {self.command!r} printed neither a token nor a certificate")
        expiration = None
        if status.get("expirationTimestamp"):
            try:
                expiration = datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00"))
            except ValueError:
                raise CredentialError(
                    f"exec credential plugin {self.command!r} printed a bad expirationTimestamp"
                ) from None
        return ExecCredential(
            token=str(token) if token else None,
            expiration=expiration.timestamp() if expiration is not None else None,
            client_certificate_data=str(cert) if cert else None,
            client_key_data=str(key) if key else None,
        )
