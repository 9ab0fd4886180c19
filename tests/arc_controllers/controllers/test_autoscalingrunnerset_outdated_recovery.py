"""AutoscalingRunnerSet parking and recovery, one reconcile at a time on a fake API server.

Upstream (files docs/porting-notes.md lists under autoscalingrunnerset_controller_test.go, read for this port):
* autoscalingrunnerset_outdated_recovery_test.go @ 31ae8437 — the three Test* below and its
  ``outdatedFixture``: a scale set whose EphemeralRunnerSet reported Outdated for the revision it
  applied (revision 1, replicas 3, patch 7, runner image ``runner:rejected``).
* autoscalingrunnerset_listener_cache_test.go @ 86169456 — a stopped listener created while parked
  must not leave the desired listener switched off for later callers.
* autoscalinglistener_restart_convergence_test.go @ 142132e5 — a pod kept over a stop the listener
  controller never saw is rebuilt on restart only if its spec moved on.

As upstream, the Actions service is never called: the scale-set annotations are already there.
"""

from __future__ import annotations

import copy
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import AUTOSCALING_LISTENER, AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER_SET
from arc_controllers.controllers.autoscalingrunnerset import AutoscalingRunnerSetReconciler
from arc_controllers.controllers.helpers import listener_pod_spec_requires_recreation
from arc_controllers.resourcebuilder.listener import scale_set_listener_name
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from arc_controllers.resourcebuilder.runnerset import new_ephemeral_runner_set
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.reconcile import Request
from reconcilekit.testing import FakeClient

NAME = NAMESPACE = "test"
KEY = ObjectKey(NAMESPACE, NAME)
REVISION = 1
OPTIONS = RunnerBuildOptions()


async def _no_actions(_: Any) -> Any:
    raise AssertionError("the Actions service must not be called: the scale set is registered")


def _template(image: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "runner", "image": image}]}}


def _ars(phase: str, generation: int, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "uid": "ars-uid",
            "generation": generation,
            "finalizers": [constants.AUTOSCALING_RUNNER_SET_FINALIZER_NAME],
            "labels": {constants.LABEL_KEY_KUBERNETES_VERSION: OPTIONS.build_version},
            "annotations": {
                constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID: "1",
                constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME: "group",
                constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: NAME,
            },
        },
        "spec": {"githubConfigUrl": "https://github.com/owner/repo", "template": _template(image)},
        "status": {"phase": phase, "observedGeneration": generation - 1},
    }


def outdated_fixture(phase: str, generation: int, image: str) -> tuple[AutoscalingRunnerSetReconciler, FakeClient]:
    """Upstream's outdatedFixture: the set runs the rejected spec and reported Outdated for it."""
    ars = _ars(phase, generation, image)
    rejected = _ars(phase, generation, "runner:rejected")
    runner_set = new_ephemeral_runner_set(rejected, options=OPTIONS)
    runner_set["metadata"]["uid"] = "ers-uid"
    runner_set["spec"].update(replicas=3, patchID=7, actionableRevision=REVISION)
    runner_set["status"] = {"phase": "Outdated", "appliedActionableRevision": REVISION}
    client = FakeClient([ars, runner_set])
    reconciler = AutoscalingRunnerSetReconciler(
        client=client, actions=_no_actions, controller_namespace=NAMESPACE, default_listener_image="listener:image"
    )
    return reconciler, client


# Upstream: TestAutoscalingRunnerSetParksFirstRejection
async def test_parks_first_rejection() -> None:
    reconciler, client = outdated_fixture("Pending", 2, "runner:rejected")

    await reconciler.reconcile(Request(NAMESPACE, NAME))

    ars = await client.get(AUTOSCALING_RUNNER_SET, KEY)
    assert ars["status"]["phase"] == "Outdated"
    runner_set = await client.get(EPHEMERAL_RUNNER_SET, KEY)
    assert runner_set["spec"]["actionableRevision"] == REVISION
    assert runner_set["spec"]["replicas"] == 0
    assert runner_set["spec"]["patchID"] == 0


# Upstream: TestAutoscalingRunnerSetStaysOutdatedWithoutRunnerSpecChange
async def test_stays_outdated_without_runner_spec_change() -> None:
    reconciler, client = outdated_fixture("Outdated", 5, "runner:rejected")

    await reconciler.reconcile(Request(NAMESPACE, NAME))

    ars = await client.get(AUTOSCALING_RUNNER_SET, KEY)
    assert ars["status"]["phase"] == "Outdated"
    runner_set = await client.get(EPHEMERAL_RUNNER_SET, KEY)
    assert runner_set["spec"]["actionableRevision"] == REVISION, "the rejected runner spec must not be retried"
    # Python only: not even for a moment (an un-park that step 10 parks again would write Pending, then Outdated)
    assert _status_writes(client) == 0


def _status_writes(client: FakeClient) -> int:
    return sum(
        1
        for r in client.requests
        if r.kind == "AutoscalingRunnerSet" and r.subresource == "status" and r.verb in ("patch", "update")
    )


# Upstream: TestAutoscalingRunnerSetRecoversOnRunnerSpecChange
async def test_recovers_on_runner_spec_change() -> None:
    reconciler, client = outdated_fixture("Outdated", 5, "runner:fixed")

    await reconciler.reconcile(Request(NAMESPACE, NAME))

    ars = await client.get(AUTOSCALING_RUNNER_SET, KEY)
    assert ars["status"]["phase"] == "Pending"
    runner_set = await client.get(EPHEMERAL_RUNNER_SET, KEY)
    assert runner_set["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["image"] == "runner:fixed"
    assert runner_set["spec"]["actionableRevision"] > REVISION, "the failed runners must become stale"


# Upstream: TestCreatingAStoppedListenerDoesNotPoisonTheResourceCache (Go's cache hands out a shared pointer; here
#   the desired listener is rebuilt per call, and this pins that stamping Stopped on one copy reaches no other)
async def test_creating_a_stopped_listener_does_not_poison_the_desired_listener() -> None:
    reconciler, client = outdated_fixture("Outdated", 5, "runner:rejected")
    ars = await client.get(AUTOSCALING_RUNNER_SET, KEY)
    runner_set = await client.get(EPHEMERAL_RUNNER_SET, KEY)
    first = reconciler.listeners.desired(ars, runner_set)
    before = copy.deepcopy(first)

    await reconciler.parking.create_stopped_listener(ars, runner_set)

    created = await client.get(AUTOSCALING_LISTENER, ObjectKey(NAMESPACE, scale_set_listener_name(ars)))
    assert created["spec"]["phase"] == "Stopped"
    assert first == before
    again = reconciler.listeners.desired(ars, runner_set)
    assert "phase" not in again["spec"], "the listener every other caller derives must not be switched off"


# Upstream: TestAStoppedListenerThatKeptItsPodStillConvergesOnRestart
def test_a_stopped_listener_that_kept_its_pod_still_converges_on_restart() -> None:
    current = {
        "metadata": {},
        "spec": {
            "containers": [
                {"name": "listener", "image": "listener:image", "env": [{"name": "MIN_RUNNERS", "value": "1"}]}
            ]
        },
    }
    desired = copy.deepcopy(current)
    desired["spec"]["containers"][0]["env"][0]["value"] = "2"

    assert listener_pod_spec_requires_recreation(current, desired), "a pod the spec moved past must be rebuilt"
    assert not listener_pod_spec_requires_recreation(current, copy.deepcopy(current)), "a matching pod is kept"
