"""EphemeralRunnerSet status writers: the phase, the applied revision, the finished-cleanup marker.

Every writer re-reads status it wrote itself through the uncached reader, and the two
marker writers carry the optimistic lock inside retry-on-conflict.

Ports: controllers/actions.github.com/ephemeralrunnerset_controller.go (scaleUpServicedByFinishedRunnerCleanup,
patchFinishedRunnerCleanupPatchIDStatus, patchAppliedActionableRevisionStatus, updateStatus)
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET, EphemeralRunnerSetPhase, Kind
from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.api.v1alpha1.objects import mutable_status as _status_of
from arc_controllers.api.v1alpha1.objects import spec as _spec
from arc_controllers.api.v1alpha1.objects import status as _status
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.runnerstates import (
    EphemeralRunnersByState,
    is_controlled_by,
    new_ephemeral_runners_by_states,
)
from arc_controllers.controllers.runnerstates import (
    zero_as_absent as _zero_as_absent,
)
from reconcilekit import retry
from reconcilekit.client.interfaces import Client, Object, ObjectKey, Reader

__all__ = ["RunnerSetStatus"]

log = structlog.get_logger("EphemeralRunnerSet")  # Go's logr name for this reconciler


@dataclass(frozen=True, kw_only=True)
class RunnerSetStatus:
    """Writes an EphemeralRunnerSet's status; every method names its Go function.

    Python only: the status writers of `EphemeralRunnerSetReconciler`, given its client and
    uncached reader.
    """

    client: Client
    """Reads from the informer cache, writes to the API server."""
    api_reader: Reader | None
    """Reads from the API server: status this controller wrote itself. The scale-up
    suppression check refuses to run without it."""

    async def scale_up_serviced_by_finished_runner_cleanup(self, key: ObjectKey, runner_set: Object) -> bool:
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

    async def patch_finished_runner_cleanup_patch_id_status(self, key: ObjectKey, patch_id: int) -> None:
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

        await retry.retry_on_conflict(retry.DEFAULT_BACKOFF, attempt)

    async def patch_applied_actionable_revision_status(self, key: ObjectKey, target: int) -> None:
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
            mine = [r for r in runners.items if is_controlled_by(r, Kind.EPHEMERAL_RUNNER_SET, key.name)]
            state = new_ephemeral_runners_by_states(mine, int(_status(live).get("appliedActionableRevision") or 0))
            phase = EphemeralRunnerSetPhase.OUTDATED if state.outdated else EphemeralRunnerSetPhase.RUNNING
            if _status(live).get("phase") != phase:
                _status_of(lazy.mutate())["phase"] = phase
            if not lazy.modified():
                return
            await self.client.status().patch(live, lazy.merge_from(optimistic_lock=True))

        await retry.retry_on_conflict(retry.DEFAULT_BACKOFF, attempt)

    async def update_status(self, runner_set: Object, state: EphemeralRunnersByState) -> None:
        """Write the phase (Outdated is absorbing here) with a plain diff-based merge patch.

        Ports: EphemeralRunnerSetReconciler.updateStatus
        """
        current = _status(runner_set)
        if state.outdated:
            phase = EphemeralRunnerSetPhase.OUTDATED
        elif not current.get("phase"):
            phase = EphemeralRunnerSetPhase.RUNNING
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
