"""URL building the way the Go client builds them.

Python only: the helpers behind Client.newActionsServiceRequest and the
message-queue calls, kept apart so their quirks can be tested one by one.
"""

from __future__ import annotations

import posixpath
from urllib.parse import parse_qsl, quote_plus, urlsplit, urlunsplit

__all__ = ["API_VERSION", "actions_service_url", "encode_query", "with_path_suffix", "with_query_value"]

API_VERSION = "6.0-preview"
"""The ``api-version`` every Actions-service call carries."""


def _join_path(base: str, elem: str) -> str:
    """Ports: net/url URL.JoinPath (cleaned, one trailing slash kept when ``elem`` has one)"""
    joined = posixpath.normpath("/" + base.strip("/") + "/" + elem.lstrip("/"))
    if joined.startswith("//"):
        joined = "/" + joined.lstrip("/")
    if elem.endswith("/") and not joined.endswith("/"):
        joined += "/"
    return joined


def encode_query(values: dict[str, list[str]]) -> str:
    """Encode form-style with keys sorted, as Go's ``url.Values.Encode``.

    Python only: see the module docstring.
    """
    return "&".join(f"{quote_plus(key)}={quote_plus(value)}" for key in sorted(values) for value in values[key])


def _values(query: str) -> dict[str, list[str]]:
    """Parse a query string into Go's url.Values shape.

    Python only: a helper of the port.
    """
    out: dict[str, list[str]] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        out.setdefault(key, []).append(value)
    return out


def actions_service_url(base: str, path: str) -> str:
    """Join an Actions-service base URL and a path that may carry a query.

    The path's query values replace the base's per key; ``api-version`` is
    added when absent; the query is re-encoded with sorted keys. Names put
    into ``path`` are not escaped first (as in Go).

    Ports: the URL part of Client.newActionsServiceRequest
    """
    base_parts = urlsplit(base)
    path_parts = urlsplit(path)
    values = _values(base_parts.query)
    values.update(_values(path_parts.query))
    if not values.get("api-version", [""])[0]:
        values["api-version"] = [API_VERSION]
    joined = _join_path(base_parts.path, path_parts.path)
    return urlunsplit((base_parts.scheme, base_parts.netloc, joined, encode_query(values), ""))


def with_query_value(url: str, key: str, value: str) -> str:
    """Set one query value of ``url`` and re-encode its query (sorted keys).

    Python only: Go's ``q.Set`` followed by ``RawQuery = q.Encode()``.
    """
    parts = urlsplit(url)
    values = _values(parts.query)
    values[key] = [value]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, encode_query(values), parts.fragment))


def with_path_suffix(url: str, suffix: str) -> str:
    """Append ``/suffix`` to the path of ``url``, keeping its query.

    Python only: Go's ``u.Path = fmt.Sprintf("%s/%d", u.Path, id)``.
    """
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"{parts.path}/{suffix}", parts.query, parts.fragment))
