"""The real `Transport`: aiohttp, with a fixed proxy rule and an optional extra root CA.

Python only: the aiohttp side of the `Transport` seam. The session and the
TLS context are made on first use, inside the running loop; loading the
system trust store runs in a worker thread so the loop never blocks. Without
an extra root CA no context of our own is made: aiohttp's verified default
(system roots, built when aiohttp is imported) is the same trust, and a second
copy of the system store costs ≈ 0.8 MiB per process (issue 20: listener RSS).
"""

from __future__ import annotations

import asyncio
import base64
import ssl

import aiohttp
from yarl import URL

from arc_controllers.actions.proxy import ProxyConfig
from arc_controllers.actions.transport import HttpRequest, HttpResponse, TransportError

__all__ = ["AiohttpTransport"]


class AiohttpTransport:
    """Sends requests with one owned `aiohttp.ClientSession`.

    Python only: see the module docstring.
    """

    def __init__(self, *, proxy: ProxyConfig | None = None, root_ca: str = "") -> None:
        """Keep the settings; nothing is opened yet.

        Args:
            proxy: Proxy rule; ``None`` connects directly. The caller reads
                the environment (once) with `ProxyConfig.from_environment`.
            root_ca: PEM certificates trusted besides the system roots; ``""``
                for the system roots only. Checked by the caller.
        """
        self._proxy = proxy
        self._root_ca = root_ca
        self._session: aiohttp.ClientSession | None = None
        self._ssl: ssl.SSLContext | None = None
        self._lock = asyncio.Lock()

    async def _open(self) -> aiohttp.ClientSession:
        """Python only: lazily build the TLS context and the session."""
        async with self._lock:
            if self._session is None:
                if self._root_ca:
                    self._ssl = await asyncio.to_thread(_ssl_context, self._root_ca)
                self._session = aiohttp.ClientSession(trust_env=False, auto_decompress=True)
            return self._session

    async def send(self, request: HttpRequest, /) -> HttpResponse:
        """Send ``request`` once and read the whole answer.

        Raises:
            TransportError: no answer; not retryable for TLS verification
                failures, invalid URLs and redirect loops.

        Python only: see the module docstring.
        """
        session = await self._open()
        proxy = self._proxy.proxy_for(request.url) if self._proxy else None
        proxy_url, proxy_headers = _split_proxy(proxy)
        headers = dict(request.headers)
        if proxy_headers and request.url.startswith("http://"):
            headers.update(proxy_headers)  # a plain-HTTP proxy sees the request itself, not a CONNECT
        try:
            async with session.request(
                request.method,
                URL(request.url, encoded=True),
                headers=headers,
                data=request.body,
                proxy=proxy_url,
                proxy_headers=proxy_headers,
                ssl=self._ssl if self._ssl is not None else True,  # True: aiohttp's default, the system roots
                timeout=aiohttp.ClientTimeout(total=request.timeout),
            ) as answer:
                body = await answer.read()
                return HttpResponse(
                    status=answer.status,
                    reason=answer.reason or "",
                    headers=dict(answer.headers.items()),
                    body=body,
                )
        except (aiohttp.ClientConnectorCertificateError, aiohttp.InvalidURL, aiohttp.TooManyRedirects) as err:
            raise TransportError(_describe(err), retryable=False) from err
        except aiohttp.ClientSSLError as err:
            retryable = not isinstance(getattr(err, "os_error", None), ssl.SSLCertVerificationError)
            raise TransportError(_describe(err), retryable=retryable) from err
        except (aiohttp.ClientError, TimeoutError) as err:
            raise TransportError(_describe(err)) from err

    async def aclose(self) -> None:
        """Close the session and its connections.

        Python only: see the module docstring.
        """
        if self._session is not None:
            await self._session.close()
            self._session = None


def _ssl_context(root_ca: str) -> ssl.SSLContext:
    """Python only: system roots plus ``root_ca``."""
    context = ssl.create_default_context()
    if root_ca:
        context.load_verify_locations(cadata=root_ca)
    return context


def _split_proxy(proxy: str | None) -> tuple[URL | None, dict[str, str] | None]:
    """Python only: aiohttp wants proxy credentials apart from the URL, as a Proxy-Authorization header."""
    if proxy is None:
        return None, None
    url = URL(proxy)
    if url.user is None:
        return url, None
    basic = base64.b64encode(f"{url.user}:{url.password or ''}".encode()).decode()
    return url.with_user(None), {"Proxy-Authorization": f"Basic {basic}"}


def _describe(err: BaseException) -> str:
    """Python only: a short text for a transport failure, without URLs' credentials."""
    if isinstance(err, TimeoutError):
        return "timeout awaiting response"
    return f"{type(err).__name__}: {err}"
