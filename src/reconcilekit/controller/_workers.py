"""Worker slots, and `yield_worker`: a reconcile that gives its worker back while it waits on slow I/O.

A controller runs at most ``max_concurrent_reconciles`` reconciles at once: its workers. A
reconcile that waits a network round trip on a third-party service (not on the API server)
holds its worker idle all that time. Inside ``async with yield_worker():`` it does not: the
worker is handed to a substitute that takes the next request, and when the block ends the
reconcile waits for a free worker to carry on. The request stays in flight all along, so one
key is still never reconciled twice at once, and the reconcile's code stays one sequential
function (its error handling, requeues and ordering unchanged).

At most ``max_yielded_reconciles`` reconciles wait inside `yield_worker` at once; beyond that
(and always with the default of 0, or outside a controller) `yield_worker` keeps the worker
and is a no-op. So a controller has at most ``max_concurrent_reconciles`` reconciles outside
the block and ``max_yielded_reconciles`` inside it. A reconcile coming back from the block
goes before new requests: finishing work that is in flight comes first. Under leader election
it goes on only while the leader fence holds (a worker hands out nothing once it fails).

Python only: controller-runtime's workers are goroutines blocked in the reconcile; Go has no
twin of a worker released during an await.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from types import TracebackType

from reconcilekit._internal.fence import fence_holds

__all__ = ["WorkerLease", "WorkerSlots", "yield_worker"]


class WorkerSlots:
    """Counts a controller's reconciles that hold a worker and those inside `yield_worker`.

    Every wait is a fast path when nothing waits; the slow path waits on one condition.
    """

    def __init__(
        self,
        *,
        workers: int,
        max_yielded: int,
        start_substitute: Callable[[], bool],
        on_hold: Callable[[int], None] = lambda delta: None,
    ) -> None:
        """``start_substitute`` starts one more worker loop (False: it could not); ``on_hold`` sees +1/-1."""
        self._workers = workers
        self._max_yielded = max_yielded
        self._start_substitute = start_substitute
        self._on_hold = on_hold
        self._running = 0
        self._yielded = 0
        self._resuming = 0
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def running(self) -> int:
        """Reconciles holding a worker now."""
        return self._running

    @property
    def yielded(self) -> int:
        """Reconciles inside `yield_worker` now, including those waiting to get a worker back."""
        return self._yielded + self._resuming

    def _room_for_new(self) -> bool:
        return self._running < self._workers and self._resuming == 0

    async def wait_for_room(self) -> None:
        """Return once a new request could start (no worker busy beyond the limit, none coming back)."""
        await self._wait_until(self._room_for_new)

    async def take(self) -> WorkerLease:
        """Take a worker for a new request (waiting as `wait_for_room` does)."""
        await self.wait_for_room()
        self._hold(+1)
        return WorkerLease(self)

    def give_back(self, lease: WorkerLease) -> None:
        """The request's reconcile ended: give its worker back, if it holds one."""
        if lease.holds:
            lease.holds = False
            self._hold(-1)
            self._notify()

    def try_yield(self, lease: WorkerLease) -> bool:
        """Give the worker to a substitute for the time of a `yield_worker` block; False keeps it."""
        if not lease.holds or self._yielded + self._resuming >= self._max_yielded:
            return False
        if not self._start_substitute():
            return False
        lease.holds = False
        lease.handed_over = True
        self._yielded += 1
        self._hold(-1)
        self._notify()
        return True

    async def resume(self, lease: WorkerLease) -> None:
        """End a `yield_worker` block: wait for a free worker (before any new request) and take it.

        Raises:
            RuntimeError: the leader fence failed meanwhile; the reconcile goes no further
                (its request is requeued as after any error; a new leader picks it up).
        """
        self._yielded -= 1
        self._resuming += 1
        try:
            await self._wait_until(lambda: self._running < self._workers)
        finally:
            self._resuming -= 1
        lease.holds = True
        self._hold(+1)
        self._notify()
        if not fence_holds():  # as a worker hands out nothing more once the fence failed
            raise RuntimeError("the leader fence failed while the reconcile waited without a worker; it stops here")

    def abandon(self, lease: WorkerLease) -> None:
        """End a `yield_worker` block that is being cancelled: no worker is taken back."""
        self._yielded -= 1
        self._notify()

    def _hold(self, delta: int) -> None:
        self._running += delta
        self._on_hold(delta)

    async def _wait_until(self, ready: Callable[[], bool]) -> None:
        """Return once ``ready()`` holds, checked now and after every change (no await when it holds)."""
        while not ready():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _notify(self) -> None:
        """Wake every waiter to check its condition again."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class WorkerLease:
    """One request's hold on a worker while its reconcile runs."""

    __slots__ = ("handed_over", "holds", "slots")

    def __init__(self, slots: WorkerSlots) -> None:
        self.slots = slots
        self.holds = True
        """The reconcile holds a worker now (False inside a yielded block)."""
        self.handed_over = False
        """The worker this request started on went to a substitute: that worker loop retires after it."""


LEASE: contextvars.ContextVar[WorkerLease | None] = contextvars.ContextVar("reconcilekit_worker_lease", default=None)
"""The worker lease of the reconcile running in this context, set by the controller around each reconcile."""


def yield_worker() -> contextlib.AbstractAsyncContextManager[None]:
    """Within ``async with yield_worker():`` the reconcile does not hold its controller's worker.

    Use it around an await on slow I/O that needs no worker, such as a third-party
    service's round trip, from the reconcile's own task. The controller's option
    ``max_yielded_reconciles`` bounds how many reconciles are inside such a block at once;
    beyond it, with the option at 0 (the default), or outside a controller (a reconciler
    called directly, as in unit tests) the block keeps the worker and changes nothing.

    The request stays in flight: the same key is not handed out meanwhile. At the end of the
    block (normally or by an exception) the reconcile waits for a free worker before it goes
    on; a cancelled block takes none.

    Example::

        async with yield_worker():
            config = await actions.generate_jit_runner_config(...)
        await client.create(secret_from(config))  # a worker again
    """
    return _YieldedBlock()


class _YieldedBlock:
    """The block `yield_worker` returns."""

    __slots__ = ("_lease",)

    def __init__(self) -> None:
        self._lease: WorkerLease | None = None

    async def __aenter__(self) -> None:
        lease = LEASE.get()
        if lease is not None and lease.slots.try_yield(lease):
            self._lease = lease

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is None:
            return
        if exc is not None and not isinstance(exc, Exception):
            lease.slots.abandon(lease)
            return
        await lease.slots.resume(lease)
