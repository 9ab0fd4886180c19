"""Which runner pods are deleted without a grace period (spec §8, deletePodOptions).

Upstream: ephemeralrunner_pod_release_test.go @2f847486 (controllers/actions.github.com), a spec
§12.5 "present, not read" file. Its table is ported against `pod_terminated`, the predicate
that picks zero grace plus a UID precondition; the reconcile-level case
(TestReconcileReleasesTheRunnerPodWithoutAGracePeriod) is
test_ephemeralrunner.py::test_success_marks_succeeded_deletes_and_never_unregisters.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from arc_controllers.controllers.ephemeralrunner import pod_terminated

RUNNING: dict[str, Any] = {"running": {}}


def _terminated(code: int) -> dict[str, Any]:
    return {"terminated": {"exitCode": code}}


def _runner_pod(code: int = 0) -> dict[str, Any]:
    """A pod whose runner container exited with ``code`` while the phase still says Running."""
    return {
        "metadata": {"name": "test-runner", "namespace": "default", "uid": "pod-uid"},
        "spec": {"containers": [{"name": "runner"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "runner", "state": _terminated(code)}]},
    }


def _with(pod: dict[str, Any], **status: Any) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out["status"].update(status)
    return out


def _sidecar_running() -> dict[str, Any]:
    pod = _runner_pod()
    pod["spec"]["containers"].append({"name": "dind"})
    pod["status"]["containerStatuses"].append({"name": "dind", "state": RUNNING})
    return pod


def _status_not_reported() -> dict[str, Any]:
    pod = _runner_pod()
    pod["spec"]["containers"].append({"name": "dind"})
    return pod


CASES: dict[str, tuple[dict[str, Any], bool]] = {
    "pod succeeded": (_with(_runner_pod(), phase="Succeeded"), True),
    "pod failed": (_with(_runner_pod(1), phase="Failed"), True),
    "runner exited but the phase has not moved": (_runner_pod(), True),
    "pod failed before its containers started": (
        _with(
            _runner_pod(),
            phase="Failed",
            containerStatuses=None,
            initContainerStatuses=[{"name": "init", "state": _terminated(1)}],
        ),
        True,
    ),
    "runner is still running": (_with(_runner_pod(), containerStatuses=[{"name": "runner", "state": RUNNING}]), False),
    "sidecar is still running": (_sidecar_running(), False),
    "native sidecar is still running": (
        _with(_runner_pod(), initContainerStatuses=[{"name": "dind", "state": RUNNING}]),
        False,
    ),
    "a container has not reported a status yet": (_status_not_reported(), False),
    "the phase failed the pod but a container is still reported as running": (
        _with(_runner_pod(), phase="Failed", containerStatuses=[{"name": "runner", "state": RUNNING}]),
        False,
    ),
}


# Upstream: TestDeletePodOptionsSkipsGracePeriodOnlyWhenNothingIsRunning
@pytest.mark.parametrize("case", list(CASES))
def test_grace_period_is_skipped_only_when_nothing_is_running(case: str) -> None:
    pod, immediate = CASES[case]
    assert pod_terminated(pod) is immediate
