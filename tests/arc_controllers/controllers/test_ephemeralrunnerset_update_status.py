"""RunnerSetStatus.update_status on a fake cluster: the phase it derives from stale
runners, and the status keys its patch may carry.

Upstream: ephemeralrunnerset_stale_phase_test.go @142132e5 and ephemeralrunnerset_status_patch_test.go
@419b1f58 (controllers/actions.github.com), the spec §12.2 "present, not read" files.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from arc_controllers.controllers.runnerstates import new_ephemeral_runners_by_states
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions
from .test_ephemeralrunnerset import NS, live_status, make_set, reconciler, status_patches


def _legacy_runner() -> dict[str, Any]:
    """An Outdated runner with no revision annotation at all (a runner from before revisions existed)."""
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": "legacy-runner", "namespace": NS},
        "status": {"phase": "Outdated"},
    }


# Upstream: TestUpdateStatusStaleOutdatedRunnersNeverSetTheOutdatedPhase
#   "legacy runner on an upgraded set leaves the phase Running" /
#   "legacy runner before any revision is applied still reports Outdated"
@pytest.mark.parametrize(("applied", "want"), [(4, "Running"), (0, "Outdated")])
async def test_stale_outdated_runners_never_set_the_outdated_phase(
    cluster: FakeCluster, actions: FakeActions, applied: int, want: str
) -> None:
    make_set(cluster, appliedActionableRevision=applied)
    runner_set = cluster.get("EphemeralRunnerSet", NS, "set")
    state = new_ephemeral_runners_by_states([_legacy_runner()], applied)
    await reconciler(cluster, actions).status.update_status(runner_set, state)
    assert live_status(cluster)["phase"] == want


async def _update_with_a_carried_marker(
    cluster: FakeCluster, actions: FakeActions, *, server_marker: int, carried_marker: int
) -> tuple[dict[str, Any], int]:
    """The server holds ``server_marker``; the object the reconcile carries holds ``carried_marker``
    and no phase (so there is a change to write). Returns the one status patch and the live marker."""
    make_set(cluster, patch_id=carried_marker, finishedRunnerCleanupPatchID=server_marker)
    carried = copy.deepcopy(cluster.get("EphemeralRunnerSet", NS, "set"))
    carried["status"]["phase"] = ""
    carried["status"]["finishedRunnerCleanupPatchID"] = carried_marker
    await reconciler(cluster, actions).status.update_status(carried, new_ephemeral_runners_by_states([], 0))
    [patch] = status_patches(cluster)
    return patch, int(live_status(cluster).get("finishedRunnerCleanupPatchID") or 0)


# Upstream: TestUpdateStatusNeverRepublishesTheCleanupMarker
#   "does not restore a marker another reconcile has cleared"
async def test_update_status_does_not_restore_a_cleared_marker(cluster: FakeCluster, actions: FakeActions) -> None:
    patch, marker = await _update_with_a_carried_marker(cluster, actions, server_marker=0, carried_marker=4)
    assert "finishedRunnerCleanupPatchID" not in patch["status"], json.dumps(patch)
    assert marker == 0


# Upstream: TestUpdateStatusNeverRepublishesTheCleanupMarker
#   "does not lower a marker another reconcile has advanced"
async def test_update_status_does_not_lower_an_advanced_marker(cluster: FakeCluster, actions: FakeActions) -> None:
    patch, marker = await _update_with_a_carried_marker(cluster, actions, server_marker=9, carried_marker=4)
    assert "finishedRunnerCleanupPatchID" not in patch["status"], json.dumps(patch)
    assert patch["status"]["phase"] == "Running"
    assert marker == 9
