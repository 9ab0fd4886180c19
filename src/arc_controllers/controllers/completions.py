"""Runners that completed a job, counted by their set until a patch ID computed after the completion arrives.

The listener computes ``spec.replicas`` from the service's assigned jobs, which still
count a job for a while after its runner finished. While the set has not acted on a
patch ID (no runner stamped with it), every reconcile re-evaluates it. A Succeeded
runner used to stay visible long enough to be counted: as finished (the cleanup marker
then suppresses the scale-up for that patch ID, #4642) or as deleting (counted in
``scale_up_total``). Once the EphemeralRunner reconciler finalizes a Succeeded runner in
the same reconcile that deletes it, the runner can leave the set's cache between two set
reconciles, seen by neither count, and the set would create a runner for a job that is
already done (arc-sim ``rollout``: 1 beyond demand; issue 20's finding 4).

So the runner reconciler records each completion under its set, together with the last
patch ID that set observed. The completion counts toward the set's ``scale_up_total``
while the runner is not listed any more, under that patch ID and under the first
different one the set observes after it (the listener may have computed that one before
the completion reached it); the second different patch ID drops it. Patch ID 0 is the
listener's idle convergence (no assigned job): it counts nothing and drops every record.

The cost, when the service had already dropped the job before the patch that still
counts the completion: that patch creates one runner fewer, and the next patch makes
it up (the same wait the #4642 suppression accepts).

Python only: Go ARC has the race; there the runner lingers through its finalizer round trip.

Ports: none; Python only (issue 20, finding 4): Go ARC finalizes a Succeeded runner in a later
reconcile, so the #4642 marker or the deleting count always sees it; nothing upstream to port.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from arc_controllers.api.v1alpha1 import Kind, objects
from reconcilekit.client.interfaces import Object, ObjectKey

__all__ = ["JobCompletions"]


@dataclass(slots=True)
class _Completion:
    """Python only: the patch ID the set had observed when the runner completed, and the first one after."""

    seen: int | None
    first_newer: int | None = None


class JobCompletions:
    """Per EphemeralRunnerSet: runners that completed a job and which patch IDs may not know it yet.

    Shared by the EphemeralRunner reconciler (`completed`) and the EphemeralRunnerSet
    reconciler (`observe`, `uncounted`); one event loop, not thread-safe. Python only.
    """

    __slots__ = ("_done", "_observed", "_per_set")

    def __init__(self, *, per_set: int = 10_000) -> None:
        """Python only: at most ``per_set`` completions are kept per set (oldest dropped first)."""
        self._observed: dict[ObjectKey, int] = {}
        self._done: dict[ObjectKey, dict[str, _Completion]] = {}
        self._per_set = per_set

    def runner_completed(self, runner: Object) -> None:
        """``runner`` completed its job: recorded under the EphemeralRunnerSet that controls it (if any)."""
        owner = objects.controller_reference(runner)
        if owner is not None and owner.get("kind") == Kind.EPHEMERAL_RUNNER_SET:
            self.completed(ObjectKey(objects.namespace(runner), str(owner.get("name") or "")), objects.uid(runner))

    def completed(self, runner_set: ObjectKey, uid: str) -> None:
        """Runner ``uid`` of ``runner_set`` completed its job (recorded once; a retry keeps the first)."""
        if not uid:
            return
        done = self._done.setdefault(runner_set, {})
        if uid in done:
            return
        done[uid] = _Completion(seen=self._observed.get(runner_set))
        while len(done) > self._per_set:
            del done[next(iter(done))]

    def observe(self, runner_set: ObjectKey, patch_id: int) -> None:
        """The set reconciles under ``patch_id``: age the completions recorded before it."""
        if patch_id == 0:
            self._done.pop(runner_set, None)
            self._observed[runner_set] = 0
            return
        self._observed[runner_set] = patch_id
        done = self._done.get(runner_set)
        if not done:
            return
        for uid, completion in list(done.items()):
            if patch_id == completion.seen:
                continue
            if completion.first_newer is None:
                completion.first_newer = patch_id
            elif patch_id != completion.first_newer:
                del done[uid]
        if not done:
            del self._done[runner_set]

    def uncounted(self, runner_set: ObjectKey, listed: Collection[str]) -> int:
        """How many recorded completions of ``runner_set`` the listed runner UIDs no longer show.

        A listed runner is counted by the set already (running, finished or deleting).
        Call `observe` first with the patch ID being acted on.
        """
        if self._observed.get(runner_set) == 0:
            return 0
        return sum(1 for uid in self._done.get(runner_set, {}) if uid not in listed)

    def forget(self, runner_set: ObjectKey) -> None:
        """The set is gone: drop everything about it."""
        self._done.pop(runner_set, None)
        self._observed.pop(runner_set, None)
