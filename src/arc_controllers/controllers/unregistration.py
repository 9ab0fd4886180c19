"""The runner unregistration queue: removes finished runners' registrations off the reconcile path.

In memory and best effort: a restart loses the queue, and the Actions service garbage
collects registrations of runners that stop reporting, so a lost item only delays the
cleanup. Pushes never block and never fail.

Ports: controllers/actions.github.com/runner_unregistration.go (@199de249, with the claim set of #4664)
"""

from __future__ import annotations

import asyncio
import copy
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from arc_controllers.controllers.actions_seam import ActionsClientFactory, is_job_still_running, is_runner_not_found
from reconcilekit.client.interfaces import Object

__all__ = ["MIN_WORKERS", "RETRY_DELAY", "RunnerUnregistrationQueue"]

log = structlog.get_logger(__name__)

MIN_WORKERS = 4
"""Fewer workers than this are raised to it. Ports: minUnregistrationWorkers"""

RETRY_DELAY = 30.0
"""Seconds before asking again for a runner that is still running a job."""

_IDLE_WAIT = 30.0

_Claim = tuple[str, str, int]


@dataclass(slots=True)
class _Item:
    """Python only: one queued unregistration: a copy of the runner and its registration ID."""

    runner: Object
    runner_id: int

    @property
    def claim(self) -> _Claim:
        """Python only: the de-duplication key (namespace, name, runner ID)."""
        meta = self.runner["metadata"]
        return (meta.get("namespace", ""), meta["name"], self.runner_id)


class RunnerUnregistrationQueue:
    """Workers that call ``RemoveRunner`` for queued runners. A manager runnable.

    Ports: RunnerUnregistrationQueue
    """

    def __init__(
        self,
        *,
        actions: ActionsClientFactory,
        workers: int = MIN_WORKERS,
        retry_delay: float = RETRY_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Python only: see the class docstring."""
        self._actions = actions
        self._workers = max(workers, MIN_WORKERS)
        self._retry_delay = retry_delay
        self._clock = clock
        self._ready: deque[_Item] = deque()
        self._delayed: list[tuple[float, int, _Item]] = []
        self._seq = itertools.count()
        self._claims: set[_Claim] = set()
        self._wake = asyncio.Event()

    def push(self, runner: Object, runner_id: int) -> None:
        """Queue ``runner``'s registration ``runner_id`` for removal; a duplicate of a claimed one is dropped.

        A deep copy of the runner is kept: its credentials are looked up after the
        object is gone.

        Ports: RunnerUnregistrationQueue.Push
        """
        item = _Item(copy.deepcopy(runner), runner_id)
        if item.claim in self._claims:
            log.debug("unregistration already queued", runner=item.claim[1], runner_id=runner_id)
            return
        self._claims.add(item.claim)
        self._ready.append(item)
        self._wake.set()

    def __len__(self) -> int:
        """Python only: items claimed (queued, delayed or in flight)."""
        return len(self._claims)

    def need_leader_election(self) -> bool:
        """Python only: runs only on the leader, like the controllers that push to it."""
        return True

    async def start(self) -> None:
        """Run the workers until cancelled; the queue is dropped then. Ports: RunnerUnregistrationQueue.Start"""
        async with asyncio.TaskGroup() as group:
            for n in range(self._workers):
                group.create_task(self._work(), name=f"runner-unregistration-{n}")

    def _promote(self) -> None:
        """Python only: move delayed items whose time has come to the ready queue."""
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            self._ready.append(heapq.heappop(self._delayed)[2])

    async def _next(self) -> _Item:
        """Python only: the oldest ready item; waits for a push or the earliest delayed item (≤ 30 s)."""
        while True:
            self._promote()
            if self._ready:
                return self._ready.popleft()
            wait = _IDLE_WAIT
            if self._delayed:
                wait = min(wait, max(self._delayed[0][0] - self._clock(), 0.0))
            self._wake.clear()
            try:
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _work(self) -> None:
        """Ports: RunnerUnregistrationQueue.worker"""
        while True:
            item = await self._next()
            requeued = False
            try:
                requeued = await self._unregister(item)
            finally:
                if not requeued:
                    self._claims.discard(item.claim)

    async def _unregister(self, item: _Item) -> bool:
        """Remove one registration; True when it was re-queued (job still running).

        Ports: RunnerUnregistrationQueue.unregister
        """
        name = item.runner["metadata"]["name"]
        try:
            client = await self._actions(item.runner)
        except Exception as err:
            log.warning("cannot build the Actions client, dropping unregistration", runner=name, error=str(err))
            return False
        try:
            await client.remove_runner(item.runner_id)
        except Exception as err:
            if is_runner_not_found(err):
                log.info("runner registration already gone", runner=name, runner_id=item.runner_id)
                return False
            if is_job_still_running(err):
                due = self._clock() + self._retry_delay
                heapq.heappush(self._delayed, (due, next(self._seq), item))
                self._wake.set()
                log.info("runner still running a job, retrying later", runner=name, runner_id=item.runner_id)
                return True
            log.warning("failed to remove runner, dropping", runner=name, runner_id=item.runner_id, error=str(err))
            return False
        log.info("removed runner registration", runner=name, runner_id=item.runner_id)
        return False
