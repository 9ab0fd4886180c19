"""The harness's own HTTP calls to kube-apiserver and etcd, on aiohttp.

The harness must not depend on the project's client (it tests that client), so
its few calls (readiness, namespaces, CRDs, discovery) go through this small
JSON session. Error answers become `reconcilekit.errors` exceptions through
`from_status`, like every other API error in the project.

Python only: upstream envtest uses client-go for these calls.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiohttp

from reconcilekit.envtest._kubeconfig import ClusterAccess
from reconcilekit.errors import from_status

__all__ = ["ApiSession", "HarnessConnectionError", "http_ok", "ssl_context"]


class HarnessConnectionError(ConnectionError):
    """The API server could not be reached (refused, reset, timed out).

    Python only: aiohttp's errors stop here, chained as ``__cause__``.
    """


def ssl_context(access: ClusterAccess) -> ssl.SSLContext:
    """Build the TLS context for ``access``: its CA (or the system's) and its client certificate.

    Python's ``ssl`` loads client certificates only from files, so in-memory
    PEM is written to a private temporary folder and removed at once.

    Python only
    """
    ctx = ssl.create_default_context(cadata=access.ca_pem.decode() if access.ca_pem else None)
    if access.insecure_skip_tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if access.client_cert_pem and access.client_key_pem:
        with tempfile.TemporaryDirectory(prefix="envtest-tls-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(access.client_cert_pem)
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(access.client_key_pem)
            ctx.load_cert_chain(cert, key)
    return ctx


async def http_ok(url: str, *, request_seconds: float = 1.0) -> bool:
    """Return whether a plain GET of ``url`` answers 200 within ``request_seconds``.

    Used for etcd's ``/health``, which answers ``{"health":"true"}`` once it serves.

    Ports: process.HealthCheck (the plain-HTTP case)
    """
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=request_seconds)) as session,
            session.get(url) as resp,
        ):
            await resp.read()
            return resp.status == 200
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False


class ApiSession:
    """A JSON session to one API server as one user; use it with ``async with``.

    Args:
        access: The server and credentials.
        request_timeout: Seconds for one request, connect to last byte.

    Python only
    """

    def __init__(self, access: ClusterAccess, *, request_timeout: float = 10.0) -> None:
        self._access = access
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Create the underlying aiohttp session; prefer ``async with``.

        Every request uses a fresh connection, so a restarted API server never
        meets a stale pooled one. The TLS context is built in a thread (it
        reads and writes key files).

        Python only
        """
        if self._session is not None:
            return
        headers = {"Accept": "application/json", "User-Agent": "reconcilekit-envtest"}
        if self._access.token:
            headers["Authorization"] = f"Bearer {self._access.token}"
        context = await asyncio.to_thread(ssl_context, self._access)
        connector = aiohttp.TCPConnector(ssl=context, force_close=True)
        self._session = aiohttp.ClientSession(
            base_url=self._access.server, connector=connector, timeout=self._timeout, headers=headers
        )

    async def close(self) -> None:
        """Close the underlying session; safe to call twice.

        Python only
        """
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("ApiSession used outside `async with`")
        return self._session

    def _request_kwargs(self) -> dict[str, Any]:
        if self._access.tls_server_name:
            return {"server_hostname": self._access.tls_server_name}
        return {}

    async def status_of(self, path: str) -> int | None:
        """GET ``path`` and return the HTTP status, or ``None`` when the server cannot be reached.

        For readiness polls, which expect refusals while the server starts.

        Python only
        """
        try:
            async with self._client().get(path, **self._request_kwargs()) as resp:
                await resp.read()
                return resp.status
        except (aiohttp.ClientError, TimeoutError, OSError):
            return None

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the decoded JSON answer.

        Args:
            method: HTTP method, e.g. ``"GET"``.
            path: Absolute path, e.g. ``/api/v1/namespaces``.
            body: JSON body, or ``None``.
            params: Query parameters.

        Raises:
            APIStatusError: the server answered 4xx or 5xx (its most specific subclass).
            HarnessConnectionError: the server could not be reached or timed out.

        Python only
        """
        try:
            async with self._client().request(method, path, json=body, params=params, **self._request_kwargs()) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise from_status(resp.status, raw)
                if not raw:
                    return {}
                decoded = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            raise HarnessConnectionError(f"{method} {self._access.server}{path} failed: {err!r}") from err
        return decoded if isinstance(decoded, dict) else {"items": decoded}
