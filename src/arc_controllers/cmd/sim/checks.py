"""Did each fault of the scenario fire? What every event and fault expects to have seen by the end.

A scenario that injects a fault the system never meets proves nothing: a killed listener
whose session was already gone never meets a 409, a forgotten session that was not the
live one never makes a listener refresh. Each armed item is recorded with the Actions
service's answer counts at its time (`Armed`); after the run `unfired` compares them with
the final counts and the sim's own records (`Seen`) and names every item whose effect is
missing. ``arc-sim`` then exits 1.

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arc_controllers.actions.fake import Fault as ArmedFault
from arc_controllers.cmd.sim.scenario import (
    DeleteRunnerPodEvent,
    Fault,
    ForgetSessionEvent,
    KillListenerEvent,
    RefuseRunnerPodsEvent,
)
from arc_controllers.constants import REASON_INVALID_POD_FAILURE

__all__ = ["Armed", "Seen", "describe", "unfired"]


@dataclass(slots=True)
class Armed:
    """A scenario item when it was applied: ``index`` in ``[*events, *faults]``, ``at`` seconds."""

    index: int
    at: float
    answers_before: Mapping[tuple[str, int], int]
    """The Actions service's answers per (endpoint, HTTP status) just before the item acted."""
    fault: ArmedFault | None = None
    """For a `Fault`: the fake's record of it (its ``fired`` count)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """What the run saw by its end."""

    answers: Mapping[tuple[str, int], int]
    """The Actions service's answers per (endpoint, HTTP status)."""
    failed_runner_reasons: Collection[str] = field(default_factory=tuple)
    """``status.reason`` of every EphemeralRunner seen Failed."""
    jobs_cut_by_scenario: int = 0
    """Jobs whose runner pod the scenario deleted while they ran."""
    listeners_killed: int = 0
    """Listener processes the scenario's ``killListener`` events killed."""


def describe(item: Any) -> str:
    """A scenario item in the scenario's own words: ``forgetSession at t=14s``."""
    if isinstance(item, Fault):
        what = f"{item.status}" if item.kind == "status" else item.kind
        return f"fault {item.endpoint} {what} at t={item.at:g}s"
    return f"{item.action} at t={item.at:g}s"


def _grew(armed: Armed, seen: Seen, endpoint: str, status: int) -> bool:
    return seen.answers.get((endpoint, status), 0) > armed.answers_before.get((endpoint, status), 0)


def _missing(item: Any, armed: Armed, seen: Seen) -> str | None:
    """What ``item`` expected and did not see (``None``: it fired, or it expects nothing)."""
    if isinstance(item, KillListenerEvent):
        if seen.listeners_killed == 0:
            return "no listener process was running to kill"
        # the 409s are expected only when the scenario keeps the session for them: with a bare
        # expiry time a slow restart may find the orphaned session gone, which is no failure
        if item.conflicts_before_expiry and not _grew(armed, seen, "create_session", 409):
            return "no session create answered 409 after the kill (the killed listener's session was not live)"
        return None
    if isinstance(item, ForgetSessionEvent):
        if not _grew(armed, seen, "refresh_session", 404):
            return "no session refresh answered 404 after it (no listener lost its live session)"
        return None
    if isinstance(item, RefuseRunnerPodsEvent):
        if REASON_INVALID_POD_FAILURE not in seen.failed_runner_reasons:
            reason = REASON_INVALID_POD_FAILURE
            return f"no EphemeralRunner seen Failed with reason {reason} (no runner pod was refused)"
        return None
    if isinstance(item, DeleteRunnerPodEvent):
        if seen.jobs_cut_by_scenario == 0:
            return "no job failed for its runner pod deleted mid-job"
        return None
    if isinstance(item, Fault) and armed.fault is not None:
        fired, wanted = armed.fault.fired, item.times or 1
        if fired < wanted:
            return f"fired {fired} of {wanted} time(s) (no request to {item.endpoint} met it)"
    return None


def unfired(items: Sequence[Any], armed: Sequence[Armed], seen: Seen) -> list[str]:
    """One line per scenario item that did not fire: never applied, or its effect never seen.

    ``items`` are the scenario's events then its faults; ``armed`` those applied (by index).
    A rollout or a controller restart always acts, so it expects nothing more.
    """
    by_index = {a.index: a for a in armed}
    lines = []
    for index, item in enumerate(items):
        applied = by_index.get(index)
        if applied is None:
            lines.append(f"{describe(item)}: never applied (the run ended first)")
            continue
        missing = _missing(item, applied, seen)
        if missing is not None:
            lines.append(f"{describe(item)}: {missing}")
    return lines
