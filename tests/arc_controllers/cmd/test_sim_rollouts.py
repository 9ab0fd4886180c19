"""arc-sim's rollout accounting: which runners without a job the revision cleanup replaced."""

from __future__ import annotations

from typing import Any

from arc_controllers import constants
from arc_controllers.cmd.sim.rollouts import RevisionLedger


def _set(rv: int, spec: int, applied: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "set", "resourceVersion": str(rv)},
        "spec": {"actionableRevision": spec},
        "status": {"appliedActionableRevision": applied},
    }


def _runner(name: str, rv: int, stamp: int, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "resourceVersion": str(rv),
        "annotations": {constants.ANNOTATION_KEY_ACTIONABLE_REVISION: str(stamp)},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-12-04T19:14:48Z"
    return {"metadata": meta}


def _rollout_ledger() -> RevisionLedger:
    """Revision 0 until rv 100 raises the spec to 1; the cleanup's status patch lands at rv 120."""
    ledger = RevisionLedger()
    ledger.observe_set(_set(10, 0, 0))
    ledger.observe_set(_set(100, 1, 0))
    ledger.observe_set(_set(120, 1, 1))
    return ledger


def test_an_idle_runner_of_the_old_revision_deleted_by_the_revision_cleanup_was_replaced() -> None:
    ledger = _rollout_ledger()
    ledger.observe_runner("ADDED", _runner("old", 90, 0), live=True)
    ledger.observe_runner("MODIFIED", _runner("old", 110, 0, deleting=True), live=True)
    ledger.observe_runner("DELETED", _runner("old", 125, 0, deleting=True), live=True)
    assert ledger.replaced_by_rollout(set()) == {"old"}


def test_a_runner_that_took_a_job_is_not_a_rollout_replacement() -> None:
    ledger = _rollout_ledger()
    ledger.observe_runner("ADDED", _runner("busy", 90, 0), live=True)
    ledger.observe_runner("MODIFIED", _runner("busy", 110, 0, deleting=True), live=True)
    assert ledger.replaced_by_rollout({"busy"}) == set()


def test_a_create_landing_just_after_the_spec_write_is_still_the_rollouts_replacement() -> None:
    ledger = _rollout_ledger()
    ledger.observe_runner("ADDED", _runner("racing", 101, 0), live=True)  # decided before the cache saw rv 100
    ledger.observe_runner("MODIFIED", _runner("racing", 110, 0, deleting=True), live=True)
    assert ledger.replaced_by_rollout(set()) == {"racing"}


def test_a_runner_stamped_from_a_stale_spec_after_the_cleanup_stays_beyond_demand() -> None:
    ledger = _rollout_ledger()
    ledger.observe_set(_set(200, 2, 1))  # a second rollout opens a new window
    ledger.observe_runner("ADDED", _runner("stale", 125, 0), live=True)  # revision 1 already applied
    ledger.observe_runner("MODIFIED", _runner("stale", 210, 0, deleting=True), live=True)
    assert ledger.replaced_by_rollout(set()) == set()


def test_a_deletion_outside_the_cleanup_window_is_not_a_rollout_replacement() -> None:
    ledger = _rollout_ledger()
    ledger.observe_runner("ADDED", _runner("early", 20, 0), live=True)
    ledger.observe_runner("MODIFIED", _runner("early", 50, 0, deleting=True), live=True)  # scale-down, before
    ledger.observe_runner("ADDED", _runner("late", 95, 0), live=True)
    ledger.observe_runner("MODIFIED", _runner("late", 130, 0, deleting=True), live=True)  # after applied
    ledger.observe_runner("ADDED", _runner("new", 121, 1), live=True)
    ledger.observe_runner("MODIFIED", _runner("new", 122, 1, deleting=True), live=True)  # current revision
    assert ledger.replaced_by_rollout(set()) == set()


def test_a_runner_first_seen_in_a_list_or_never_deleted_is_not_counted() -> None:
    ledger = _rollout_ledger()
    ledger.observe_runner("ADDED", _runner("listed", 90, 0), live=False)  # creation write unknown
    ledger.observe_runner("MODIFIED", _runner("listed", 110, 0, deleting=True), live=True)
    ledger.observe_runner("ADDED", _runner("kept", 90, 0), live=True)
    ledger.observe_runner("ADDED", {"metadata": {"name": "odd", "resourceVersion": "not-a-number"}}, live=True)
    assert ledger.replaced_by_rollout(set()) == set()
