"""REST mapping: which resource (URL plural) serves a kind, and whether it is namespaced.

The mapper asks API discovery one group-version at a time (``/api/v1``, ``/apis/<group>/<version>``),
caches the answer, and asks again when a kind is missing from what it cached, so a CRD installed
after start-up is found on first use.

Ports: sigs.k8s.io/controller-runtime/pkg/client/apiutil (restmapper.go: the lazy, refreshing mapper)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from reconcilekit._internal import json as _json
from reconcilekit.client.interfaces import GroupVersionKind, GroupVersionResource
from reconcilekit.errors import NoKindMatchError, NotFoundError

__all__ = ["RESTMapper", "RESTMapping", "group_version_path"]


@dataclass(frozen=True, slots=True)
class RESTMapping:
    """How to reach a kind over REST. Ports: meta.RESTMapping"""

    gvk: GroupVersionKind
    resource: GroupVersionResource
    namespaced: bool
    """``True`` for namespaced kinds (Pod), ``False`` for cluster-scoped ones (Node, Namespace)."""


def group_version_path(group: str, version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


Fetch = Callable[[str], Awaitable[bytes]]
"""Reads one discovery document by path; raises NotFoundError for an unknown group-version."""


class RESTMapper:
    """Maps kinds to resources from discovery, cached per group-version and refreshed on a miss.

    Ports: apiutil.NewDynamicRESTMapper (the lazy mapper of controller-runtime ≥ 0.15)
    """

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._by_gv: dict[tuple[str, str], dict[str, RESTMapping]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def add(self, mapping: RESTMapping) -> None:
        """Record a mapping without asking discovery. Python only: for tests and offline use."""
        self._by_gv.setdefault((mapping.gvk.group, mapping.gvk.version), {})[mapping.gvk.kind] = mapping

    def cached(self, gvk: GroupVersionKind) -> RESTMapping | None:
        """The mapping for ``gvk`` if discovery already answered it, without a request."""
        return self._by_gv.get((gvk.group, gvk.version), {}).get(gvk.kind)

    async def rest_mapping(self, gvk: GroupVersionKind) -> RESTMapping:
        """The mapping for ``gvk``: from the cache, else from a fresh discovery of its group-version.

        Raises:
            NoKindMatchError: discovery does not serve ``gvk`` (unknown group-version or kind).

        Ports: DynamicRESTMapper.RESTMapping
        """
        found = self.cached(gvk)
        if found is not None:
            return found
        key = (gvk.group, gvk.version)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            found = self.cached(gvk)  # another task may have refreshed while this one waited
            if found is None:
                await self._refresh(gvk.group, gvk.version)
                found = self.cached(gvk)
        if found is None:
            raise NoKindMatchError(gvk.group, gvk.version, gvk.kind)
        return found

    async def is_namespaced(self, gvk: GroupVersionKind) -> bool:
        """Whether ``gvk`` is namespaced. Ports: apiutil.IsGVKNamespaced"""
        return (await self.rest_mapping(gvk)).namespaced

    def reset(self) -> None:
        """Forget everything discovered. Ports: meta.ResettableRESTMapper.Reset"""
        self._by_gv.clear()

    async def _refresh(self, group: str, version: str) -> None:
        try:
            raw = await self._fetch(group_version_path(group, version))
        except NotFoundError:
            self._by_gv[(group, version)] = {}
            return
        doc = _json.loads(raw)
        mappings: dict[str, RESTMapping] = {}
        for res in doc.get("resources") or []:
            name = res.get("name", "")
            kind = res.get("kind", "")
            if not name or not kind or "/" in name:  # subresources ("pods/status") map no kind of their own
                continue
            gvk = GroupVersionKind(group, version, kind)
            mappings[kind] = RESTMapping(gvk, GroupVersionResource(group, version, name), bool(res.get("namespaced")))
        self._by_gv[(group, version)] = mappings
