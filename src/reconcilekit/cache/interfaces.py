"""The cache's roles as Protocols: informers, their event handlers, and the cached reader.

Event handlers are called synchronously, in order, on the event loop, with the cached
objects themselves: a handler must never mutate them (copy first). A deletion noticed
only at relist arrives as a `DeletedFinalStateUnknown` tombstone.

Ports: k8s.io/client-go/tools/cache (ResourceEventHandler, SharedIndexInformer,
DeletedFinalStateUnknown) and sigs.k8s.io/controller-runtime/pkg/cache (cache.go)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from reconcilekit.client.interfaces import GroupVersionKind, Object, Reader

__all__ = [
    "Cache",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "Informer",
    "Informers",
    "ResourceEventHandler",
    "ResourceEventHandlerRegistration",
]

IndexFunc = Callable[[Object], Sequence[str]]
"""Maps an object to the values it is indexed under (e.g. its owner's name)."""


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A deletion found by a relist: the watch missed the DELETED event.

    Attributes:
        key: ``"<namespace>/<name>"`` or ``"<name>"``.
        obj: the last state the cache knew, possibly stale; ``None`` if unknown.

    Ports: cache.DeletedFinalStateUnknown
    """

    key: str
    obj: Object | None


class ResourceEventHandler(Protocol):
    """**Protocol:** receives an informer's notifications, in order, one at a time.

    Ports: cache.ResourceEventHandler
    """

    def on_add(self, obj: Object, is_in_initial_list: bool, /) -> None: ...

    def on_update(self, old: Object, new: Object, /) -> None: ...

    def on_delete(self, obj: Object | DeletedFinalStateUnknown, /) -> None: ...


class ResourceEventHandlerRegistration(Protocol):
    """A handler's registration with an informer. Ports: cache.ResourceEventHandlerRegistration"""

    def has_synced(self) -> bool:
        """True once the informer synced and this handler processed every initial add."""
        ...


class Informer(Protocol):
    """One shared informer: a list+watch of one kind feeding a store and its handlers.

    Ports: controller-runtime cache.Informer over client-go SharedIndexInformer
    """

    def add_event_handler(
        self, handler: ResourceEventHandler, /, *, resync_period: float | None = None
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``; if already started, it first gets an add for every cached object.

        Args:
            resync_period: seconds between replays of every cached object as an update;
                ``None`` means the informer's default.
        """
        ...

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration, /) -> None:
        """Stop notifying the handler behind ``registration``."""
        ...

    def add_indexers(self, indexers: dict[str, IndexFunc], /) -> None:
        """Add named indexes; existing items are back-filled.

        Raises:
            ValueError: an index of that name exists already.
        """
        ...

    def has_synced(self) -> bool:
        """True once the first list has been applied and delivered."""
        ...


class Informers(Protocol):
    """Creates and runs informers on demand. Ports: cache.Informers"""

    async def get_informer(self, gvk: GroupVersionKind, /) -> Informer:
        """The shared informer of ``gvk``, created (and started, if the cache runs) on first use.

        Raises:
            NoKindMatchError: discovery knows no such kind.
        """
        ...

    async def index_field(self, gvk: GroupVersionKind, field: str, extract: IndexFunc, /) -> None:
        """Index ``gvk`` objects by ``field`` so cached lists can select on it.

        Ports: cache.Informers.IndexField (client.FieldIndexer)
        """
        ...

    async def wait_for_cache_sync(self) -> bool:
        """Wait until every started informer synced; False if the cache stopped first."""
        ...

    async def start(self) -> None:
        """Run every informer (and any created later) until cancelled. Ports: cache.Informers.Start"""
        ...


class Cache(Reader, Informers, Protocol):
    """A reader served from informers, plus the informers. Ports: cache.Cache"""
