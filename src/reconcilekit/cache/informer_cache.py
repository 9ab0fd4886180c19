"""The informer cache: lazily created shared informers per kind, and reads served from them.

One informer per (kind, namespace) when namespaces are configured, else one per kind.
Informers asked for before `InformerCache.start` start with it; later ones start at once.
Reads block until their informer synced (or the caller gives up: wrap the call in
``asyncio.timeout``).

Copies: every read returns a deep copy (orjson round trip or a JSON-only rebuild, 4–6× cheaper
than ``copy.deepcopy``). With ``unsafe_disable_deep_copy`` (the *no-copy mode*, per kind or
for the whole cache) reads return the cached objects themselves: the caller must never
change them, or the cache is corrupted; copy (``reconcilekit.cache.deep_copy``) before a
mutation. Handlers always receive the cached objects themselves.

Ports: sigs.k8s.io/controller-runtime/pkg/cache (informer_cache.go, multi_namespace_cache.go,
internal/informers.go)
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from reconcilekit.cache._internal.indexer import NAMESPACE_INDEX, meta_namespace_index
from reconcilekit.cache._internal.reflector import Reflector
from reconcilekit.cache._internal.shared_informer import Registration, SharedIndexInformer
from reconcilekit.cache.interfaces import IndexFunc, ResourceEventHandler
from reconcilekit.cache.options import Options, ResolvedOptions, resolve
from reconcilekit.cache.reader import field_index_func, field_index_name, get_object, list_objects
from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, ObjectList, WithWatch
from reconcilekit.errors import ReconcileKitError

__all__ = [
    "CacheNotStartedError",
    "InformerCache",
    "InformerStaleError",
    "ReflectorStats",
    "ResourceNotCachedError",
    "UnknownNamespaceError",
    "new_cache",
]

log = structlog.get_logger(__name__)

SYNC_POLL = 0.1
"""Seconds between checks in `InformerCache.wait_for_cache_sync`. Ports: syncedPollPeriod"""


class CacheNotStartedError(ReconcileKitError):
    """A read before the cache was started. Ports: cache.ErrCacheNotStarted"""

    def __init__(self) -> None:
        super().__init__("the cache is not started, can not read objects")


class ResourceNotCachedError(ReconcileKitError):
    """A read of a kind with no informer while ``reader_fail_on_missing_informer`` is set.

    Ports: cache.ErrResourceNotCached
    """


class UnknownNamespaceError(ReconcileKitError):
    """A read in a namespace this cache does not watch. Ports: multiNamespaceCache.Get's error"""


class InformerStaleError(ReconcileKitError):
    """Raised by the staleness check: some informers heard nothing from the server for too long.

    Attributes:
        stale: informer name → seconds since its last list, event or bookmark.
        threshold: the seconds allowed.

    Python only (issue 16).
    """

    def __init__(self, stale: Mapping[str, float], threshold: float) -> None:
        self.stale = dict(stale)
        self.threshold = threshold
        ages = ", ".join(f"{name} {age:.0f} s" for name, age in sorted(self.stale.items()))
        super().__init__(f"informers silent for more than {threshold:.0f} s: {ages}")


@dataclass(slots=True)
class _Entry:
    """One kind's informers (one per namespace) and what they were built from."""

    gvk: GroupVersionKind
    options: ResolvedOptions
    informers: dict[str, SharedIndexInformer]
    reflectors: dict[str, Reflector]
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    field_indexes: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class ReflectorStats:
    """Counters of one reflector. Python only."""

    lists: int
    """Complete LISTs (one per relist, however many pages)."""
    watches: int
    """Watches opened."""
    expired: int
    """Watches that ended with 410 Gone/Expired."""
    forbidden: int = 0
    """List-and-watch cycles refused with 401/403 (each logged at error level)."""
    silent: int = 0
    """Watches dropped because they received nothing for ``watch_read_idle_timeout`` seconds."""


