"""The shared informer: applies the reflector's changes to an indexer, then tells the handlers.

Delivery is synchronous and in order: each change is applied to the indexer and then
handed to every handler, one call at a time, before the next change is looked at. This is
client-go's RealFIFO in its atomic mode with the listener buffers collapsed: on a single
event loop the buffers bought nothing but memory. A relist is applied as one atomic
``replace``: the indexer is swapped first, then each object missing from the new list is
delivered as a `DeletedFinalStateUnknown` tombstone, then each listed object as an add or
an update, in list order.

An update whose old and new objects carry the same ``resourceVersion`` (a resync replay, or
an unchanged object seen again by a relist) goes only to handlers that are due for resync.

Ports: k8s.io/client-go/tools/cache (shared_informer.go, the_real_fifo.go, controller.go)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from reconcilekit.cache._internal.indexer import Indexer, object_key
from reconcilekit.cache.interfaces import DeletedFinalStateUnknown, IndexFunc, ResourceEventHandler
from reconcilekit.client.interfaces import Object

__all__ = ["MIN_RESYNC_PERIOD", "Registration", "SharedIndexInformer", "Transform", "strip_managed_fields"]

log = structlog.get_logger(__name__)

MIN_RESYNC_PERIOD = 1.0
"""Seconds: shortest resync a handler may ask for. Ports: minimumResyncPeriod"""

Transform = Callable[[Object], Object]
"""Changes an incoming object before it is cached (may change it in place and return it)."""


def strip_managed_fields(obj: Object) -> Object:
    """Drop ``metadata.managedFields`` (often half an object's bytes). Ports: cache.TransformStripManagedFields"""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _rv(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Registration:
    """One handler's registration: its resync schedule and whether it is due.

    Ports: shared_informer.go processorListener (without its buffer) and
    ResourceEventHandlerRegistration
    """

    __slots__ = ("_informer", "handler", "next_resync", "resync_period", "syncing")

    def __init__(self, informer: SharedIndexInformer, handler: ResourceEventHandler, resync_period: float) -> None:
        self._informer = informer
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = time.monotonic() + resync_period if resync_period > 0 else float("inf")
        self.syncing = False

    def has_synced(self) -> bool:
        """True once the informer synced (delivery is synchronous, so every initial add is done)."""
        return self._informer.has_synced()


class SharedIndexInformer:
    """One kind's cached objects, the handlers that watch them, and their resync timer.

    The reflector drives it through `replace`, `add`, `update`, `delete` and `bookmark`.

    Ports: cache.SharedIndexInformer
    """

    def __init__(
        self,
        *,
        name: str,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float = 0.0,
        transform: Transform | None = strip_managed_fields,
    ) -> None:
        self.name = name
        self.indexer = Indexer(indexers)
        self.transform = transform
        self._default_resync = resync_period
        self._check_period = resync_period
        self._registrations: list[Registration] = []
        self._synced = False
        self._started = False
        self._stopped = False
        self._last_rv = ""
        self._last_event_at = time.monotonic()
        self._resync_wakeup = asyncio.Event()
        self.synced_event = asyncio.Event()
        """Set once the first list has been applied and delivered (Python only: saves polling)."""

    # -- the Informer role -------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, /, *, resync_period: float | None = None
    ) -> Registration:
        """Register ``handler``; if started, it first gets an add for every cached object.

        Ports: sharedIndexInformer.AddEventHandlerWithResyncPeriod
        """
        period = self._default_resync if resync_period is None else resync_period
        if 0 < period < MIN_RESYNC_PERIOD:
            period = MIN_RESYNC_PERIOD
        if period > 0:
            if not self._started and (self._check_period <= 0 or period < self._check_period):
                self._check_period = period
            elif self._started and period < self._check_period:
                period = self._check_period
        reg = Registration(self, handler, period)
        self._registrations.append(reg)
        if self._started:
            for obj in list(self.indexer.values()):
                self._call(reg, "on_add", obj, True)
        self._resync_wakeup.set()
        return reg

    def remove_event_handler(self, registration: Any, /) -> None:
        """Stop notifying the handler behind ``registration``. Ports: RemoveEventHandler"""
        if registration in self._registrations:
            self._registrations.remove(registration)

    def add_indexers(self, indexers: dict[str, IndexFunc], /) -> None:
        """Add named indexes; existing items are back-filled. Ports: AddIndexers"""
        self.indexer.add_indexers(indexers)

    def has_synced(self) -> bool:
        """True once the first list has been applied and delivered. Ports: HasSynced"""
        return self._synced

    def is_stopped(self) -> bool:
        """True once the informer has stopped running. Ports: IsStopped"""
        return self._stopped

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list, event or bookmark applied. Ports: LastSyncResourceVersion"""
        return self._last_rv

    def seconds_since_last_event(self) -> float:
        """Monotonic seconds since the last list, watch event or bookmark (or the start, before any).

        A healthy watch with bookmarks hears from the server about every 60 s even when
        nothing changes; much longer means the informer is stuck (a half-open connection, an
        API server it cannot reach). Python only (issue 16).
        """
        return time.monotonic() - self._last_event_at

    # -- the store the reflector writes to ----------------------------------------------

    def replace(self, items: Sequence[Object], resource_version: str) -> None:
        """Apply a complete list atomically: swap the indexer, then deliver deletions and changes.

        ``items`` must already be transformed (the reflector does it page by page).

        Ports: RealFIFO.Replace in atomic mode and its processing (ReplacedAll)
        """
        old_items = self.indexer.snapshot()
        new_items: dict[str, Object] = {}
        for obj in items:
            new_items[object_key(obj)] = obj
        self.indexer.replace(new_items)
        self._last_rv = resource_version
        self._last_event_at = time.monotonic()
        initial = not self._synced
        for key, gone in old_items.items():
            if key not in new_items:
                self._distribute("on_delete", DeletedFinalStateUnknown(key, gone))
        for key, obj in new_items.items():
            previous = old_items.get(key)
            if previous is None:
                self._distribute("on_add", obj, initial)
            else:
                self._distribute_update(previous, obj)
        self._mark_synced()

    def add(self, obj: Object) -> None:
        """A watch ADDED. Ports: RealFIFO.Add and its processing"""
        self.upsert(obj)

    def update(self, obj: Object) -> None:
        """A watch MODIFIED. Ports: RealFIFO.Update and its processing"""
        self.upsert(obj)

    def upsert(self, obj: Object) -> None:
        """Add or update ``obj`` (already transformed) and notify. Ports: processDeltas (Added/Updated)"""
        key = object_key(obj)
        old = self.indexer.put(key, obj)
        self._last_rv = _rv(obj) or self._last_rv
        self._last_event_at = time.monotonic()
        self._mark_synced()
        if old is None:
            self._distribute("on_add", obj, False)
        else:
            self._distribute_update(old, obj)

    def delete(self, obj: Object) -> None:
        """A watch DELETED with the object's final state. Ports: processDeltas (Deleted)"""
        key = object_key(obj)
        self.indexer.delete(key)
        self._last_rv = _rv(obj) or self._last_rv
        self._last_event_at = time.monotonic()
        self._mark_synced()
        self._distribute("on_delete", obj)

    def bookmark(self, resource_version: str) -> None:
        """A watch BOOKMARK: only the resourceVersion moves. Ports: RealFIFO.Bookmark"""
        self._last_rv = resource_version
        self._last_event_at = time.monotonic()

    def resync(self) -> None:
        """Replay every cached object as ``on_update(obj, obj)`` to the handlers due for resync.

        Ports: RealFIFO.Resync (SyncAll) and sharedProcessor.shouldResync
        """
        now = time.monotonic()
        due = False
        for reg in self._registrations:
            if reg.resync_period > 0 and now >= reg.next_resync:
                reg.syncing = True
                reg.next_resync = now + reg.resync_period
                due = True
        if not due:
            return
        try:
            for obj in list(self.indexer.values()):
                for reg in [r for r in self._registrations if r.syncing]:
                    self._call(reg, "on_update", obj, obj)
        finally:
            for reg in self._registrations:
                reg.syncing = False

    def _mark_synced(self) -> None:
        if not self._synced:
            self._synced = True
            self.synced_event.set()

    # -- running -----------------------------------------------------------------------

    def mark_started(self) -> None:
        """Called when the reflector starts: later handlers get the cached objects replayed."""
        self._started = True
        self._last_event_at = time.monotonic()

    @property
    def started(self) -> bool:
        """True once its reflector started."""
        return self._started

    def mark_stopped(self) -> None:
        """Called when the informer's task ends."""
        self._stopped = True

    async def run_resync(self) -> None:
        """Fire `resync` every check period until cancelled (idle while no handler wants it).

        Ports: reflector.go startResync
        """
        while True:
            period = self._check_period
            if period <= 0:
                self._resync_wakeup.clear()
                await self._resync_wakeup.wait()
                continue
            await asyncio.sleep(period)
            self.resync()

    # -- delivery ----------------------------------------------------------------------

    def _distribute_update(self, old: Object, new: Object) -> None:
        if _rv(old) == _rv(new) and _rv(new):
            for reg in list(self._registrations):
                if reg.syncing:
                    self._call(reg, "on_update", old, new)
            return
        self._distribute("on_update", old, new)

    def _distribute(self, method: str, *args: Any) -> None:
        for reg in list(self._registrations):
            self._call(reg, method, *args)

    def _call(self, reg: Registration, method: str, *args: Any) -> None:
        try:
            getattr(reg.handler, method)(*args)
        except Exception:  # a failing handler loses this notification, not the informer
            log.exception("event handler failed", informer=self.name, method=method)
