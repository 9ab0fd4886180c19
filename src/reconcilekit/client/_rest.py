"""HTTP to the API server: one aiohttp session, TLS and auth from a `RestConfig`, raw JSON bytes.

kubernetes_asyncio's generated models decode slowly, so none are used: requests and answers are
bytes, decoded with orjson by the caller. Every request has a timeout, is counted, and a non-2xx
answer becomes an `APIStatusError` built from the server's Status. aiohttp's errors stop here:
they come out as `TransportError` with the cause chained.

Python only: the counterpart of client-go's rest.RESTClient and its request.go
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog

from reconcilekit.client.metrics import REQUESTS_TOTAL, RequestCounts
from reconcilekit.config import RestConfig
from reconcilekit.errors import TransportError, from_status

__all__ = ["RestTransport"]

log = structlog.get_logger(__name__)

_READ_BUFSIZE = 2**21  # etcd's default request limit is 1.5 MiB: one watch line can be that long.


def _ssl_context(config: RestConfig) -> ssl.SSLContext | bool:
    if not config.host.startswith("https://"):
        return False
    ctx = ssl.create_default_context(cafile=config.ca_file)
    if config.cert_file:
        ctx.load_cert_chain(config.cert_file, keyfile=config.key_file)
    if not config.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("Retry-After")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


class RestTransport:
    """Sends requests to one API server and counts them.

    Python only: owns the aiohttp session (created on first use, inside the running loop).
    """

    def __init__(self, config: RestConfig, *, timeout: float, counts: RequestCounts) -> None:
        if timeout <= 0:
            raise ValueError("the request timeout must be positive seconds")
        self.config = config
        self.timeout = timeout
        self.counts = counts
        self._ssl = _ssl_context(config)
        self._host = urlsplit(config.host).netloc
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("the client is closed")
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl, limit=100),
                read_bufsize=_READ_BUFSIZE,
                headers={"User-Agent": self.config.user_agent, "Accept": "application/json"},
            )
        return self._session

    async def close(self) -> None:
        """Close the session; later requests raise RuntimeError."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _count(self, method: str, verb: str, resource: str, code: int | str) -> None:
        self.counts.add(verb, resource, code)
        REQUESTS_TOTAL.labels(code=str(code), method=method, host=self._host).inc()

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        auth = await self.config.authorization()
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    @asynccontextmanager
    async def _open(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        query: Sequence[tuple[str, str]],
        body: bytes | None,
        content_type: str | None,
        limits: aiohttp.ClientTimeout,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        session = self._get_session()
        headers = await self._headers(content_type)
        url = self.config.host + path
        kwargs: dict[str, Any] = {}
        if self.config.tls_server_name:
            kwargs["server_hostname"] = self.config.tls_server_name
        try:
            async with session.request(
                method, url, params=list(query), data=body, headers=headers, timeout=limits, **kwargs
            ) as resp:
                self._count(method, verb, resource, resp.status)
                if resp.status >= 300:
                    raw = await resp.read()
                    raise from_status(resp.status, raw, retry_after=_retry_after(resp.headers))
                for warning in resp.headers.getall("Warning", []):
                    log.warning("api server warning", warning=warning, verb=verb, resource=resource)
                yield resp
        except (aiohttp.ClientError, TimeoutError) as err:
            if not isinstance(err, aiohttp.ClientResponseError):
                self._count(method, verb, resource, "<error>")
            kind = "timed out" if isinstance(err, TimeoutError) else "failed"
            raise TransportError(f"{method} {path} {kind}: {err!r}") from err

    async def request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        content_type: str | None = None,
        seconds: float | None = None,
    ) -> bytes:
        """Send one request and return the answer's body.

        Args:
            method: HTTP method.
            path: URL path from the server's root, e.g. ``/api/v1/namespaces/ns/pods/p``.
            verb: the Kubernetes verb counted for it (``get``, ``patch``, ...).
            resource: the resource counted for it (``pods/status``).
            query: query parameters in order.
            body: the request body, sent as is.
            content_type: the body's Content-Type (always explicit for writes).
            seconds: time for the whole request; ``None`` means the client's timeout.

        Raises:
            APIStatusError: the server answered with a status of 300 or more.
            TransportError: no answer (connection failed, or the timeout passed).
        """
        limits = aiohttp.ClientTimeout(total=seconds if seconds is not None else self.timeout)
        async with self._open(
            method, path, verb=verb, resource=resource, query=query, body=body, content_type=content_type, limits=limits
        ) as resp:
            try:
                return await resp.read()
            except (aiohttp.ClientError, TimeoutError) as err:
                raise TransportError(f"{method} {path}: reading the answer failed: {err!r}") from err

    async def stream_lines(
        self,
        path: str,
        *,
        verb: str,
        resource: str,
        query: Sequence[tuple[str, str]],
        seconds: float | None,
    ) -> AsyncIterator[bytes]:
        """GET ``path`` and yield the answer line by line (a watch stream), until the server ends it.

        Args:
            seconds: time for the whole stream (the server's ``timeoutSeconds`` plus a margin);
                ``None`` bounds only connecting, by the client's timeout, and lets the stream
                wait for events as long as the server keeps it open.

        Raises:
            APIStatusError: the server refused the watch.
            TransportError: the connection failed or broke.
        """
        limits = aiohttp.ClientTimeout(total=seconds, sock_connect=self.timeout, connect=self.timeout)
        async with self._open(
            "GET", path, verb=verb, resource=resource, query=query, body=None, content_type=None, limits=limits
        ) as resp:
            try:
                async for line in resp.content:
                    if line.strip():
                        yield line
            except (aiohttp.ClientError, TimeoutError) as err:
                raise TransportError(f"watch {path} broke: {err!r}") from err
