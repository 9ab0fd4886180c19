"""The Kind source: events of one kind from the manager's shared informer cache.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/source/kind.go
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from reconcilekit.cache.interfaces import Informer, Informers, ResourceEventHandlerRegistration
from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.errors import NoKindMatchError
from reconcilekit.handler.eventhandler import EventHandler, RequestQueue
from reconcilekit.predicate import Predicate
from reconcilekit.source._event_handler import EventHandlerAdapter
from reconcilekit.workqueue.clock import Clock, RealClock

_log = structlog.get_logger(__name__)

GET_INFORMER_RETRY_PERIOD = 10.0
"""Seconds between two attempts to get the informer (the kind's CRD may not be installed yet)."""

SYNC_POLL_PERIOD = 0.1
"""Seconds between two checks of the handler registration's sync. Ports: WaitForCacheSync's 100 ms poll"""


class Kind:
    """Delivers the events of one kind from a shared informer, filtered, to one handler.

    Ports: internal/source.Kind
    """

    def __init__(
        self,
        cache: Informers,
        gvk: GroupVersionKind,
        handler: EventHandler,
        predicates: Sequence[Predicate] = (),
        *,
        clock: Clock | None = None,
    ) -> None:
        self.gvk = gvk
        """The kind watched."""
        self.last_error: Exception | None = None
        """Python only: why the last attempt to get the informer failed, if it did."""
        self._cache = cache
        self._handler = handler
        self._predicates = tuple(predicates)
        self._clock: Clock = clock or RealClock()
        self._registration: ResourceEventHandlerRegistration | None = None
        self._registered = asyncio.Event()
        self._started = False

    def __str__(self) -> str:
        return f"kind source: {self.gvk}"

    async def start(self, queue: RequestQueue, /) -> None:
        """Get the informer, register the handler, and deliver events until cancelled.

        Getting the informer is retried every 10 s whatever the error (a kind
        whose CRD is not installed yet raises `NoKindMatchError`); the caller
        bounds the wait (the controller's ``cache_sync_timeout``). On
        cancellation the handler is removed from the informer.

        Raises:
            RuntimeError: the source was started before.

        Differs: upstream's Start returns at once and leaves a goroutine
        running; here start runs until cancelled, so its caller owns it.

        Ports: Kind.Start
        """
        if self._started:
            raise RuntimeError(f"{self} was started twice")
        self._started = True
        informer = await self._get_informer()
        registration = informer.add_event_handler(EventHandlerAdapter(self._handler, self._predicates, queue))
        self._registration = registration
        self._registered.set()
        try:
            await asyncio.Event().wait()
        finally:
            informer.remove_event_handler(registration)

    async def wait_for_sync(self) -> None:
        """Return once the informer synced and this handler has seen every initial object.

        Bound it with ``asyncio.timeout``: it waits as long as the informer is not there.

        Ports: Kind.WaitForSync
        """
        await self._registered.wait()
        assert self._registration is not None
        while not self._registration.has_synced():
            await self._clock.sleep(SYNC_POLL_PERIOD)

    async def _get_informer(self) -> Informer:
        """Try every 10 s until the cache gives the informer. Ports: the PollUntilContextCancel loop of Kind.Start"""
        while True:
            try:
                informer = await self._cache.get_informer(self.gvk)
            except NoKindMatchError as err:
                self.last_error = err
                _log.error(
                    "if kind is a CRD, it should be installed before calling Start", kind=str(self.gvk), error=str(err)
                )
            except Exception as err:
                self.last_error = err
                _log.error("failed to get informer from cache", kind=str(self.gvk), error=str(err))
            else:
                self.last_error = None
                return informer
            await self._clock.sleep(GET_INFORMER_RETRY_PERIOD)
