"""AutoscalingListener controller on a real API server.

Upstream: controllers/actions.github.com/autoscalinglistener_controller_test.go (docs/porting-notes.md).
As upstream, only the listener controller runs; the test creates the AutoscalingRunnerSet
and the AutoscalingListener itself. No kubelet: pod statuses are written by the test.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from reconcilekit.errors import ForbiddenError
from reconcilekit.testing import InterceptorClient
from reconcilekit.testing.faults import Call

from .scaleset_world import (
    CONFIG_MAP,
    LISTENER,
    POD,
    ROLE,
    ROLE_BINDING,
    SA,
    SECRET,
    World,
    consistently,
    eventually,
    world,
)

__all__ = ["world"]

LISTENER_FINALIZER = "autoscalinglistener.actions.github.com/finalizer"
IMAGE = "ghcr.io/owner/image:latest"
CONFIG_VERSION = "actions.github.com/listener-config-resource-version"


async def setup(
    w: World, *, listener_spec: dict[str, Any] | None = None, ars_spec: dict[str, Any] | None = None, tls: bool = False
) -> dict[str, Any]:
    """Upstream's BeforeEach: an AutoscalingRunnerSet and its AutoscalingListener, listener controller only.

    The scale set is registered on the fake service: a dead listener pod has its id looked up
    there (ARC #4370), and an id the service does not know hands the listener back.
    """
    await w.start(enabled=("autoscalinglistener",), tls=tls)
    scale_set_id = w.service.state.create_scale_set({"name": w.name}).id
    ars = w.ars(**(ars_spec or {}))
    ars["metadata"]["annotations"] = {"runner-scale-set-id": str(scale_set_id)}
    await w.client.create(ars)
    spec = {
        "githubConfigUrl": w.service.config_url(),
        "githubConfigSecret": "github-config-secret",
        "runnerScaleSetId": scale_set_id,
        "autoscalingRunnerSetNamespace": w.namespace,
        "autoscalingRunnerSetName": w.name,
        "ephemeralRunnerSetName": "test-ers",
        "maxRunners": 10,
        "minRunners": 1,
        "image": IMAGE,
    }
    spec.update(listener_spec or {})
    listener = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingListener",
        "metadata": {"name": "test-asl", "namespace": w.controller_namespace, "labels": {"app": "listener"}},
        "spec": spec,
    }
    created: dict[str, Any] = await w.client.create(listener)
    return created


async def child(w: World, gvk: Any, name: str = "test-asl", namespace: str | None = None) -> dict[str, Any]:
    ns = namespace or w.controller_namespace

    async def found() -> dict[str, Any] | None:
        return await w.find(gvk, name, ns)

    result: dict[str, Any] = await eventually(found)
    return result


def config_json(secret: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(base64.b64decode(secret["data"]["config.json"]))
    return loaded


# Upstream: Describe "Test AutoScalingListener controller" / Context "When creating a new AutoScalingListener"
#   It "It should create/add all required resources for a new AutoScalingListener (finalizer, secret, service account,
#   role, rolebinding, pod)"
async def test_creates_all_required_resources(world: World) -> None:
    w = world
    listener = await setup(w)

    async def finalized() -> bool:
        current = await w.get(LISTENER, "test-asl", w.controller_namespace)
        return LISTENER_FINALIZER in (current["metadata"].get("finalizers") or [])

    await eventually(finalized)
    secret = await child(w, SECRET, "test-asl-config")
    assert secret["metadata"]["ownerReferences"][0]["uid"] == listener["metadata"]["uid"]
    config = config_json(secret)
    assert config["configure_url"] == w.service.config_url()
    assert config["ephemeral_runner_set_namespace"] == w.namespace
    assert config["ephemeral_runner_set_name"] == "test-ers"
    scale_set_id = listener["spec"]["runnerScaleSetId"]
    assert (config["min_runners"], config["max_runners"], config["runner_scale_set_id"]) == (1, 10, scale_set_id)
    assert config["runner_scale_set_name"] == w.name
    assert config["github_token"] == w.service.github.pat
    assert (config["log_level"], config["log_format"]) == ("debug", "text")

    sa = await child(w, SA)
    assert sa["metadata"]["ownerReferences"][0]["kind"] == "AutoscalingListener"
    assert sa["metadata"]["labels"]["actions.github.com/scale-set-name"] == w.name
    role = await child(w, ROLE, namespace=w.namespace)
    assert not role["metadata"].get("ownerReferences")
    assert role["metadata"]["labels"]["auto-scaling-listener-name"] == "test-asl"
    assert role["metadata"]["labels"]["auto-scaling-listener-namespace"] == w.controller_namespace
    assert role["rules"] == [
        {
            "apiGroups": ["actions.github.com"],
            "resources": ["ephemeralrunnersets"],
            "resourceNames": ["test-ers"],
            "verbs": ["patch"],
        },
        {"apiGroups": ["actions.github.com"], "resources": ["ephemeralrunners"], "verbs": ["get", "patch"]},
        {"apiGroups": ["actions.github.com"], "resources": ["ephemeralrunners/status"], "verbs": ["patch"]},
    ]
    binding = await child(w, ROLE_BINDING, namespace=w.namespace)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "test-asl"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "test-asl", "namespace": w.controller_namespace}]

    pod = await child(w, POD)
    assert pod["metadata"]["ownerReferences"][0]["uid"] == listener["metadata"]["uid"]
    assert pod["metadata"]["labels"]["app"] == "listener"
    assert (
        pod["metadata"]["annotations"]["actions.github.com/listener-config-resource-version"]
        == ((await w.get(SECRET, "test-asl-config", w.controller_namespace))["metadata"]["resourceVersion"])
    )
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "test-asl"
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["restartPolicy"] == "Never"
    assert spec["terminationGracePeriodSeconds"] == 60
    (container,) = spec["containers"]
    assert container["name"] == "listener"
    assert container["image"] == IMAGE
    assert container["command"] == ["/ghalistener"]
    assert container["env"] == [{"name": "LISTENER_CONFIG_PATH", "value": "/etc/gha-listener/config.json"}]
    assert container["volumeMounts"] == [
        {"name": "listener-config", "mountPath": "/etc/gha-listener", "readOnly": True}
    ]
    assert spec["volumes"][0]["secret"]["secretName"] == "test-asl-config"


# Upstream: Context "When deleting a new AutoScalingListener"
#   It "It should cleanup all resources for a deleting AutoScalingListener before removing it"
async def test_deletion_cleans_up_everything_first(world: World) -> None:
    w = world
    await setup(w)
    await child(w, POD)
    await w.client.delete(await w.get(LISTENER, "test-asl", w.controller_namespace))

    async def gone() -> bool:
        checks = [
            await w.find(POD, "test-asl", w.controller_namespace),
            await w.find(SECRET, "test-asl-config", w.controller_namespace),
            await w.find(ROLE_BINDING, "test-asl"),
            await w.find(ROLE, "test-asl"),
            await w.find(SA, "test-asl", w.controller_namespace),
            await w.find(LISTENER, "test-asl", w.controller_namespace),
        ]
        return all(item is None for item in checks)

    await eventually(gone)


# Upstream: Context "React to changes in the AutoScalingListener"
#   It "It should update role to match EphemeralRunnerSet"
async def test_role_follows_the_runner_set_name(world: World) -> None:
    w = world
    listener = await setup(w)
    await child(w, POD)
    await w.patch(listener, {"spec": {"ephemeralRunnerSetName": "test-ers-2"}})

    async def updated() -> bool:
        role = await w.get(ROLE, "test-asl")
        return bool(role["rules"][0]["resourceNames"] == ["test-ers-2"])

    await eventually(updated)


# Upstream: It "propagates updated listener metadata to owned resources"
async def test_listener_metadata_reaches_owned_resources(world: World) -> None:
    w = world
    listener = await setup(w)
    await child(w, POD)
    await w.patch(listener, {"metadata": {"labels": {"team": "blue"}}})

    async def propagated() -> bool:
        for gvk, ns in (
            (SA, w.controller_namespace),
            (ROLE, w.namespace),
            (ROLE_BINDING, w.namespace),
            (POD, w.controller_namespace),
        ):
            obj = await w.get(gvk, "test-asl", ns)
            if (obj["metadata"].get("labels") or {}).get("team") != "blue":
                return False
        return True

    await eventually(propagated)


async def _terminate(w: World, pod: dict[str, Any], *, evicted: bool = False) -> None:
    if evicted:
        status: dict[str, Any] = {"phase": "Failed", "reason": "Evicted", "message": "node pressure"}
    else:
        status = {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "listener",
                    "image": IMAGE,
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 1, "reason": "Error"}},
                }
            ],
        }
    await w.patch(pod, {"status": status}, status=True)


async def _recreated(w: World, old_uid: str) -> dict[str, Any]:
    async def new_pod() -> dict[str, Any] | None:
        pod = await w.find(POD, "test-asl", w.controller_namespace)
        return pod if pod is not None and pod["metadata"]["uid"] != old_uid else None

    result: dict[str, Any] = await eventually(new_pod)
    return result


# Upstream: It "It should re-create pod but persist config secret whenever listener container is terminated"
async def test_terminated_container_recreates_pod_keeps_secret(world: World) -> None:
    w = world
    await setup(w)
    pod = await child(w, POD)
    secret = await child(w, SECRET, "test-asl-config")
    await _terminate(w, pod)
    await _recreated(w, pod["metadata"]["uid"])
    assert (await w.get(SECRET, "test-asl-config", w.controller_namespace))["metadata"]["uid"] == secret["metadata"][
        "uid"
    ]


# Upstream: Describe "Test AutoScalingListener customization" / Context "When AutoscalingListener pod has interuptions"
#   It "Should re-create pod when it is deleted"; It "Should re-create pod when the listener pod is terminated";
#   It "Should re-create pod when the listener pod is evicted"
async def test_pod_interruptions_recreate_the_pod(world: World) -> None:
    w = world
    await setup(w)
    pod = await child(w, POD)
    await w.client.delete(pod)
    pod = await _recreated(w, pod["metadata"]["uid"])
    await _terminate(w, pod)
    pod = await _recreated(w, pod["metadata"]["uid"])
    await _terminate(w, pod, evicted=True)
    await _recreated(w, pod["metadata"]["uid"])


# Upstream: Describe "Test AutoScalingListener customization" / Context "When creating a new AutoScalingListener"
#   It "It should create customized pod with applied configuration"; Describe "Test AutoScalingListener controller with
#   template modification" / It "Should create listener pod with modified spec"
async def test_listener_template_is_merged_into_the_pod(world: World) -> None:
    w = world
    template = {
        "metadata": {"labels": {"custom": "yes"}, "annotations": {"note": "x"}},
        "spec": {
            "containers": [
                {
                    "name": "listener",
                    "imagePullPolicy": "Always",
                    "env": [{"name": "EXTRA", "value": "1"}],
                    "resources": {"limits": {"cpu": "500m"}},
                },
                {"name": "sidecar", "image": "busybox"},
            ],
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        },
    }
    await setup(w, listener_spec={"template": template})
    pod = await child(w, POD)
    assert pod["metadata"]["labels"]["custom"] == "yes"
    assert pod["metadata"]["annotations"]["note"] == "x"
    listener_container, sidecar = pod["spec"]["containers"]
    assert listener_container["imagePullPolicy"] == "Always"
    assert listener_container["env"][-1] == {"name": "EXTRA", "value": "1"}
    assert listener_container["resources"]["limits"]["cpu"] == "500m"
    assert sidecar["name"] == "sidecar"
    # the API server's DefaultTolerationSeconds admission appends two more; ours comes first
    assert pod["spec"]["tolerations"][0] == {"key": "dedicated", "operator": "Exists"}
    uid = pod["metadata"]["uid"]

    async def kept() -> bool:
        current = await w.find(POD, "test-asl", w.controller_namespace)
        return current is not None and current["metadata"]["uid"] == uid

    await consistently(kept, duration=2.0)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 30  # template replaced ours (none → API default)


# Upstream: Describe "Test AutoScalingListener controller with proxy"
#   It "should create a secret in the listener namespace containing proxy details, use it to populate env vars on the
#   pod and should delete it as part of cleanup"
async def test_proxy_secret_env_and_cleanup(world: World) -> None:
    w = world
    await w.client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "proxy-credentials", "namespace": w.namespace},
            "data": {
                "username": base64.b64encode(b"test").decode(),
                "password": base64.b64encode(b"password").decode(),
            },
        }
    )
    proxy = {
        "http": {"url": "http://localhost:8080", "credentialSecretRef": "proxy-credentials"},
        "https": {"url": "https://localhost:8443", "credentialSecretRef": "proxy-credentials"},
        "noProxy": ["example.com", "example.org"],
    }
    listener = await setup(w, listener_spec={"proxy": proxy})
    secret = await child(w, SECRET, "test-asl-proxy")
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {
        "http_proxy": "http://test:password@localhost:8080",
        "https_proxy": "https://test:password@localhost:8443",
        "no_proxy": "example.com,example.org",
    }
    pod = await child(w, POD)
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    for key in ("http_proxy", "https_proxy", "no_proxy"):
        assert env[key]["valueFrom"]["secretKeyRef"] == {"name": "test-asl-proxy", "key": key}
    await w.client.delete(listener)

    async def gone() -> bool:
        return await w.find(SECRET, "test-asl-proxy", w.controller_namespace) is None

    await eventually(gone)


# Upstream: Describe "Test GitHub Server TLS configuration" / Context "When creating a new AutoScalingListener"
#   It "It should set the certificates in the config of the pod"
async def test_tls_certificate_lands_in_the_config(world: World) -> None:
    w = world
    pem = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
    await w.client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "root-ca", "namespace": w.namespace},
            "data": {"cert.pem": pem},
        }
    )
    tls = {"certificateFrom": {"configMapKeyRef": {"name": "root-ca", "key": "cert.pem"}}}
    await setup(w, listener_spec={"githubServerTLS": tls}, ars_spec={"githubServerTLS": tls}, tls=True)
    secret = await child(w, SECRET, "test-asl-config")
    assert config_json(secret)["server_root_ca"] == pem
    assert CONFIG_MAP.kind == "ConfigMap"


# Upstream: Describe "Test AutoscalingRunnerSet outdated lifecycle" (listener side, #4660): a Stopped listener runs
#   nothing but keeps its object; back to Running it is rebuilt
async def test_stopped_listener_removes_children_and_keeps_object(world: World) -> None:
    w = world
    listener = await setup(w)
    await child(w, POD)
    listener = await w.patch(listener, {"spec": {"phase": "Stopped"}})

    async def stopped() -> bool:
        gone = [
            await w.find(POD, "test-asl", w.controller_namespace),
            await w.find(SECRET, "test-asl-config", w.controller_namespace),
            await w.find(ROLE, "test-asl"),
            await w.find(ROLE_BINDING, "test-asl"),
            await w.find(SA, "test-asl", w.controller_namespace),
        ]
        return all(item is None for item in gone)

    await eventually(stopped)
    kept = await w.get(LISTENER, "test-asl", w.controller_namespace)
    assert LISTENER_FINALIZER in kept["metadata"]["finalizers"]
    await w.patch(kept, {"spec": {"phase": "Running"}})
    await child(w, POD)


# Upstream: TestListenerRestoresMissingAnnotations (autoscalinglistener_metadata_test.go, #4689)
async def test_listener_restores_missing_annotations(world: World) -> None:
    w = world
    meta = {"annotations": {"required": "yes"}}
    listener = await setup(
        w,
        listener_spec={
            "serviceAccountMetadata": meta,
            "roleMetadata": meta,
            "roleBindingMetadata": meta,
            "configSecretMetadata": meta,
        },
    )
    pod = await child(w, POD)
    targets = [
        (SA, "test-asl", w.controller_namespace),
        (ROLE, "test-asl", w.namespace),
        (ROLE_BINDING, "test-asl", w.namespace),
        (SECRET, "test-asl-config", w.controller_namespace),
    ]
    for gvk, name, ns in targets:
        obj = await child(w, gvk, name, ns)
        assert obj["metadata"]["annotations"]["required"] == "yes"
        await w.patch(obj, {"metadata": {"annotations": {"required": None}}})
    await w.patch(pod, {"metadata": {"annotations": None}})
    # the secret is not watched: the pod's change (and the SA/role events) bring the listener back
    assert listener["metadata"]["name"] == "test-asl"

    async def restored() -> bool:
        for gvk, name, ns in targets:
            obj = await w.get(gvk, name, ns)
            if (obj["metadata"].get("annotations") or {}).get("required") != "yes":
                return False
        current = await w.find(POD, "test-asl", w.controller_namespace)
        return (
            current is not None
            and current["metadata"]["uid"] != pod["metadata"]["uid"]
            and bool(current["metadata"]["annotations"].get("actions.github.com/listener-config-resource-version"))
        )

    await eventually(restored)


def _pod_patches(recorder: InterceptorClient) -> list[str]:
    return [
        f"{c.namespace}/{c.name} {c.subresource}".strip()
        for c in recorder.calls
        if c.verb == "patch" and c.kind == "Pod"
    ]


def _refuse_pod_patch(call: Call) -> None:
    """What a Role without ``patch`` on pods gets from the API server: 403, for the pod itself (status is apart)."""
    if call.verb == "patch" and call.kind == "Pod" and not call.subresource:
        raise ForbiddenError(403, "Forbidden", f'pods "{call.name}" is forbidden: patch refused by the test')


async def _restart_behind(w: World, *, forbid_pod_patch: bool) -> InterceptorClient:
    """Stop the listener controller and start it again behind a client that records (and may refuse) calls."""
    await w.stop()
    recorders: list[InterceptorClient] = []

    def wrap(inner: Any) -> InterceptorClient:
        recorders.append(InterceptorClient(inner, before=_refuse_pod_patch if forbid_pod_patch else None))
        return recorders[-1]

    await w.start(enabled=("autoscalinglistener",), wrap_client=wrap)
    return recorders[0]


@pytest.mark.parametrize(
    ("dead", "stale", "forbid_pod_patch"),
    [
        ("evicted", "labels and config version", False),
        ("evicted", "labels and config version", True),
        ("terminated", "labels and config version", False),
        ("terminated", "labels and config version", True),
        ("evicted", "labels", True),
        ("terminated", "labels", True),
    ],
)
# Upstream: Describe "AutoscalingListener dead pod recovery" (#4680): an evicted pod and a pod whose listener container
#   terminated, each also carrying stale labels and a stale config-version annotation, are deleted and recreated,
#   never patched, also when pod patches are forbidden (upstream: a client interceptor; here the manager's client is an
#   InterceptorClient that answers a pod PATCH with 403, as RBAC would). The "labels" rows leave the config version
#   right, so only the dead-pod check (before the metadata patch since #4680) can save the pod from being patched.
async def test_dead_pod_with_stale_metadata_is_recreated_not_patched(
    world: World, dead: str, stale: str, forbid_pod_patch: bool
) -> None:
    w = world
    listener = await setup(w)
    pod = await child(w, POD)
    config_version = pod["metadata"]["annotations"][CONFIG_VERSION]
    metadata: dict[str, Any] = {"labels": {"app": "stale"}}
    if stale != "labels":
        metadata["annotations"] = {CONFIG_VERSION: "1"}
    # the dead pod and its stale metadata arrive together, while no controller runs
    await w.stop()
    pod = await w.patch(pod, {"metadata": metadata})
    await _terminate(w, pod, evicted=dead == "evicted")
    recorder = await _restart_behind(w, forbid_pod_patch=forbid_pod_patch)

    fresh = await _recreated(w, pod["metadata"]["uid"])
    assert fresh["metadata"]["labels"]["app"] == listener["metadata"]["labels"]["app"]
    assert fresh["metadata"]["annotations"][CONFIG_VERSION] == config_version
    assert _pod_patches(recorder) == []
    assert recorder.count("delete", "Pod") >= 1


# Python only: the positive control of the test above: a live pod with stale labels is patched (so the recorder does
#   see pod patches), and with pod patches refused it stays, unpatched and not deleted (patching is all it needs).
@pytest.mark.parametrize("forbid_pod_patch", [False, True])
async def test_live_pod_with_stale_labels_is_patched_in_place(world: World, forbid_pod_patch: bool) -> None:
    w = world
    await setup(w)
    pod = await child(w, POD)
    await w.stop()
    pod = await w.patch(pod, {"metadata": {"labels": {"app": "stale"}}})
    recorder = await _restart_behind(w, forbid_pod_patch=forbid_pod_patch)

    async def patch_sent() -> bool:
        return bool(_pod_patches(recorder))

    await eventually(patch_sent)
    now = await w.get(POD, "test-asl", w.controller_namespace)
    assert now["metadata"]["uid"] == pod["metadata"]["uid"]
    if not forbid_pod_patch:
        await eventually(lambda: _label_is(w, "listener"))
    assert recorder.count("delete", "Pod") == 0


async def _label_is(w: World, value: str) -> bool:
    pod = await w.get(POD, "test-asl", w.controller_namespace)
    return bool(pod["metadata"]["labels"].get("app") == value)


# Upstream: the listener reconciler's running-metric block (gha_controller_running_listeners)
async def test_running_listener_metric(world: World) -> None:
    from reconcilekit.metrics import REGISTRY

    w = world
    await setup(w)
    pod = await child(w, POD)
    running = {
        "name": "listener",
        "image": IMAGE,
        "imageID": "",
        "ready": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
    }
    await w.patch(pod, {"status": {"phase": "Running", "containerStatuses": [running]}}, status=True)
    labels = {
        "name": w.name,
        "namespace": w.namespace,
        "repository": "",
        "organization": w.service.organization,
        "enterprise": "",
    }

    async def up() -> bool:
        return REGISTRY.get_sample_value("gha_controller_running_listeners", labels) == 1.0

    await eventually(up)
    await w.client.delete(await w.get(POD, "test-asl", w.controller_namespace))

    async def down_then_recreated() -> bool:
        return REGISTRY.get_sample_value("gha_controller_running_listeners", labels) == 0.0

    await eventually(down_then_recreated)


async def test_crash_looping_listener_is_recreated_with_backoff_arc_4656(world: World) -> None:
    """Every listener pod dies 0.3 s after it appears (exit 1, finishedAt now), for 90 s.

    Reproduction of ARC #4656: before the fix 90 listener pods in 40 s. Expected: the dead
    pod is kept for 2 s, 4 s, 8 s, ... counted from finishedAt, so successive gaps never
    shrink, at most 6 pods in 90 s, and the failure count is in the listener's status.
    """
    w = world
    await setup(w)
    loop = asyncio.get_running_loop()
    end = loop.time() + 90.0
    seen: list[tuple[str, float]] = []
    while loop.time() < end:
        pod = await w.find(POD, "test-asl", w.controller_namespace)
        if pod is None or any(uid == pod["metadata"]["uid"] for uid, _ in seen):
            await asyncio.sleep(0.05)
            continue
        seen.append((pod["metadata"]["uid"], loop.time()))
        assert len(seen) <= 6, f"{len(seen)} listener pods within {loop.time() - end + 90.0:.1f} s"
        await asyncio.sleep(0.3)
        finished = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        terminated = {"exitCode": 1, "reason": "Error", "finishedAt": finished}
        status = {"phase": "Failed", "containerStatuses": [{"name": "listener", "image": IMAGE, "imageID": "",
                  "ready": False, "restartCount": 0, "state": {"terminated": terminated}}]}  # fmt: skip
        await w.patch(pod, {"status": status}, status=True)
    gaps = [later - earlier for (_, earlier), (_, later) in itertools.pairwise(seen)]
    assert len(seen) >= 4, f"the listener was not recreated: {len(seen)} pods"
    assert all(b >= a for a, b in itertools.pairwise(gaps)), f"a gap shrank: {gaps}"
    listener = await w.get(LISTENER, "test-asl", w.controller_namespace)
    assert (listener.get("status") or {}).get("failureCount", 0) >= len(seen) - 1
