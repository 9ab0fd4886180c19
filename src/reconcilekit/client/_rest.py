"""HTTP to the API server: one aiohttp session, TLS and auth from a `RestConfig`, raw JSON bytes.

kubernetes_asyncio's generated models decode slowly, so none are used: requests and answers are
bytes, decoded with orjson by the caller. Every request has a timeout, is counted, and a non-2xx
answer becomes an `APIStatusError` built from the server's Status. aiohttp's errors stop here:
they come out as `TransportError` with the cause chained.

Python only: the counterpart of client-go's rest.RESTClient and its request.go
"""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog

from reconcilekit.client.metrics import RequestCounts, count_request
from reconcilekit.config import RestConfig
from reconcilekit.errors import APIStatusError, TransportError, from_status

__all__ = ["RestTransport", "TokenBucket"]

log = structlog.get_logger(__name__)

_READ_BUFSIZE = 2**21  # etcd's default request limit is 1.5 MiB: one watch line can be that long.
MAX_RETRIES = 10
"""Times a request is repeated when the server answers 429 or 5xx with a Retry-After header (client-go's)."""


class _ServerAskedToWait(Exception):
    def __init__(self, seconds: float, error: APIStatusError) -> None:
        super().__init__(str(error))
        self.seconds = seconds
        self.error = error


def _load_cert_from_memory(ctx: ssl.SSLContext, cert: bytes, key: bytes | None) -> None:
    # The ssl module loads client certificates from files only: write them to a private
    # temporary folder, load, and remove them at once.
    with tempfile.TemporaryDirectory(prefix="reconcilekit-") as folder:
        cert_path = os.path.join(folder, "client.crt")
        key_path = os.path.join(folder, "client.key") if key else None
        for path, data in ((cert_path, cert), (key_path, key)):
            if path is not None and data is not None:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
        ctx.load_cert_chain(cert_path, keyfile=key_path)


def _ssl_context(config: RestConfig) -> ssl.SSLContext | bool:
    if not config.host.startswith("https://"):
        return False
    if config.ca_data:
        ctx = ssl.create_default_context(cadata=config.ca_data)
    else:
        ctx = ssl.create_default_context(cafile=config.ca_file)
    if config.cert_data:
        _load_cert_from_memory(ctx, config.cert_data, config.key_data)
    elif config.cert_file:
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


