"""ARC's own example manifests (what the gha-runner-scale-set chart renders) reconcile to the child objects
the spec lists, checked field by field: names, labels, annotations, owner references, RBAC rules.

Spec: arc-controllers-spec.md §1, §3, §10.1-10.5; arc-manager-helm-rbac.md §4.1-4.6 (the chart's
objects) and §5.1-5.2 (what the controller creates per scale set). The manager runs with only
the charts' RBAC. Expected values are written out literally, not computed by the builder.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from string import Template
from typing import Any

import pytest
import yaml

from .scaleset_world import (
    ARS,
    ERS,
    LISTENER,
    LISTENER_IMAGE,
    POD,
    ROLE,
    ROLE_BINDING,
    SA,
    SECRET,
    World,
    eventually,
    world,
)

__all__ = ["world"]

EXAMPLES = Path(__file__).resolve().parents[1] / "testdata" / "arc-examples"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def _fnv8(text: str) -> str:
    """FNV-1a 32 of the UTF-8 bytes, decimal, safe-encoded, first 8 characters (hash.FNVHashString)."""
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(h))[:8]


def _chart_labels(name: str, namespace: str) -> dict[str, str]:
    return {
        "helm.sh/chart": "gha-rs-0.14.2",
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/version": "0.14.2",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/part-of": "gha-rs",
        "actions.github.com/scale-set-name": name,
        "actions.github.com/scale-set-namespace": namespace,
    }


async def _apply(w: World, file: str) -> dict[str, Any]:
    text = Template((EXAMPLES / file).read_text()).substitute(
        NAMESPACE=w.namespace,
        CONTROLLER_NAMESPACE=w.controller_namespace,
        CONFIG_URL=w.service.config_url(),
        TOKEN=w.service.github.pat,
        TOKEN_B64=base64.b64encode(w.service.github.pat.encode()).decode(),
    )
    ars: dict[str, Any] = {}
    for doc in yaml.safe_load_all(text):
        created = await w.client.create(doc)
        if doc["kind"] == "AutoscalingRunnerSet":
            ars = created
    return ars


def _owner(kind: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": kind,
            "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


LISTENER_RULES = [
    {"apiGroups": ["actions.github.com"], "resources": ["ephemeralrunnersets"], "verbs": ["patch"]},
    {"apiGroups": ["actions.github.com"], "resources": ["ephemeralrunners"], "verbs": ["get", "patch"]},
    {"apiGroups": ["actions.github.com"], "resources": ["ephemeralrunners/status"], "verbs": ["patch"]},
]


@pytest.mark.parametrize("example", ["default-mode", "kubernetes-mode"])
async def test_example_manifest_reconciles_to_the_listed_children(world: World, example: str) -> None:
    w = world
    name = "arc-runner-set" if example == "default-mode" else "k8s-runners"
    k8s = example == "kubernetes-mode"
    # the kubernetes-mode example sets listenerMetrics: run that one with the listener metrics server on
    await w.start(chart_rbac=True, **({"listener_metrics_addr": ":8080"} if k8s else {}))
    await _apply(w, f"{example}.yaml")

    async def running() -> dict[str, Any] | None:
        ars = await w.get(ARS, name)
        status = ars.get("status") or {}
        ok = status.get("phase") == "Running" and status.get("observedGeneration") == ars["metadata"]["generation"]
        return ars if ok else None

    ars = await eventually(running)
    ns, cns, org = w.namespace, w.controller_namespace, w.service.organization
    listener_name = f"{name}-{_fnv8(f'{ns}@@{w.service.config_url()}')}-listener"

    # the AutoscalingRunnerSet: finalizer, scale set annotations, URL label; the chart's keys untouched
    meta = ars["metadata"]
    assert meta["finalizers"] == ["autoscalingrunnerset.actions.github.com/finalizer"]
    scale_set_id = int(meta["annotations"]["runner-scale-set-id"])
    assert meta["annotations"]["actions.github.com/runner-scale-set-name"] == name
    assert meta["annotations"]["actions.github.com/runner-group-name"] == "default"
    assert meta["labels"] == {
        **_chart_labels(name, ns),
        "app.kubernetes.io/component": "autoscaling-runner-set",
        "actions.github.com/organization": org,
    }
    assert ars["spec"]["runnerScaleSetName"] == name
    scale_set = w.service.state.scale_set(scale_set_id)
    assert scale_set.name == name
    assert scale_set.disable_update is True
    expected_labels = [{"type": "System", "name": name}]
    if k8s:
        expected_labels += [{"type": "System", "name": "linux"}, {"type": "System", "name": "k8s"}]
    assert scale_set.labels == expected_labels

    # the EphemeralRunnerSet (§10.5)
    ers = await w.get(ERS, name)
    assert ers["metadata"]["ownerReferences"] == _owner("AutoscalingRunnerSet", ars)
    derived = {
        **_chart_labels(name, ns),
        "app.kubernetes.io/part-of": "gha-runner-scale-set",
        "app.kubernetes.io/component": "runner-set",
        "actions.github.com/organization": org,
    }
    assert ers["metadata"]["labels"] == derived
    ers_annotations = {
        "actions.github.com/runner-group-name": "default",
        "actions.github.com/runner-scale-set-name": name,
        "actions.github.com/autoscaling-runner-set-generation": str(meta["generation"]),
    }
    if k8s:
        ers_annotations["cost-center"] = "42"
    assert ers["metadata"]["annotations"] == ers_annotations
    runner_spec = ers["spec"]["ephemeralRunnerSpec"]
    assert runner_spec["runnerScaleSetId"] == scale_set_id
    assert runner_spec["githubConfigUrl"] == w.service.config_url()
    assert runner_spec["githubConfigSecret"] == f"{name}-gha-rs-github-secret"
    assert runner_spec["spec"] == ars["spec"]["template"]["spec"]
    assert ers["spec"].get("ephemeralRunnerMetadata") == ({"labels": {"runner-kind": "k8s"}} if k8s else None)

    # the AutoscalingListener (§10.1): controller namespace, hashed name, no owner
    listener = await w.get(LISTENER, listener_name, cns)
    assert "ownerReferences" not in listener["metadata"]
    listener_labels = {
        **_chart_labels(name, ns),
        "app.kubernetes.io/part-of": "gha-runner-scale-set",
        "app.kubernetes.io/component": "runner-scale-set-listener",
        "actions.github.com/organization": org,
    }
    if k8s:
        listener_labels["team"] = "platform"
    assert listener["metadata"]["labels"] == listener_labels
    assert listener["metadata"].get("annotations") == ({"owner": "platform@example.com"} if k8s else None)
    spec = listener["spec"]
    assert {k: spec[k] for k in ("githubConfigUrl", "githubConfigSecret", "runnerScaleSetId", "image")} == {
        "githubConfigUrl": w.service.config_url(),
        "githubConfigSecret": f"{name}-gha-rs-github-secret",
        "runnerScaleSetId": scale_set_id,
        "image": LISTENER_IMAGE,
    }
    assert (
        spec["autoscalingRunnerSetNamespace"],
        spec["autoscalingRunnerSetName"],
        spec["ephemeralRunnerSetName"],
    ) == (
        ns,
        name,
        name,
    )
    assert (spec["minRunners"], spec["maxRunners"]) == ((0, 20) if k8s else (1, 5))
    assert "phase" not in spec

    async def child(gvk: Any, obj_name: str, obj_ns: str) -> dict[str, Any]:
        async def found() -> dict[str, Any] | None:
            return await w.find(gvk, obj_name, obj_ns)

        result: dict[str, Any] = await eventually(found)
        return result

    # ServiceAccount (controller ns), Role and RoleBinding (scale set ns), config secret, pod (§10.3, §10.4)
    sa = await child(SA, listener_name, cns)
    assert sa["metadata"]["ownerReferences"] == _owner("AutoscalingListener", listener)
    assert sa["metadata"]["labels"] == listener_labels
    assert sa["metadata"].get("annotations") == ({"iam.example.com/role": "listener"} if k8s else None)

    rbac_labels = {
        **listener_labels,
        "auto-scaling-listener-namespace": cns,
        "auto-scaling-listener-name": listener_name,
    }
    role = await child(ROLE, listener_name, ns)
    assert "ownerReferences" not in role["metadata"]
    assert role["metadata"]["labels"] == ({**rbac_labels, "audit": "true"} if k8s else rbac_labels)
    rules = json.loads(json.dumps(LISTENER_RULES))
    rules[0]["resourceNames"] = [name]
    assert role["rules"] == rules

    binding = await child(ROLE_BINDING, listener_name, ns)
    assert "ownerReferences" not in binding["metadata"]
    assert binding["metadata"]["labels"] == rbac_labels
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": listener_name}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": listener_name, "namespace": cns}]

    secret = await child(SECRET, f"{listener_name}-config", cns)
    assert secret["metadata"]["ownerReferences"] == _owner("AutoscalingListener", listener)
    assert secret["metadata"].get("labels") == ({"secret-kind": "listener-config"} if k8s else None)
    config = json.loads(base64.b64decode(secret["data"]["config.json"]))
    assert config["runner_scale_set_id"] == scale_set_id
    assert config["ephemeral_runner_set_namespace"] == ns
    assert config["ephemeral_runner_set_name"] == name
    assert config["runner_scale_set_name"] == name
    assert config["github_token"] == w.service.github.pat
    assert config.get("metrics") == (ars["spec"]["listenerMetrics"] if k8s else None)

    pod = await child(POD, listener_name, cns)
    assert pod["metadata"]["ownerReferences"] == _owner("AutoscalingListener", listener)
    assert pod["metadata"]["labels"] == listener_labels
    assert pod["metadata"]["annotations"] == {
        "actions.github.com/listener-config-resource-version": (await w.get(SECRET, f"{listener_name}-config", cns))[
            "metadata"
        ]["resourceVersion"]
    }
    # §10.3 pod spec, every field the builder sets (no listenerTemplate, no proxy; a metrics port only with metrics on);
    # the API server's defaults (dnsPolicy, schedulerName, terminationMessage*, imagePullPolicy, the token
    # projection) are not the builder's and are left out of the comparison
    pod_spec = pod["spec"]
    assert pod_spec["serviceAccountName"] == listener_name
    assert pod_spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod_spec["restartPolicy"] == "Never"
    assert pod_spec["terminationGracePeriodSeconds"] == 60
    assert "imagePullSecrets" not in pod_spec
    assert [c["name"] for c in pod_spec["containers"]] == ["listener"]
    container = pod_spec["containers"][0]
    assert container["image"] == LISTENER_IMAGE
    assert container["command"] == ["/ghalistener"]
    assert "args" not in container
    assert container["env"] == [{"name": "LISTENER_CONFIG_PATH", "value": "/etc/gha-listener/config.json"}]
    if k8s:
        assert container["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]
    else:
        assert "ports" not in container
    mounts = [m for m in container["volumeMounts"] if m["name"] == "listener-config"]
    assert mounts == [{"name": "listener-config", "mountPath": "/etc/gha-listener", "readOnly": True}]
    assert pod_spec["volumes"][0] == {
        "name": "listener-config",
        "secret": {"secretName": f"{listener_name}-config", "defaultMode": 420},
    }
    assert pod["metadata"]["ownerReferences"][0]["controller"] is True

    # deleting the scale set releases every chart object's cleanup-protection finalizer (§5.9)
    await w.client.delete(ars)
    chart_objects = [
        (SECRET, f"{name}-gha-rs-github-secret"),
        (ROLE, f"{name}-gha-rs-manager"),
        (ROLE_BINDING, f"{name}-gha-rs-manager"),
    ]
    chart_objects += (
        [
            (SA, f"{name}-gha-rs-kube-mode"),
            (ROLE, f"{name}-gha-rs-kube-mode"),
            (ROLE_BINDING, f"{name}-gha-rs-kube-mode"),
        ]
        if k8s
        else [(SA, f"{name}-gha-rs-no-permission")]
    )

    async def released() -> bool:
        if await w.find(ARS, name) is not None:
            return False
        for gvk, obj_name in chart_objects:
            obj = await w.get(gvk, obj_name)
            if obj["metadata"].get("finalizers"):
                return False
        return True

    await eventually(released)
    assert scale_set_id not in w.service.state.scale_sets
