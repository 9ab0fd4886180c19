"""The runner accessors over JSON objects behave as upstream's EphemeralRunner methods.

Upstream: EphemeralRunner.IsDone / HasJob / HasContainerHookConfigured (ephemeralrunner_types.go). These
assertions moved here from the model tests when the models' copies of the accessors were removed: the
reconcilers use these dict functions.
"""

from __future__ import annotations

from typing import Any

import pytest

from arc_controllers import constants
from arc_controllers.controllers.runnerstates import has_container_hook_configured, has_job, is_done


@pytest.mark.parametrize(
    ("phase", "done"),
    [("Pending", False), ("Running", False), ("Succeeded", True), ("Failed", True), ("Outdated", True), (None, False)],
)
def test_runner_is_done(phase: str | None, done: bool) -> None:
    assert is_done({"status": {"phase": phase}} if phase else {}) is done


def test_runner_has_job() -> None:
    assert has_job({"status": {"phase": "Running", "jobId": "j1"}})
    assert not has_job({"status": {"phase": "Running"}})
    assert not has_job({"status": {"jobId": ""}})
    assert not has_job({})


def _runner(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"spec": {"containers": list(containers)}}}


def test_runner_container_hook_looks_at_the_first_runner_container_only() -> None:
    hook = {"name": constants.ENV_ACTIONS_RUNNER_CONTAINER_HOOKS}
    assert not has_container_hook_configured(_runner({"name": "runner"}, {"name": "side", "env": [hook]}))
    assert has_container_hook_configured(_runner({"name": "side"}, {"name": "runner", "env": [hook]}))
    assert not has_container_hook_configured(_runner({"name": "runner"}, {"name": "runner", "env": [hook]}))
    assert not has_container_hook_configured({})
