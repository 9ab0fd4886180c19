"""The runner phase gauges (spec §3.8): the per-runner bookkeeping, and the reconciler's transitions.

Every test uses its own scale-set name label, so its series are its own on the
process-wide registry.
"""

from __future__ import annotations

from typing import Any

import pytest

from arc_controllers.cmd.manager import controllers_options
from arc_controllers.cmd.options import parse_manager_options
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.metrics import RunnerPhaseMetrics
from reconcilekit.errors import InvalidError
from reconcilekit.metrics import REGISTRY
from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions
from .test_ephemeralrunner import NAME, NS, REQ, pod_status, runner, terminated

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Outdated")
RUNNER_FINALIZER = "ephemeralrunner.actions.github.com/finalizer"
ACTIONS_FINALIZER = "ephemeralrunner.actions.github.com/runner-registration-finalizer"


def labels(scale_set: str) -> dict[str, str]:
    return {"name": scale_set, "namespace": NS, "repository": "", "organization": "org", "enterprise": ""}


def gauge(phase: str, scale_set: str) -> float | None:
    """The phase gauge's value for the scale set; None when the series was never created."""
    return REGISTRY.get_sample_value(f"gha_controller_{phase.lower()}_ephemeral_runners", labels(scale_set))


def gauges(scale_set: str) -> dict[str, float]:
    """Every phase gauge of the scale set that exists (non-existent series left out)."""
    values = {phase: gauge(phase, scale_set) for phase in PHASES}
    return {phase: v for phase, v in values.items() if v is not None}


def runner_object(scale_set: str, name: str = NAME, url: str = "https://github.com/org") -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "finalizers": [RUNNER_FINALIZER, ACTIONS_FINALIZER],
            "labels": {
                "actions.github.com/scale-set-name": scale_set,
                "actions.github.com/scale-set-namespace": NS,
            },
        },
        "spec": {
            "githubConfigUrl": url,
            "runnerScaleSetId": 1,
            "spec": {"containers": [{"name": "runner", "image": "img"}]},
        },
        "status": {},
    }


def make_reconciler(cluster: FakeCluster, actions: FakeActions, *, publish: bool = True, client: Any = None) -> Any:
    async def factory(_: Any) -> FakeActions:
        return actions

    return EphemeralRunnerReconciler(
        client=client or cluster.client(),
        actions=factory,
        unregistration_queue=None,
        publish_metrics=publish,
        phase_metrics=RunnerPhaseMetrics(),
    )


RUNNING_CONTAINER = {"phase": "Running", "containerStatuses": [{"name": "runner", "state": {"running": {}}}]}


def test_one_runner_counts_once_in_its_last_phase_and_leaves_on_deletion() -> None:
    m = RunnerPhaseMetrics()
    obj = runner_object("book-one")
    m.publish(obj, "Pending")
    m.publish(obj, "Pending")
    assert gauges("book-one") == {"Pending": 1.0}
    m.publish(obj, "Running")
    assert gauges("book-one") == {"Pending": 0.0, "Running": 1.0}
    m.publish(obj, "Succeeded")
    assert gauges("book-one") == {"Pending": 0.0, "Running": 0.0, "Succeeded": 1.0}
    m.publish(obj, "")
    assert gauges("book-one") == {"Pending": 0.0, "Running": 0.0, "Succeeded": 0.0}
    assert m.phase_of(NS, NAME) is None
    m.publish(obj, "")  # a second deletion reconcile subtracts nothing
    assert gauges("book-one")["Succeeded"] == 0.0


def test_runners_of_one_scale_set_add_up() -> None:
    m = RunnerPhaseMetrics()
    for name in ("a", "b", "c"):
        m.publish(runner_object("book-sum", name), "Pending")
    m.publish(runner_object("book-sum", "b"), "Running")
    assert gauges("book-sum") == {"Pending": 2.0, "Running": 1.0}


def test_the_decrement_uses_the_labels_of_the_increment() -> None:
    m = RunnerPhaseMetrics()
    obj = runner_object("book-relabel-old")
    m.publish(obj, "Pending")
    obj["metadata"]["labels"]["actions.github.com/scale-set-name"] = "book-relabel-new"
    m.publish(obj, "Running")
    assert gauges("book-relabel-old") == {"Pending": 0.0}
    assert gauges("book-relabel-new") == {"Running": 1.0}


def test_a_runner_whose_config_url_does_not_parse_counts_nowhere() -> None:
    m = RunnerPhaseMetrics()
    obj = runner_object("book-bad-url")
    m.publish(obj, "Pending")
    obj["spec"]["githubConfigUrl"] = "not a url"
    m.publish(obj, "Running")
    assert gauges("book-bad-url") == {"Pending": 0.0}
    assert m.phase_of(NS, NAME) is None


