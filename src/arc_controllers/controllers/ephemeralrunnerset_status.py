"""EphemeralRunnerSet status writers: the phase, the applied revision, the finished-cleanup marker.

Every writer re-reads status it wrote itself through the uncached reader, and the two
marker writers carry the optimistic lock inside retry-on-conflict.

Ports: controllers/actions.github.com/ephemeralrunnerset_controller.go (scaleUpServicedByFinishedRunnerCleanup,
patchFinishedRunnerCleanupPatchIDStatus, patchAppliedActionableRevisionStatus, updateStatus)
"""

from __future__ import annotations

import structlog

from arc_controllers._runner_constants import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, PHASE_OUTDATED, PHASE_RUNNING
from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.controllers.patching import LazyCopy, retry_on_conflict
from arc_controllers.controllers.runnerstates import (
    EphemeralRunnersByState,
    is_controlled_by,
    new_ephemeral_runners_by_states,
)
from arc_controllers.controllers.runnerstates import (
    spec_of as _spec,
)
from arc_controllers.controllers.runnerstates import (
    status_of as _status,
)
from arc_controllers.controllers.runnerstates import (
    writable_status as _status_of,
)
from arc_controllers.controllers.runnerstates import (
    zero_as_absent as _zero_as_absent,
)
from reconcilekit.client.interfaces import Client, Object, ObjectKey, Reader

__all__ = ["EphemeralRunnerSetStatusWriters"]

log = structlog.get_logger("EphemeralRunnerSet")  # Go's logr name for this reconciler (zap's `logger`)


class EphemeralRunnerSetStatusWriters:
    """The status-writing half of `EphemeralRunnerSetReconciler` (a mixin).

    Python only: the module split of spec-anchors §3.3; every method names its Go function.
    """

    client: Client
    api_reader: Reader | None

    async def _scale_up_serviced_by_finished_runner_cleanup(self, key: ObjectKey, runner_set: Object) -> bool:
        """True when the shortfall was made by deleting finished runners for this very patch ID.

        Patch ID 0 is never suppressed. The marker is read from the API server, never
        the cache, in either direction.

        Raises:
            RuntimeError: no uncached reader is configured.

        Ports: EphemeralRunnerSetReconciler.scaleUpServicedByFinishedRunnerCleanup
        """
        patch_id = int(_spec(runner_set).get("patchID") or 0)
        if patch_id == 0:
            return False
        if self.api_reader is None:
            raise RuntimeError("api_reader is not configured: cannot confirm the finished runner cleanup patch ID")
        try:
            live = await self.api_reader.get(EPHEMERAL_RUNNER_SET, key)
        except Exception as err:
            raise RuntimeError(f"failed to read EphemeralRunnerSet {key} without the cache") from err
        return int(_status(live).get("finishedRunnerCleanupPatchID") or 0) == patch_id

    async def _patch_finished_runner_cleanup_patch_id_status(self, key: ObjectKey, patch_id: int) -> None:
        """Record ``patch_id`` as the one whose finished runners were deleted (equality, may go down).

        Re-read through the API reader inside a retry; the patch carries the optimistic
        lock so a write decided on state that changed since conflicts and is retried.

        Ports: EphemeralRunnerSetReconciler.patchFinishedRunnerCleanupPatchIDStatus
        """
        reader: Reader = self.api_reader or self.client

        async def attempt() -> None:
            live = await reader.get(EPHEMERAL_RUNNER_SET, key)
            if int(_status(live).get("finishedRunnerCleanupPatchID") or 0) == patch_id:
                return
            lazy = LazyCopy(live)
            _status_of(lazy.mutate())["finishedRunnerCleanupPatchID"] = patch_id
            await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))

        await retry_on_conflict(attempt)

    async def _patch_applied_actionable_revision_status(self, key: ObjectKey, target: int) -> None:
        """Advance the applied revision (never backwards), clear the marker on advance, derive the phase.

        The set and its runners are read through the API reader (the runners
        namespace-wide, filtered here: the controller index exists only client-side).
        Runners are judged against ``max(live applied, target)``, read from the mutated
        object. The status patch carries the optimistic lock.

        Ports: EphemeralRunnerSetReconciler.patchAppliedActionableRevisionStatus
        """
        reader: Reader = self.api_reader or self.client

        async def attempt() -> None:
            live = await reader.get(EPHEMERAL_RUNNER_SET, key)
            lazy = LazyCopy(live)
            if int(_status(live).get("appliedActionableRevision") or 0) < target:
                status = _status_of(lazy.mutate())
                status["appliedActionableRevision"] = target
                status.pop("finishedRunnerCleanupPatchID", None)  # Go's 0 with omitempty
            runners = await reader.list(EPHEMERAL_RUNNER, namespace=key.namespace)
            mine = [r for r in runners.items if is_controlled_by(r, "EphemeralRunnerSet", key.name)]
            state = new_ephemeral_runners_by_states(mine, int(_status(live).get("appliedActionableRevision") or 0))
            phase = PHASE_OUTDATED if state.outdated else PHASE_RUNNING
            if _status(live).get("phase") != phase:
                _status_of(lazy.mutate())["phase"] = phase
            if not lazy.modified():
                return
            await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))

        await retry_on_conflict(attempt)

    async def _update_status(self, runner_set: Object, state: EphemeralRunnersByState) -> None:
        """Write the phase (Outdated is absorbing here) with a plain diff-based merge patch.

        Ports: EphemeralRunnerSetReconciler.updateStatus
        """
        current = _status(runner_set)
        if state.outdated:
            phase = PHASE_OUTDATED
        elif not current.get("phase"):
            phase = PHASE_RUNNING
        else:
            phase = current["phase"]
        desired = {
            "phase": phase,
            "appliedActionableRevision": current.get("appliedActionableRevision"),
            "finishedRunnerCleanupPatchID": current.get("finishedRunnerCleanupPatchID"),
        }
        if semantic_equal(_zero_as_absent(current), _zero_as_absent(desired)):
            return
        lazy = LazyCopy(runner_set)
        _status_of(lazy.mutate())["phase"] = phase
        await self.client.status().patch(runner_set, lazy.merge_from())
        log.info("updated EphemeralRunnerSet status", phase=phase)
