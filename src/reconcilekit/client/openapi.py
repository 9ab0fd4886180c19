"""The OpenAPI v3 documents an API server publishes, one per group-version.

``/openapi/v3`` lists the group-versions and the URL of each one's document (with a
content hash, so a cache may keep it); the document holds ``components.schemas``, the
schema of every kind served there, CRDs included (a CRD's structural schema, as the
server prunes and validates with it). Reading them needs no RBAC rule: every
authenticated identity may (``system:discovery``).

    async with new_openapi_v3_client(config) as openapi:
        paths = await openapi.paths()                      # {"apis/apps/v1": "/openapi/v3/apis/apps/v1?hash=…", …}
        doc = await openapi.schema("apis/actions.github.com/v1alpha1")

Ports: k8s.io/client-go/openapi (Client.Paths, GroupVersion.Schema), reached through
discovery.DiscoveryClient.OpenAPIV3
"""

from __future__ import annotations

from typing import Any, Self
from urllib.parse import parse_qsl

from reconcilekit._internal import json as _json
from reconcilekit.client._rest import RestTransport
from reconcilekit.client.metrics import RequestCounts
from reconcilekit.config import RestConfig
from reconcilekit.errors import NotFoundError

__all__ = ["OPENAPI_V3_ROOT", "OpenAPIV3Client", "new_openapi_v3_client"]

OPENAPI_V3_ROOT = "/openapi/v3"
"""The index of group-version documents."""


class OpenAPIV3Client:
    """Reads ``/openapi/v3`` and the documents it lists.

    Ports: openapi.Client
    """

    def __init__(self, transport: RestTransport, *, owns_transport: bool = True) -> None:
        self._transport = transport
        self._owns_transport = owns_transport

    async def paths(self) -> dict[str, str]:
        """Group-version path (``api/v1``, ``apis/<group>/<version>``) -> server-relative URL of its document.

        Raises:
            APIStatusError: the server answered with an error (404: it publishes no OpenAPI v3).
            TransportError: no answer.

        Ports: openapi.Client.Paths
        """
        raw = await self._transport.request("GET", OPENAPI_V3_ROOT, verb="get", resource="openapi")
        index = _json.loads(raw)
        out: dict[str, str] = {}
        for path, entry in (index.get("paths") or {}).items():
            url = entry.get("serverRelativeURL") if isinstance(entry, dict) else None
            if isinstance(url, str) and url:
                out[path] = url
        return out

    async def schema(self, group_version_path: str) -> dict[str, Any]:
        """The OpenAPI v3 document of one group-version, as JSON.

        Args:
            group_version_path: a key of `paths`, e.g. ``apis/actions.github.com/v1alpha1``.

        Raises:
            NotFoundError: the server publishes no document for it (the group-version is not served).
            APIStatusError, TransportError: as `paths`.

        Ports: openapi.GroupVersion.Schema (JSON)
        """
        url = (await self.paths()).get(group_version_path.strip("/"))
        if url is None:
            message = f"the API server publishes no OpenAPI v3 document for {group_version_path}"
            raise NotFoundError(404, "NotFound", message)
        path, _, query = url.partition("?")
        raw = await self._transport.request("GET", path, verb="get", resource="openapi", query=parse_qsl(query))
        doc: dict[str, Any] = _json.loads(raw)
        return doc

    async def close(self) -> None:
        """Close the HTTP session if this client opened it."""
        if self._owns_transport:
            await self._transport.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def new_openapi_v3_client(config: RestConfig, *, timeout: float = 30.0) -> OpenAPIV3Client:
    """A client for the OpenAPI v3 documents of the server in ``config`` (its own HTTP session).

    Args:
        config: where the server is and how to authenticate.
        timeout: seconds each request may take (a group-version's document can be a few MiB).

    Raises:
        ValueError: a non-positive timeout.
        OSError, ssl.SSLError: the TLS files in ``config`` cannot be read.

    Ports: discovery.NewDiscoveryClientForConfig(...).OpenAPIV3()
    """
    return OpenAPIV3Client(RestTransport(config, timeout=timeout, counts=RequestCounts()))
