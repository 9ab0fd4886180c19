"""The runner finalizer's container-hook cleanup: secrets labelled ``runner-pod=<runner>`` (spec §8).

Upstream: ephemeralrunner_controller_unit_test.go @191fac9e (controllers/actions.github.com), a spec
§12.5 "present, not read" file; only its linked-secret case maps onto the port.
"""

from __future__ import annotations

from typing import Any

from tests.arc_controllers.fakeapi import FakeCluster

from .conftest import FakeActions
from .test_ephemeralrunner import NAME, NS, reconciler


def _secret(name: str, namespace: str, runner_pod: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {"runner-pod": runner_pod}},
    }


# Upstream: TestCleanupRunnerLinkedSecretsDeletesByRunnerPodLabel
async def test_linked_secrets_are_deleted_by_the_runner_pod_label(cluster: FakeCluster, actions: FakeActions) -> None:
    cluster.put(_secret("linked-secret", NS, NAME))
    cluster.put(_secret("unrelated-secret", NS, "other-runner"))
    cluster.put(_secret("linked-secret-other-namespace", "other-namespace", NAME))
    runner = {"metadata": {"name": NAME, "namespace": NS}}
    await reconciler(cluster, actions, None).resources.cleanup_container_hook_resources(runner)
    left = {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in cluster.objects("Secret")}
    assert left == {(NS, "unrelated-secret"), ("other-namespace", "linked-secret-other-namespace")}