async def test_failed_transition_publishes_the_failed_gauge(cluster: FakeCluster, actions: FakeActions) -> None:
    """markAsFailed (the pod template is invalid) moves the runner to the failed gauge; deletion removes it."""
    cluster.put(runner_object("er-failed"))
    client = cluster.client()
    original_create = client.create

    async def create(obj: dict[str, Any], /, **kw: Any) -> dict[str, Any]:
        if obj["kind"] == "Pod":
            raise InvalidError(422, "Invalid", "spec.containers: Required value")
        return await original_create(obj, **kw)

    client.create = create
    r = make_reconciler(cluster, actions, client=client)
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Failed"
    assert gauges("er-failed") == {"Failed": 1.0}
    await r.reconcile(REQ)  # terminal: the current phase again, still counted once
    assert gauges("er-failed") == {"Failed": 1.0}
    await client.delete(runner(cluster))
    await r.reconcile(REQ)
    assert gauges("er-failed") == {"Failed": 0.0}
    assert r.phase_metrics.phase_of(NS, NAME) is None


async def test_outdated_transition_moves_the_runner_from_pending(cluster: FakeCluster, actions: FakeActions) -> None:
    """updateRunStatusFromPod writes and publishes Pending; exit code 7 (markAsOutdated) moves it to outdated."""
    cluster.put(runner_object("er-outdated"))
    r = make_reconciler(cluster, actions)
    await r.reconcile(REQ)
    assert gauges("er-outdated") == {}
    pod_status(cluster, **RUNNING_CONTAINER)
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Pending"
    assert gauges("er-outdated") == {"Pending": 1.0}
    pod_status(cluster, **terminated(7))
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Outdated"
    assert gauges("er-outdated") == {"Pending": 0.0, "Outdated": 1.0}


async def test_succeeded_transition_then_the_finalizing_reconcile_removes_it(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """Exit code 0: markAsSucceeded publishes Succeeded, deletes the runner and finalizes it in the same reconcile."""
    cluster.put(runner_object("er-succeeded"))
    r = make_reconciler(cluster, actions)
    await r.reconcile(REQ)
    pod_status(cluster, **RUNNING_CONTAINER)
    await r.reconcile(REQ)
    published: list[str] = []
    publish = r.phase_metrics.publish
    r.phase_metrics.publish = lambda obj, phase: (published.append(phase), publish(obj, phase))[1]  # type: ignore[method-assign]
    pod_status(cluster, **terminated(0))
    await r.reconcile(REQ)
    assert published[-2:] == ["Succeeded", ""]
    assert gauges("er-succeeded") == {"Pending": 0.0, "Succeeded": 0.0}


async def test_a_runner_gone_without_its_finalizers_running_leaves_the_gauges(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """Python addition: the finalizers were stripped by hand, so the NotFound reconcile removes the runner."""
    cluster.put(runner_object("er-vanished"))
    r = make_reconciler(cluster, actions)
    await r.reconcile(REQ)
    pod_status(cluster, **RUNNING_CONTAINER)
    await r.reconcile(REQ)
    assert gauges("er-vanished") == {"Pending": 1.0}
    del cluster.store[("EphemeralRunner", NS, NAME)]
    await r.reconcile(REQ)
    assert gauges("er-vanished") == {"Pending": 0.0}


async def test_a_phase_written_by_someone_else_reaches_the_gauge_on_the_next_reconcile(
    cluster: FakeCluster, actions: FakeActions
) -> None:
    """The listener writes Running; the reconcile that follows publishes the current phase."""
    cluster.put(runner_object("er-running"))
    r = make_reconciler(cluster, actions)
    await r.reconcile(REQ)
    pod_status(cluster, **RUNNING_CONTAINER)
    await r.reconcile(REQ)
    cluster.set_status("EphemeralRunner", NS, NAME, {**runner(cluster)["status"], "phase": "Running", "jobId": "j"})
    await r.reconcile(REQ)
    assert gauges("er-running") == {"Pending": 0.0, "Running": 1.0}


@pytest.mark.parametrize("exit_code", [7, 0])
async def test_publish_metrics_off_publishes_nothing(
    cluster: FakeCluster, actions: FakeActions, exit_code: int
) -> None:
    scale_set = f"er-off-{exit_code}"
    cluster.put(runner_object(scale_set))
    r = make_reconciler(cluster, actions, publish=False)
    await r.reconcile(REQ)
    pod_status(cluster, **RUNNING_CONTAINER)
    await r.reconcile(REQ)
    assert runner(cluster)["status"]["phase"] == "Pending"
    pod_status(cluster, **terminated(exit_code))
    await r.reconcile(REQ)
    await r.reconcile(REQ)
    assert gauges(scale_set) == {}
    assert r.phase_metrics.phase_of(NS, NAME) is None


def test_arc_controller_publishes_when_metrics_are_served() -> None:
    env = {"CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems", "CONTROLLER_MANAGER_CONTAINER_IMAGE": "img:1"}
    served = parse_manager_options(["--auto-scaling-runner-set-only"], env)
    assert controllers_options(served, version="v").publish_metrics is True
    off = parse_manager_options(["--auto-scaling-runner-set-only", "--metrics-addr=0"], env)
    assert controllers_options(off, version="v").publish_metrics is False
