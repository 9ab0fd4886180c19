"""Runnable groups: which group a runnable joins, and running one as an owned task.

Ports: sigs.k8s.io/controller-runtime/pkg/manager/runnable_group.go
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from reconcilekit._internal.fence import LEADER_FENCE
from reconcilekit.manager.interfaces import LeaderElectionRunnable, Runnable

__all__ = ["Group", "RunnableGroup", "classify"]


class Group(Enum):
    """The groups, in start order. Ports: runnables' fields"""

    HTTP_SERVERS = "http-servers"
    CACHES = "caches"
    OTHERS = "others"
    LEADER_ELECTION = "leader-election"


def classify(runnable: Runnable) -> Group:
    """Caches (anything with ``get_cache``), runnables that need no leader, and the rest.

    Ports: runnables.Add's type switch
    """
    if callable(getattr(runnable, "get_cache", None)):
        return Group.CACHES
    if isinstance(runnable, LeaderElectionRunnable) and not runnable.need_leader_election():
        return Group.OTHERS
    return Group.LEADER_ELECTION


@dataclass(slots=True)
class RunnableGroup:
    """The runnables of one group and, once started, their tasks.

    A group runs once: after `stop` it refuses to start again. With a ``fence``, every task
    of the group (and every task those create) runs with it as the leader fence, which
    `reconcilekit.leaderelection.holds_leadership` asks.

    Ports: runnableGroup
    """

    group: Group
    on_error: Callable[[BaseException], None]
    runnables: list[Runnable] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    started: bool = False
    stopped: bool = False
    fence: Callable[[], bool] | None = None

    def add(self, runnable: Runnable) -> None:
        """Queue ``runnable``; it starts now if the group runs already."""
        self.runnables.append(runnable)
        if self.started:
            self._spawn(runnable)

    def start(self) -> None:
        """Start every queued runnable.

        Raises:
            RuntimeError: the group was stopped (a stopping manager starts nothing).

        Ports: runnableGroup.Start
        """
        if self.stopped:
            raise RuntimeError(f"the {self.group.value} runnable group was stopped and cannot start again")
        if self.started:
            return
        self.started = True
        for runnable in self.runnables:
            self._spawn(runnable)

    async def stop(self, *, within: float | None) -> bool:
        """Cancel every task and wait up to ``within`` s; True if all ended. Ports: runnableGroup.StopAndWait"""
        self.started = False
        self.stopped = True
        for task in self.tasks:
            task.cancel()
        if not self.tasks:
            return True
        if within is not None and within <= 0:
            await asyncio.sleep(0)  # let the cancellations land
            return all(t.done() for t in self.tasks)
        _, pending = await asyncio.wait(self.tasks, timeout=within)
        return not pending

    def _spawn(self, runnable: Runnable) -> None:
        name = f"{self.group.value}-{type(runnable).__name__}-{len(self.tasks)}"
        context = contextvars.copy_context()
        if self.fence is not None:
            context.run(LEADER_FENCE.set, self.fence)
        self.tasks.append(asyncio.create_task(self._run(runnable), name=name, context=context))

    async def _run(self, runnable: Runnable) -> None:
        try:
            await runnable.start()
        except Exception as err:  # any failure stops the manager; it is re-raised there
            self.on_error(err)
