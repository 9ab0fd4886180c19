"""The leader fence: leader-only code asks whether this process may still act as the leader.

The manager runs its leader-elected runnables with a fence in their context (a ContextVar
that every task they create inherits); `fence_holds` asks it. Outside leader election there
is no fence and the answer is always yes.

Python only: controller-runtime has no fence; see `reconcilekit.leaderelection.holds_leadership`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["LEADER_FENCE", "fence_holds"]

LEADER_FENCE: ContextVar[Callable[[], bool] | None] = ContextVar("reconcilekit_leader_fence", default=None)
"""The check of the leader election this task's leader-only work runs under, if any."""


def fence_holds() -> bool:
    """True unless this task runs under a leader fence that no longer holds (checked now)."""
    check = LEADER_FENCE.get()
    return check is None or check()
