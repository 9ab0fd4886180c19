"""The client a manager hands out: reads from the informer cache, writes to the API server.

Kinds listed in ``uncached`` are read from the server too (Secrets read once, kinds you
cannot list and watch cluster-wide). The uncached API reader sits beside it
(`Manager.get_api_reader`).

Ports: sigs.k8s.io/controller-runtime/pkg/client (client.go New with CacheOptions:
delegatingReader)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from reconcilekit.client.interfaces import (
    Client,
    GroupVersionKind,
    Object,
    ObjectKey,
    ObjectList,
    Patch,
    Reader,
    SubResourceClient,
)

__all__ = ["DelegatingClient", "new_delegating_client"]


class DelegatingClient:
    """A `Client` whose reads go to ``cache`` and whose writes go to ``client``.

    Args:
        cache: the cached reader (the informer cache).
        client: the direct client (writes, subresources, uncached reads).
        uncached: kinds always read from the server.

    Ports: client.New(config, Options{Cache: &CacheOptions{Reader, DisableFor}})
    """

    def __init__(self, *, cache: Reader, client: Client, uncached: Iterable[GroupVersionKind] = ()) -> None:
        self._cache = cache
        self._client = client
        self._uncached = frozenset(uncached)

    def _reader(self, gvk: GroupVersionKind) -> Reader:
        return self._client if gvk in self._uncached else self._cache

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        """Read from the cache (a deep copy), or from the server for uncached kinds."""
        return await self._reader(gvk).get(gvk, key)

    async def list(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ObjectList:
        """List from the cache, or from the server for uncached kinds."""
        return await self._reader(gvk).list(
            gvk, namespace=namespace, labels=labels, fields=fields, limit=limit, continue_token=continue_token
        )

    async def create(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        return await self._client.create(obj, dry_run=dry_run, field_owner=field_owner)

    async def update(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        return await self._client.update(obj, dry_run=dry_run, field_owner=field_owner)

    async def patch(
        self,
        obj: Object,
        patch: Patch,
        /,
        *,
        dry_run: bool = False,
        field_owner: str | None = None,
        force: bool | None = None,
    ) -> Object:
        return await self._client.patch(obj, patch, dry_run=dry_run, field_owner=field_owner, force=force)

    async def delete(
        self,
        obj: Object,
        /,
        *,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Object | None:
        return await self._client.delete(
            obj,
            dry_run=dry_run,
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
        )

    async def delete_all_of(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
    ) -> None:
        await self._client.delete_all_of(
            gvk,
            namespace=namespace,
            labels=labels,
            fields=fields,
            dry_run=dry_run,
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
        )

    def status(self) -> SubResourceClient:
        return self._client.status()

    def sub_resource(self, name: str, /) -> SubResourceClient:
        return self._client.sub_resource(name)


def new_delegating_client(
    *, cache: Reader, client: Client, uncached: Iterable[GroupVersionKind] = ()
) -> DelegatingClient:
    """Cached reads, direct writes. Ports: client.New with CacheOptions"""
    return DelegatingClient(cache=cache, client=client, uncached=uncached)
