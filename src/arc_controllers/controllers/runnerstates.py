"""Sorting a set's runners into buckets, and the runner accessors the controllers share.

Ports: newEphemeralRunnersByStates and ephemeralRunnersByState (ephemeralrunnerset_controller.go);
EphemeralRunner.IsDone / HasJob / HasContainerHookConfigured / LastFailure (ephemeralrunner_types.go)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import SECRET, EphemeralRunnerPhase, PodConditionType, objects
from reconcilekit.client.interfaces import Object

__all__ = [
    "EphemeralRunnersByState",
    "annotation_int",
    "has_container_hook_configured",
    "has_job",
    "is_controlled_by",
    "is_done",
    "last_failure",
    "new_ephemeral_runners_by_states",
    "parse_time",
    "pod_ready",
    "runner_id",
    "secret_ref",
    "zero_as_absent",
]


_DONE_PHASES = (EphemeralRunnerPhase.SUCCEEDED, EphemeralRunnerPhase.FAILED, EphemeralRunnerPhase.OUTDATED)


def annotation_int(obj: Mapping[str, Any], key: str) -> int:
    """The annotation ``key`` as an integer; 0 when missing or unparseable.

    Python only: the ``strconv.Atoi`` plus error-ignore pattern of upstream's callers.
    """
    raw = objects.annotations(obj).get(key)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def runner_id(runner: Mapping[str, Any]) -> int:
    """Python only: ``status.runnerId``, 0 when unset."""
    return int(objects.status(runner).get("runnerId") or 0)


def is_done(runner: Mapping[str, Any]) -> bool:
    """Phase Succeeded, Failed or Outdated. Ports: EphemeralRunner.IsDone"""
    return objects.status(runner).get("phase") in _DONE_PHASES


def has_job(runner: Mapping[str, Any]) -> bool:
    """A job ID is recorded (a Running runner without one is idle). Ports: EphemeralRunner.HasJob"""
    return bool(objects.status(runner).get("jobId"))


def has_container_hook_configured(runner: Mapping[str, Any]) -> bool:
    """The first ``runner`` container sets ``ACTIONS_RUNNER_CONTAINER_HOOKS``.

    Ports: EphemeralRunner.HasContainerHookConfigured
    """
    containers = objects.spec(objects.spec(runner)).get("containers") or []
    for container in containers:
        if container.get("name") == constants.EPHEMERAL_RUNNER_CONTAINER_NAME:
            return any(
                env.get("name") == constants.ENV_ACTIONS_RUNNER_CONTAINER_HOOKS for env in container.get("env") or []
            )
    return False


def parse_time(value: str | None) -> datetime | None:
    """Python only: an RFC 3339 timestamp as an aware datetime; None when unset."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """The status of the Ready condition with the latest ``lastTransitionTime``; False when there is none.

    A Ready condition without a (parseable) transition time never counts (Go: the zero
    time is not after the zero time), and of two with the same time the first wins. The EphemeralRunner
    reconciler mirrors this into ``status.ready`` and the runner's pod predicate wakes it
    whenever it changes, so both must compute it here.

    Ports: podReady (predicates.go)
    """
    ready = False
    latest: datetime | None = None
    for condition in objects.status(pod).get("conditions") or []:
        if condition.get("type") != PodConditionType.READY:
            continue
        try:
            at = parse_time(condition.get("lastTransitionTime"))
        except ValueError:
            continue
        if at is not None and (latest is None or at > latest):
            ready, latest = condition.get("status") == "True", at
    return ready


def last_failure(runner: Mapping[str, Any]) -> datetime | None:
    """The latest time in ``status.failures``; None when there is none. Ports: EphemeralRunner.LastFailure"""
    times = [t for t in map(parse_time, (objects.status(runner).get("failures") or {}).values()) if t]
    return max(times) if times else None


def is_controlled_by(obj: Mapping[str, Any], kind: str, name: str) -> bool:
    """The controller owner reference is ``kind``/``name``. Ports: isControlledBy"""
    ref = objects.controller_reference(obj)
    return ref is not None and bool(ref.get("kind") == kind and ref.get("name") == name)


@dataclass(slots=True)
class EphemeralRunnersByState:
    """A set's runners by state. Ports: ephemeralRunnersByState"""

    latest_patch_id: int = 0
    pending: list[Object] = field(default_factory=list)
    running: list[Object] = field(default_factory=list)
    finished: list[Object] = field(default_factory=list)
    failed: list[Object] = field(default_factory=list)
    outdated: list[Object] = field(default_factory=list)
    """Outdated and built from the judged revision or later: evidence against the current spec."""
    stale_outdated: list[Object] = field(default_factory=list)
    """Outdated but built from an older revision: says nothing about the current spec."""
    deleting: list[Object] = field(default_factory=list)
    unobserved: int = 0
    """Python only: runners this process created that the cache has not shown yet (counted as pending)."""

    def terminated(self) -> list[Object]:
        """Finished, failed, outdated and stale outdated. Ports: ephemeralRunnersByState.terminated"""
        return [*self.finished, *self.failed, *self.outdated, *self.stale_outdated]

    def scale_total(self) -> int:
        """Pending + running + failed (finished, outdated and deleting do not count), plus unobserved creates.

        Ports: ephemeralRunnersByState.scaleTotal
        """
        return len(self.pending) + len(self.running) + len(self.failed) + self.unobserved


def new_ephemeral_runners_by_states(runners: Iterable[Object], judged_revision: int) -> EphemeralRunnersByState:
    """Classify ``runners``; an Outdated runner stamped below ``judged_revision`` is stale.

    The latest patch ID is the maximum ``actions.github.com/patch-id`` over all runners,
    deleting ones included.

    Ports: newEphemeralRunnersByStates
    """
    state = EphemeralRunnersByState()
    for runner in runners:
        state.latest_patch_id = max(state.latest_patch_id, annotation_int(runner, constants.ANNOTATION_KEY_PATCH_ID))
        if objects.is_deleting(runner):
            state.deleting.append(runner)
            continue
        phase = objects.status(runner).get("phase")
        if phase == EphemeralRunnerPhase.RUNNING:
            state.running.append(runner)
        elif phase == EphemeralRunnerPhase.SUCCEEDED:
            state.finished.append(runner)
        elif phase == EphemeralRunnerPhase.FAILED:
            state.failed.append(runner)
        elif phase == EphemeralRunnerPhase.OUTDATED:
            if annotation_int(runner, constants.ANNOTATION_KEY_ACTIONABLE_REVISION) < judged_revision:
                state.stale_outdated.append(runner)
            else:
                state.outdated.append(runner)
        else:
            state.pending.append(runner)
    return state


def zero_as_absent(status: Mapping[str, Any]) -> dict[str, Any]:
    """Python only: Go's omitempty view of a status (0, "" and None are not sent)."""
    return {k: v for k, v in status.items() if v not in (0, "", None)}


def secret_ref(namespace: str, name: str) -> Object:
    """Python only: a Secret object naming only its key (for deletes by name)."""
    return {"apiVersion": SECRET.api_version, "kind": SECRET.kind, "metadata": {"namespace": namespace, "name": name}}