class _KindInformer:
    """One `Informer` over a kind's per-namespace informers (handlers fan out to all).

    Ports: multi_namespace_cache.go multiNamespaceInformer
    """

    def __init__(self, informers: Sequence[SharedIndexInformer]) -> None:
        self._informers = list(informers)

    def add_event_handler(self, handler: ResourceEventHandler, /, *, resync_period: float | None = None) -> Any:
        if len(self._informers) == 1:
            return self._informers[0].add_event_handler(handler, resync_period=resync_period)
        return _MultiRegistration([i.add_event_handler(handler, resync_period=resync_period) for i in self._informers])

    def remove_event_handler(self, registration: Any, /) -> None:
        regs = registration.parts if isinstance(registration, _MultiRegistration) else [registration]
        for informer in self._informers:
            for reg in regs:
                informer.remove_event_handler(reg)

    def add_indexers(self, indexers: dict[str, IndexFunc], /) -> None:
        for informer in self._informers:
            informer.add_indexers(indexers)

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers)

    def is_stopped(self) -> bool:
        return all(i.is_stopped() for i in self._informers)

    def seconds_since_last_event(self) -> float:
        """The longest time any of its informers went without a list, event or bookmark. Python only"""
        return max(i.seconds_since_last_event() for i in self._informers)

    @property
    def informers(self) -> list[SharedIndexInformer]:
        """The per-namespace informers (one for a cluster-wide cache)."""
        return list(self._informers)


@dataclass(slots=True)
class _MultiRegistration:
    parts: list[Registration]

    def has_synced(self) -> bool:
        return all(p.has_synced() for p in self.parts)


