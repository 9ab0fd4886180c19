"""`SubResourceRestClient`: reads and writes one subresource ("status", "scale", ...) of objects.

Ports: sigs.k8s.io/controller-runtime/pkg/client (client.go subResourceClient)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconcilekit._internal import json as _json
from reconcilekit.client.interfaces import Object, Patch

if TYPE_CHECKING:
    from reconcilekit.client.client import RestClient

__all__ = ["SubResourceRestClient"]


class SubResourceRestClient:
    """Reads and writes one subresource of objects through a `RestClient`.

    Ports: client.subResourceClient
    """

    def __init__(self, client: RestClient, name: str) -> None:
        self._client = client
        self.name = name
        """The subresource, e.g. ``status``."""

    async def get(self, obj: Object, /) -> Object:
        """GET the subresource of ``obj`` (a Scale for "scale", the whole object for "status")."""
        _, path, resource = await self._client._object_path(obj, self.name)
        raw = await self._client._transport.request("GET", path, verb="get", resource=resource)
        out: Object = _json.loads(raw)
        return out

    async def create(self, obj: Object, body: Object, /, *, dry_run: bool | None = None) -> Object:
        """POST ``body`` to the subresource of ``obj`` (e.g. an Eviction); returns the answer."""
        _, path, resource = await self._client._object_path(obj, self.name)
        raw = await self._client._transport.request(
            "POST",
            path,
            verb="create",
            resource=resource,
            query=self._client._write_query(dry_run, None),
            body=_json.dumps(body),
            content_type="application/json",
        )
        out: Object = _json.loads(raw)
        return out

    async def update(self, obj: Object, /, *, dry_run: bool | None = None, field_owner: str | None = None) -> Object:
        """PUT ``obj`` to its subresource; written back into ``obj`` and returned.

        For "status", the server keeps only the status part of the change.
        """
        return await self._client._put(obj, self.name, dry_run, field_owner)

    async def patch(
        self,
        obj: Object,
        patch: Patch,
        /,
        *,
        dry_run: bool | None = None,
        field_owner: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """PATCH the subresource of ``obj`` with ``patch``; written back into ``obj`` and returned.

        Raises:
            ConflictError: an optimistic-lock patch built from a stale read.
        """
        return await self._client._patch(obj, patch, self.name, dry_run, field_owner, force)