class TokenBucket:
    """Allows ``qps`` requests per second on average and ``burst`` at once; waiters queue fairly.

    Ports: flowcontrol.NewTokenBucketRateLimiter (client-go)
    """

    def __init__(self, qps: float, burst: int) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._last = time.monotonic()

    async def wait(self) -> None:
        """Take one token, sleeping (cancellably) until it is due."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0  # reserve first: concurrent waiters get successive slots
        if self._tokens < 0:
            await asyncio.sleep(-self._tokens / self.qps)


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
        self._watch_session: aiohttp.ClientSession | None = None
        self._closed = False
        self._buckets: dict[str, TokenBucket] = {}
        self._warned: set[str] = set()

    async def _throttle(self, resource: str) -> None:
        # One bucket per resource, as controller-runtime builds one REST client (and limiter) per GVK.
        if self.config.qps <= 0:
            return
        key = resource.partition("/")[0]
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.config.qps, self.config.burst)
        await bucket.wait()

    def _new_session(self, connector: aiohttp.TCPConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            read_bufsize=_READ_BUFSIZE,
            headers={"User-Agent": self.config.user_agent, "Accept": "application/json"},
        )

    def _get_session(self, *, watch: bool = False) -> aiohttp.ClientSession:
        """The pooled session for requests, or the one for watches.

        Watches get their own connections, one each, never pooled: a long-lived watch does
        not take one of the 100 pooled connections from requests, and a watch re-opened
        after its connection went silent does not pick up a pooled connection that went
        silent with it (after a network partition each would cost one more read-idle
        deadline).
        """
        if self._closed:
            raise RuntimeError("the client is closed")
        if watch:
            if self._watch_session is None:
                self._watch_session = self._new_session(aiohttp.TCPConnector(ssl=self._ssl, limit=0, force_close=True))
            return self._watch_session
        if self._session is None:
            self._session = self._new_session(aiohttp.TCPConnector(ssl=self._ssl, limit=100))
        return self._session

    async def close(self) -> None:
        """Close the sessions; later requests raise RuntimeError."""
        self._closed = True
        for session in (self._session, self._watch_session):
            if session is not None:
                await session.close()
        self._session = self._watch_session = None

    def _count(self, method: str, verb: str, resource: str, code: int | str) -> None:
        self.counts.add(verb, resource, code)
        count_request(code, method, self._host)

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        auth = await self.config.authorization()
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def _refreshed_after_401(self, used: str | None) -> bool:
        """Tell the credentials their header got 401; True if the next one differs (worth one more try)."""
        self.config.invalidate_authorization(used)
        return (await self.config.authorization()) != used

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
        watch: bool = False,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Send the request and yield the 2xx answer; other answers raise.

        A 401 refreshes the credentials (a token file is re-read, an exec plugin runs again);
        if that changed them, the request is sent once more with the new ones. Safe for
        writes: the server authenticates before it looks at anything else, so a 401 means
        nothing was applied.

        Differs: client-go returns the 401 and uses the refreshed credential from the next
        request on; here the request that met the rotation succeeds too.
        """
        session = self._get_session(watch=watch)
        await self._throttle(resource)
        url = self.config.host + path
        kwargs: dict[str, Any] = {}
        if self.config.tls_server_name:
            kwargs["server_hostname"] = self.config.tls_server_name
        if self.config.proxy:
            kwargs["proxy"] = self.config.proxy
        for attempt in (1, 2):
            headers = await self._headers(content_type)
            try:
                async with session.request(
                    method, url, params=list(query), data=body, headers=headers, timeout=limits, **kwargs
                ) as resp:
                    self._count(method, verb, resource, resp.status)
                    if resp.status >= 300:
                        raw = await resp.read()
                        if (
                            resp.status == 401
                            and attempt == 1
                            and await self._refreshed_after_401(headers.get("Authorization"))
                        ):
                            log.info("credentials refreshed after 401; sending again", verb=verb, resource=resource)
                            continue
                        wait = _retry_after(resp.headers)
                        error = from_status(resp.status, raw, retry_after=wait)
                        if wait is not None and (resp.status == 429 or resp.status >= 500):
                            raise _ServerAskedToWait(wait, error)
                        raise error
                    for warning in resp.headers.getall("Warning", []):
                        if warning not in self._warned:  # each distinct warning once, as CR's deduplicating handler
                            self._warned.add(warning)
                            log.warning("api server warning", warning=warning, verb=verb, resource=resource)
                    yield resp
                    return
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

        A 429 or 5xx answer with a ``Retry-After`` header is retried after that many seconds, up to
        `MAX_RETRIES` times, as client-go does; each attempt is counted. A 401 is sent once more
        when refreshing the credentials changed them.

        Raises:
            APIStatusError: the server answered with a status of 300 or more.
            TransportError: no answer (connection failed, or the timeout passed).
            reconcilekit.credentials.CredentialError: the exec credential plugin failed.
        """
        limits = aiohttp.ClientTimeout(total=seconds if seconds is not None else self.timeout)
        for attempt in range(MAX_RETRIES + 1):
            try:
                async with self._open(
                    method,
                    path,
                    verb=verb,
                    resource=resource,
                    query=query,
                    body=body,
                    content_type=content_type,
                    limits=limits,
                ) as resp:
                    try:
                        return await resp.read()
                    except (aiohttp.ClientError, TimeoutError) as err:
                        raise TransportError(f"{method} {path}: reading the answer failed: {err!r}") from err
            except _ServerAskedToWait as wait:
                if attempt == MAX_RETRIES:
                    raise wait.error from None
                log.debug("server asked to wait", seconds=wait.seconds, code=wait.error.code, verb=verb)
                await asyncio.sleep(max(0.0, wait.seconds))
        raise AssertionError("unreachable")  # pragma: no cover

    async def stream_lines(
        self,
        path: str,
        *,
        verb: str,
        resource: str,
        query: Sequence[tuple[str, str]],
        seconds: float | None,
        idle: float | None = None,
    ) -> AsyncIterator[bytes]:
        """GET ``path`` and yield the answer line by line (a watch stream), until the server ends it.

        Args:
            seconds: time for the whole stream (the server's ``timeoutSeconds`` plus a margin);
                ``None`` bounds only connecting, by the client's timeout, and lets the stream
                wait for events as long as the server keeps it open.
            idle: seconds without a byte before the stream fails (``sock_read``); also bounds
                connecting. ``None``: no read deadline.

        Raises:
            APIStatusError: the server refused the watch.
            TransportError: the connection failed or broke.
        """
        connect = self.timeout if idle is None else min(self.timeout, idle)
        limits = aiohttp.ClientTimeout(total=seconds, sock_connect=connect, connect=connect, sock_read=idle)
        try:
            async with self._open(
                "GET",
                path,
                verb=verb,
                resource=resource,
                query=query,
                body=None,
                content_type=None,
                limits=limits,
                watch=True,
            ) as resp:
                try:
                    async for line in resp.content:
                        if line.strip():
                            yield line
                except (aiohttp.ClientError, TimeoutError) as err:
                    raise TransportError(f"watch {path} broke: {err!r}") from err
        except _ServerAskedToWait as wait:  # the caller's backoff decides when to watch again
            raise wait.error from None
