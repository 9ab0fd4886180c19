"""The one-method seam between the Actions client and HTTP.

`HttpRequest` and `HttpResponse` are plain values; a `Transport` sends one
request and returns the whole answer (body read, a UTF-8 byte order mark
stripped). Retries, tokens and error mapping sit above the seam, so unit
tests that plug in a `MockTransport` exercise all of them without sockets.

Python only: the seam that httpx calls ``transport=``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Protocol

__all__ = ["HttpRequest", "HttpResponse", "MockTransport", "Transport", "TransportError"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """One HTTP request, fully built.

    Python only: the request value of the `Transport` seam.
    """

    method: str
    """``GET``, ``POST``, ``PATCH`` or ``DELETE``."""

    url: str
    """Absolute URL with its query string."""

    headers: Mapping[str, str] = field(default_factory=dict)
    """Request headers; ``Authorization`` never appears in the repr."""

    body: bytes | None = None
    """Request body, sent again unchanged on every retry."""

    timeout: float = 300.0
    """Seconds the whole attempt may take."""

    def header(self, name: str) -> str:
        """Return the header ``name`` (any case), ``""`` when absent.

        Python only: case-insensitive lookup over a plain mapping.
        """
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), "")

    def __repr__(self) -> str:
        names = sorted(self.headers)
        return f"HttpRequest(method={self.method!r}, url={self.url!r}, header_names={names!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpResponse:
    """One whole HTTP answer.

    Python only: the response value of the `Transport` seam.
    """

    status: int
    """HTTP status code."""

    headers: Mapping[str, str] = field(default_factory=dict)
    """Response headers."""

    body: bytes = b""
    """The whole body, without a leading UTF-8 byte order mark."""

    reason: str = ""
    """Reason phrase; the standard one for ``status`` when empty."""

    def __post_init__(self) -> None:
        if self.body.startswith(_BOM):
            object.__setattr__(self, "body", self.body[len(_BOM) :])

    @property
    def status_line(self) -> str:
        """Go's ``resp.Status``, e.g. ``"404 Not Found"``.

        Python only: a helper of the port.
        """
        reason = self.reason
        if not reason:
            try:
                reason = HTTPStatus(self.status).phrase
            except ValueError:
                reason = ""
        return f"{self.status} {reason}".rstrip()

    def header(self, name: str) -> str:
        """Return the header ``name`` (any case), ``""`` when absent.

        Python only: case-insensitive lookup over a plain mapping.
        """
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), "")

    def __repr__(self) -> str:
        return f"HttpResponse(status={self.status}, body_bytes={len(self.body)})"


class TransportError(Exception):
    """No answer was received: connection refused or dropped, timeout, TLS failure.

    Python only: what a `Transport` raises instead of its library's errors.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable
        """False for failures a retry cannot fix: TLS certificate verification,
        an invalid URL scheme or header, too many redirects."""


class Transport(Protocol):
    """Sends one HTTP request and returns the whole response.

    Python only: the seam between the Actions client and aiohttp, so unit tests
    need no sockets.
    """

    async def send(self, request: HttpRequest, /) -> HttpResponse:
        """Send ``request`` once, within ``request.timeout`` seconds.

        Raises:
            TransportError: no answer arrived.

        Python only: a helper of the port.
        """
        ...


class MockTransport:
    """A `Transport` whose answers come from ``handler``.

    Python only: the test double for `Transport`.
    """

    def __init__(self, handler: Callable[[HttpRequest], Awaitable[HttpResponse]]) -> None:
        self._handler = handler
        self.requests: list[HttpRequest] = []
        """Every request sent, in order."""

    async def send(self, request: HttpRequest, /) -> HttpResponse:
        """Record ``request`` and return the handler's answer.

        Python only: see the class docstring.
        """
        self.requests.append(request)
        return await self._handler(request)
