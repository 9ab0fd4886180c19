"""Unit tests for the listener and runner-set builders (no API server).

Upstream: controllers/actions.github.com/resourcebuilder_test.go (TestLabelPropagation,
TestGitHubURLTrimLabelValues, TestMetadataPropagation, TestMergeListenerPodWithTemplate).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.resourcebuilder.labels import filter_and_merge_labels, merge_annotations, trim_label_value
from arc_controllers.resourcebuilder.listener import (
    ListenerBuildOptions,
    ListenerMetricsServerConfig,
    new_autoscaling_listener,
    new_scale_set_listener_config,
    new_scale_set_listener_pod,
    new_scale_set_listener_role,
    new_scale_set_listener_role_binding,
    new_scale_set_listener_service_account,
    scale_set_listener_name,
)
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from arc_controllers.resourcebuilder.runnerset import new_ephemeral_runner_set

OPTIONS = ListenerBuildOptions(exclude_label_propagation_prefixes=("argocd.argoproj.io/",))


def ars(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": "test-scale-set",
            "namespace": "test-ns",
            "uid": "ars-uid",
            "generation": 3,
            "labels": {
                "purpose": "test",
                "app.kubernetes.io/version": "0.14.2",
                "argocd.argoproj.io/instance": "some-argo-app",
            },
            "annotations": {
                "runner-scale-set-id": "1",
                "actions.github.com/runner-group-name": "default",
                "actions.github.com/runner-scale-set-name": "test-scale-set",
            },
        },
        "spec": {
            "githubConfigUrl": "https://github.com/org/repo",
            "githubConfigSecret": "secret",
            "template": {"spec": {"containers": [{"name": "runner", "image": "runner"}]}},
            **spec,
        },
    }


# Upstream: TestLabelPropagation
def test_label_propagation_to_runner_set_and_listener() -> None:
    a = ars()
    ers = new_ephemeral_runner_set(
        a, options=RunnerBuildOptions(exclude_label_propagation_prefixes=("argocd.argoproj.io/",))
    )
    labels = ers["metadata"]["labels"]
    assert labels["app.kubernetes.io/part-of"] == "gha-runner-scale-set"
    assert labels["app.kubernetes.io/component"] == "runner-set"
    assert labels["app.kubernetes.io/version"] == "0.14.2"
    assert labels["actions.github.com/scale-set-name"] == "test-scale-set"
    assert labels["actions.github.com/scale-set-namespace"] == "test-ns"
    assert labels["actions.github.com/organization"] == "org"
    assert labels["actions.github.com/repository"] == "repo"
    assert labels["purpose"] == "test"
    assert "argocd.argoproj.io/instance" not in labels
    assert ers["metadata"]["annotations"]["actions.github.com/autoscaling-runner-set-generation"] == "3"
    assert ers["metadata"]["ownerReferences"][0] == {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "name": "test-scale-set",
        "uid": "ars-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }

    listener = new_autoscaling_listener(a, ers, namespace="arc-system", image="img", options=OPTIONS)
    labels = listener["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "runner-scale-set-listener"
    assert labels["purpose"] == "test"
    assert "argocd.argoproj.io/instance" not in labels
    assert "ownerReferences" not in listener["metadata"]
    assert listener["spec"]["minRunners"] == 0
    assert listener["spec"]["maxRunners"] == 2147483647
    assert "phase" not in listener["spec"]


def test_listener_name_hashes_namespace_group_and_url() -> None:
    a = ars()
    name = scale_set_listener_name(a)
    assert name.startswith("test-scale-set-")
    assert name.endswith("-listener")
    assert len(name) == len("test-scale-set-") + 8 + len("-listener")
    assert scale_set_listener_name(ars(runnerGroup="other")) != name
    assert scale_set_listener_name(ars()) == name


# Upstream: TestGitHubURLTrimLabelValues
def test_trim_label_value() -> None:
    assert trim_label_value("a" * 64) == "a" * 58 + "-trim"
    assert trim_label_value("-org_.") == "org"
    assert trim_label_value("a" * 63) == "a" * 63


# Upstream: TestMergeAnnotations (aliasing only; the full table is in test_metadata.py)
def test_merge_helpers_never_alias() -> None:
    base = {"a": "1"}
    merged = merge_annotations(base, {"b": "2"})
    assert merged == {"a": "1", "b": "2"}
    assert merged is not base
    assert base == {"a": "1"}
    assert merge_annotations(None, None) is None
    assert merge_annotations(None, {}) == {}
    assert filter_and_merge_labels(None, None) is None
    assert filter_and_merge_labels({"x/y": "1", "k": "v"}, {"x/z": "2"}, ("x/",)) == {"k": "v"}


# Upstream: TestMetadataPropagation (listener objects)
def test_metadata_propagation_to_listener_children() -> None:
    a = ars(
        listenerServiceAccountMetadata={"labels": {"sa": "1"}, "annotations": {"sa-a": "1"}},
        listenerRoleMetadata={"labels": {"role": "1"}, "annotations": {"role-a": "1"}},
        listenerRoleBindingMetadata={"labels": {"rb": "1"}, "annotations": {"rb-a": "1"}},
        listenerConfigSecretMetadata={"labels": {"cs": "1"}, "annotations": {"cs-a": "1"}},
        autoscalingListener={"labels": {"app.kubernetes.io/component": "user", "l": "1"}, "annotations": {"la": "1"}},
    )
    ers = new_ephemeral_runner_set(a, options=RunnerBuildOptions())
    listener = new_autoscaling_listener(a, ers, namespace="arc-system", image="img", options=OPTIONS)
    listener["metadata"]["uid"] = "listener-uid"
    assert listener["metadata"]["labels"]["app.kubernetes.io/component"] == "runner-scale-set-listener"  # derived wins
    assert listener["metadata"]["labels"]["l"] == "1"
    assert listener["metadata"]["annotations"] == {"la": "1"}

    sa = new_scale_set_listener_service_account(listener, options=OPTIONS)
    assert sa["metadata"]["labels"]["sa"] == "1"
    assert sa["metadata"]["annotations"] == {"sa-a": "1"}
    role = new_scale_set_listener_role(listener, options=OPTIONS)
    assert role["metadata"]["namespace"] == "test-ns"
    assert role["metadata"]["labels"]["auto-scaling-listener-name"] == listener["metadata"]["name"]
    assert role["metadata"]["labels"]["auto-scaling-listener-namespace"] == "arc-system"
    assert role["metadata"]["annotations"] == {"role-a": "1"}
    assert role["rules"][0]["resourceNames"] == ["test-scale-set"]
    assert role["rules"][1]["verbs"] == ["get", "patch"]
    binding = new_scale_set_listener_role_binding(listener, role, sa, options=OPTIONS)
    assert binding["metadata"]["annotations"] == {"rb-a": "1"}
    assert binding["roleRef"] == {"kind": "Role", "name": listener["metadata"]["name"]}
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "namespace": "arc-system", "name": listener["metadata"]["name"]}
    ]

    secret = new_scale_set_listener_config(listener, AppConfig(token="t"), None, "", options=OPTIONS)
    assert secret["metadata"]["labels"] == {"cs": "1"}
    assert secret["metadata"]["annotations"] == {"cs-a": "1"}
    config = json.loads(base64.b64decode(secret["data"]["config.json"]))
    assert config["github_token"] == "t"
    assert config["runner_scale_set_name"] == "test-scale-set"
    assert "github_app_id" not in config


def test_listener_config_validation() -> None:
    a = ars(maxRunners=1, minRunners=2)
    ers = new_ephemeral_runner_set(a, options=RunnerBuildOptions())
    listener = new_autoscaling_listener(a, ers, namespace="arc-system", image="img", options=OPTIONS)
    with pytest.raises(ValueError, match="MinRunners"):
        new_scale_set_listener_config(listener, AppConfig(token="t"), None, "", options=OPTIONS)
    bad = ars()
    bad["metadata"]["annotations"]["runner-scale-set-id"] = "x"
    with pytest.raises(ValueError, match="Atoi"):
        new_ephemeral_runner_set(bad, options=RunnerBuildOptions())


# Upstream: TestMergeListenerPodWithTemplate
def test_listener_pod_and_template_merge() -> None:
    template = {
        "metadata": {"labels": {"app.kubernetes.io/component": "user", "extra": "1"}},
        "spec": {
            "containers": [
                {"name": "listener", "image": "custom", "env": [{"name": "A", "value": "1"}], "args": ["--x"]},
                {"name": "side", "image": "busybox"},
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "serviceAccountName": "ignored",
        },
    }
    a = ars(listenerTemplate=template)
    ers = new_ephemeral_runner_set(a, options=RunnerBuildOptions())
    listener = new_autoscaling_listener(a, ers, namespace="arc-system", image="img", options=OPTIONS)
    listener["metadata"]["uid"] = "u"
    secret = {"metadata": {"name": "cfg", "resourceVersion": "42"}}
    sa = {"metadata": {"name": listener["metadata"]["name"], "namespace": "arc-system"}}
    pod = new_scale_set_listener_pod(
        listener, secret, sa, ListenerMetricsServerConfig(addr=":8080", endpoint="/metrics"), options=OPTIONS
    )
    assert pod["metadata"]["annotations"] == {"actions.github.com/listener-config-resource-version": "42"}
    assert pod["metadata"]["labels"]["app.kubernetes.io/component"] == "runner-scale-set-listener"
    assert pod["metadata"]["labels"]["extra"] == "1"
    listener_container, side = pod["spec"]["containers"]
    assert listener_container["image"] == "custom"
    assert listener_container["command"] == ["/ghalistener"]
    assert [e["name"] for e in listener_container["env"]] == ["LISTENER_CONFIG_PATH", "A"]
    assert listener_container["args"] == ["--x"]
    assert listener_container["ports"] == [{"containerPort": 8080, "protocol": "TCP", "name": "metrics"}]
    assert side["name"] == "side"
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["listener-config", "v"]
    assert pod["spec"]["serviceAccountName"] == listener["metadata"]["name"]
    assert "terminationGracePeriodSeconds" not in pod["spec"]  # replaced by the template's (unset)
    with pytest.raises(ValueError, match="metrics"):
        ListenerMetricsServerConfig(addr="nonsense", endpoint="/m").container_port()