class InformerCache:
    """The `Cache`: informers created on first use, reads served from their indexers.

    Args:
        client: what informers list and watch through.
        options: see `Options`.

    Ports: cache.informerCache over internal.Informers (and multiNamespaceCache)
    """

    def __init__(self, client: WithWatch, options: Options | None = None) -> None:
        self._client = client
        self._options = options or Options()
        self._entries: dict[GroupVersionKind, _Entry] = {}
        self._started = False
        self._stopped = False

    # -- Informers ---------------------------------------------------------------------

    async def get_informer(self, gvk: GroupVersionKind, /) -> _KindInformer:
        """The shared informer of ``gvk``, created (and started, if running) on first use.

        Ports: informerCache.GetInformerForKind
        """
        return _KindInformer(list(self._entry(gvk).informers.values()))

    async def index_field(self, gvk: GroupVersionKind, field: str, extract: IndexFunc, /) -> None:
        """Add index ``"field:<field>"`` to ``gvk``'s informers (back-filled if running).

        Raises:
            ValueError: ``field`` is already indexed for ``gvk``.

        Ports: informerCache.IndexField
        """
        entry = self._entry(gvk)
        if field in entry.field_indexes:
            raise ValueError(f"indexer conflict: field {field!r} of {gvk} is indexed already")
        fn = field_index_func(extract, cluster_scoped=entry.options.cluster_scoped)
        for informer in entry.informers.values():
            informer.add_indexers({field_index_name(field): fn})
        entry.field_indexes.add(field)

    async def wait_for_cache_sync(self) -> bool:
        """Wait until every informer synced (100 ms polls); False if the cache stopped first.

        Ports: informerCache.WaitForCacheSync
        """
        while True:
            if self._stopped:
                return False
            if all(i.has_synced() for e in list(self._entries.values()) for i in e.informers.values()):
                return True
            await asyncio.sleep(SYNC_POLL)

    async def start(self) -> None:
        """Run every informer (and any created later) until cancelled; then stop them all.

        Ports: Informers.Start
        """
        if self._started:
            raise RuntimeError("the cache was started already")
        self._started = True
        for entry in self._entries.values():
            self._start_entry(entry)
        try:
            await asyncio.Future()  # until cancelled
        finally:
            self._stopped = True
            tasks = [t for e in self._entries.values() for t in e.tasks]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for entry in self._entries.values():
                for informer in entry.informers.values():
                    informer.mark_stopped()

    def get_cache(self) -> InformerCache:
        """Itself: lets the manager put the cache in its *caches* group. Ports: hasCache"""
        return self

    def need_leader_election(self) -> bool:
        """Caches run on every replica, leader or not."""
        return False

    # -- Reader ------------------------------------------------------------------------

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        """The cached object (a deep copy unless the no-copy mode is on).

        Raises:
            NotFoundError: not in the cache; its "resource" is the kind.
            UnknownNamespaceError: the namespace is not one this cache watches.
            CacheNotStartedError: `start` has not run.
            ResourceNotCachedError: no informer and ``reader_fail_on_missing_informer``.

        Ports: informerCache.Get
        """
        entry = await self._entry_for_read(gvk)
        ns = "" if entry.options.cluster_scoped else key.namespace
        informer = entry.informers.get("") if "" in entry.informers else entry.informers.get(ns)
        if informer is None:
            raise UnknownNamespaceError(f"unable to get: {key} because of unknown namespace for the cache")
        await self._wait_synced(entry, gvk, [informer])
        return get_object(
            informer,
            gvk,
            key,
            cluster_scoped=entry.options.cluster_scoped,
            copy=not entry.options.unsafe_disable_deep_copy,
        )

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
        """Cached objects matching every selector; ``fields`` must be indexed exact matches.

        Raises:
            ValueError: a continue token, a non-exact or unindexed field selector.
            UnknownNamespaceError: ``namespace`` is not one this cache watches.

        Ports: informerCache.List
        """
        entry = await self._entry_for_read(gvk)
        if namespace and not entry.options.cluster_scoped and "" not in entry.informers:
            informer = entry.informers.get(namespace)
            if informer is None:
                raise UnknownNamespaceError(f"unable to list: {namespace} is an unknown namespace for the cache")
            informers = [informer]
        elif "" in entry.informers and (not namespace or entry.options.cluster_scoped):
            informers = [entry.informers[""]]
        elif "" in entry.informers and namespace:
            informers = [entry.informers.get(namespace, entry.informers[""])]
        else:
            informers = list(entry.informers.values())
        await self._wait_synced(entry, gvk, informers)
        return list_objects(
            informers,
            gvk,
            namespace=None if entry.options.cluster_scoped else namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=continue_token,
            copy=not entry.options.unsafe_disable_deep_copy,
        )

    # -- internals ---------------------------------------------------------------------

    async def _entry_for_read(self, gvk: GroupVersionKind) -> _Entry:
        if not self._started or self._stopped:
            raise CacheNotStartedError()
        entry = self._entries.get(gvk)
        if entry is None:
            if self._options.reader_fail_on_missing_informer:
                raise ResourceNotCachedError(f"{gvk} is not cached")
            entry = self._entry(gvk)
        return entry

    async def _wait_synced(
        self, entry: _Entry, gvk: GroupVersionKind, informers: Sequence[SharedIndexInformer]
    ) -> None:
        for informer in informers:
            if not informer.has_synced():
                await informer.synced_event.wait()

    def _entry(self, gvk: GroupVersionKind) -> _Entry:
        entry = self._entries.get(gvk)
        if entry is not None:
            return entry
        opts = self._options
        resolved = resolve(opts, gvk)
        informers: dict[str, SharedIndexInformer] = {}
        reflectors: dict[str, Reflector] = {}
        specific = [ns for ns in resolved.namespaces if ns]
        for ns in resolved.namespaces:
            resync = resolved.sync_period * random.uniform(0.9, 1.1) if resolved.sync_period > 0 else 0.0
            informer = SharedIndexInformer(
                name=f"{gvk}@{ns or '*'}",
                indexers={NAMESPACE_INDEX: meta_namespace_index},
                resync_period=resync,
                transform=resolved.transform,
            )
            fields = resolved.fields
            if not ns and specific:  # the all-namespaces informer must not cache objects twice
                extra = ",".join(f"metadata.namespace!={s}" for s in specific)
                fields = extra if not fields else f"{_fields_text(fields)},{extra}"
            informers[ns] = informer
            reflectors[ns] = Reflector(
                client=self._client,
                gvk=gvk,
                store=informer,
                namespace=ns or None,
                labels=resolved.labels,
                fields=fields,
                page_size=opts.page_size,
                min_watch_timeout=opts.min_watch_timeout,
                read_idle_timeout=opts.watch_read_idle_timeout,
                backoff=opts.backoff,
                allow_watch_bookmarks=resolved.enable_watch_bookmarks,
                freeze_listed_objects=opts.freeze_listed_objects,
            )
        entry = _Entry(gvk, resolved, informers, reflectors)
        self._entries[gvk] = entry
        if self._started and not self._stopped:
            self._start_entry(entry)
        return entry

    def _start_entry(self, entry: _Entry) -> None:
        for ns, reflector in entry.reflectors.items():
            informer = entry.informers[ns]
            name = f"informer-{entry.gvk.kind}-{ns or 'all'}"
            entry.tasks.append(asyncio.create_task(reflector.run(), name=f"{name}-reflector"))
            entry.tasks.append(asyncio.create_task(informer.run_resync(), name=f"{name}-resync"))

    def staleness(self) -> dict[str, float]:
        """Informer name → monotonic seconds since its last list, watch event or bookmark.

        Only informers that have started are listed. Python only (issue 16).
        """
        return {
            informer.name: informer.seconds_since_last_event()
            for entry in self._entries.values()
            for informer in entry.informers.values()
            if informer.started and not informer.is_stopped()
        }

    def staleness_checker(self, *, threshold: float | None = None) -> Callable[[], Awaitable[None]]:
        """A health check (`reconcilekit.healthz.Checker`) that fails while an informer is stale.

        An informer is stale when it heard nothing from the server (no list, event or
        bookmark) for more than ``threshold`` seconds; by default twice the cache's
        ``watch_read_idle_timeout`` (240 s): a half-open watch is dropped after one deadline
        and re-opened, so two in a row without a byte mean the server cannot be reached.
        Add it to the manager as a readiness check, not a liveness one::

            manager.add_readyz_check("informers", manager.get_cache().staleness_checker())

        A stale informer means the API server cannot be reached, which a restart does not fix:
        as a healthz check it would restart every replica at once during an API-server outage.

        Servers that send no bookmarks (kube-apiserver with ``--watch-cache=false``) leave
        an idle informer silent too; give such a cache a larger ``threshold``.

        Raises:
            ValueError: no ``threshold`` and the cache has no read-idle deadline.

        Python only (issue 16).
        """
        if threshold is None:
            idle = self._options.watch_read_idle_timeout
            if idle is None:
                raise ValueError("the cache has no watch_read_idle_timeout: pass a staleness threshold")
            threshold = 2 * idle
        if threshold <= 0:
            raise ValueError("the staleness threshold must be positive seconds")
        limit = threshold

        async def informers_fresh() -> None:
            stale = {name: age for name, age in self.staleness().items() if age > limit}
            if stale:
                raise InformerStaleError(stale, limit)

        return informers_fresh

    def informer_stats(self, gvk: GroupVersionKind) -> dict[str, ReflectorStats]:
        """Per namespace ("" for all): what ``gvk``'s reflectors did. Python only: tests and debugging."""
        entry = self._entries.get(gvk)
        if entry is None:
            return {}
        return {
            ns: ReflectorStats(r.lists, r.watches, r.expired, r.forbidden, r.silent)
            for ns, r in entry.reflectors.items()
        }


def _fields_text(fields: Mapping[str, str] | str) -> str:
    return fields if isinstance(fields, str) else ",".join(f"{k}={v}" for k, v in sorted(fields.items()))


def new_cache(client: WithWatch, options: Options | None = None) -> InformerCache:
    """A new, unstarted informer cache over ``client``. Ports: cache.New"""
    return InformerCache(client, options)
