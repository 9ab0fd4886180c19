"""A stopped listener still deletes its proxy secret after the proxy left its spec.

Notes: docs/porting-notes.md, AutoscalingListenerReconciler.cleanupResources.

Upstream: controllers/actions.github.com/autoscalinglistener_proxy_cleanup_test.go @ 142132e5.
The proxy secret is owned by the listener, so only deleting the listener would collect it; a
parked (Stopped) listener is kept, which leaves cleanupResources as the one place that removes
it. Its name derives from the listener, so cleanup must not consult ``spec.proxy``: a parked
listener's spec follows ARS edits in place, and a proxy removed meanwhile would otherwise leave
the credentials behind for good.

Mutation check: guarding the proxy-secret deletion in ``_cleanup_resources`` with
``if spec.get("proxy")`` fails both tests.
"""

from __future__ import annotations

from typing import Any

from arc_controllers.api.v1alpha1 import AUTOSCALING_LISTENER, SECRET
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.controllers.autoscalinglistener import AutoscalingListenerReconciler
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Request
from reconcilekit.testing import FakeClient

NAMESPACE = "arc-system"
LISTENER_FINALIZER = "autoscalinglistener.actions.github.com/finalizer"


async def _no_app_config(_: Any) -> AppConfig:
    raise AssertionError("a stopped listener never reads the GitHub config")


def _stopped_listener_without_proxy() -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "metadata": {"name": "test-listener", "namespace": NAMESPACE, "finalizers": [LISTENER_FINALIZER]},
        # The proxy was removed from the scale set after the secret was created, and the
        # parked listener already took that edit: no spec.proxy.
        "spec": {
            "autoscalingRunnerSetNamespace": "arc-runners",
            "autoscalingRunnerSetName": "test-ars",
            "phase": "Stopped",
        },
    }


def _proxy_secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "test-listener-proxy", "namespace": NAMESPACE},
        "data": {"password": "c2VjcmV0"},
    }


async def _proxy_secret_gone(client: FakeClient) -> bool:
    try:
        await client.get(SECRET, ObjectKey(NAMESPACE, "test-listener-proxy"))
    except NotFoundError:
        return True
    return False


# Upstream: TestCleanupResourcesDeletesTheProxySecretWithoutAskingTheSpec
async def test_cleanup_resources_deletes_the_proxy_secret_without_asking_the_spec() -> None:
    listener = _stopped_listener_without_proxy()
    client = FakeClient([listener, _proxy_secret()])
    reconciler = AutoscalingListenerReconciler(client=client, app_config=_no_app_config)

    done, _ = await reconciler.cleanup.cleanup_resources(listener)

    assert done
    assert await _proxy_secret_gone(client), "the proxy secret goes with the listener's other resources"


# Python only: the same through Reconcile's Stopped branch (AutoscalingListenerReconciler.Reconcile step 5),
# owner scale set present.
async def test_stopped_listener_reconcile_deletes_the_orphaned_proxy_secret() -> None:
    ars = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {"name": "test-ars", "namespace": "arc-runners"},
        "spec": {"githubConfigUrl": "https://github.com/owner/repo", "githubConfigSecret": "s"},
    }
    client = FakeClient([ars, _stopped_listener_without_proxy(), _proxy_secret()])
    reconciler = AutoscalingListenerReconciler(client=client, app_config=_no_app_config)

    result = await reconciler.reconcile(Request(NAMESPACE, "test-listener"))

    assert not result.requeue_after
    assert await _proxy_secret_gone(client)
    kept = await client.get(AUTOSCALING_LISTENER, ObjectKey(NAMESPACE, "test-listener"))
    assert kept["spec"]["phase"] == "Stopped"
    assert LISTENER_FINALIZER in kept["metadata"]["finalizers"]
