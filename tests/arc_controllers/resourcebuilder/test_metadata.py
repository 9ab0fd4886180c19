"""Metadata through every builder: annotation merging, user metadata, the legacy integrity hash.

Upstream: resourcebuilder_metadata_test.go (86169456: TestMergeAnnotations,
TestMetadataPropagationWithoutAnnotations), resourcebuilder_test.go (TestMetadataPropagation,
ported from the June file without its integrity-hash assertion, which newer ARC dropped) and
resourcebuilder_legacy_annotation_test.go (752765e5).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from arc_controllers import constants
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.resourcebuilder.labels import merge_annotations
from arc_controllers.resourcebuilder.listener import (
    ListenerBuildOptions,
    new_autoscaling_listener,
    new_scale_set_listener_config,
    new_scale_set_listener_pod,
    new_scale_set_listener_role,
    new_scale_set_listener_role_binding,
    new_scale_set_listener_service_account,
)
from arc_controllers.resourcebuilder.runner import (
    JitRunnerConfig,
    RunnerBuildOptions,
    new_ephemeral_runner,
    new_ephemeral_runner_jit_secret,
    new_ephemeral_runner_pod,
    new_ephemeral_runner_set_proxy_secret,
)
from arc_controllers.resourcebuilder.runnerset import new_ephemeral_runner_set

LEGACY_INTEGRITY_HASH = "actions.github.com/integrity-hash"
"""The annotation older controllers stamped; spelled out because its constant no longer exists."""

COMMON_LABEL_KEYS = (
    constants.LABEL_KEY_KUBERNETES_PART_OF,
    constants.LABEL_KEY_KUBERNETES_COMPONENT,
    constants.LABEL_KEY_KUBERNETES_VERSION,
    constants.LABEL_KEY_GITHUB_SCALE_SET_NAME,
    constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE,
    constants.LABEL_KEY_GITHUB_ENTERPRISE,
    constants.LABEL_KEY_GITHUB_ORGANIZATION,
    constants.LABEL_KEY_GITHUB_REPOSITORY,
)


# Upstream: TestMergeAnnotations
@pytest.mark.parametrize(
    ("base", "overwrite", "want"),
    [
        pytest.param(None, None, None, id="both nil"),
        pytest.param(None, {}, {}, id="nil base and empty overwrite"),
        pytest.param({}, None, {}, id="empty base and nil overwrite"),
        pytest.param({}, {}, {}, id="both empty"),
        pytest.param(None, {"generated": "value"}, {"generated": "value"}, id="nil base"),
        pytest.param({}, {"generated": "value"}, {"generated": "value"}, id="empty base"),
        pytest.param({"custom": "value"}, None, {"custom": "value"}, id="nil overwrite"),
        pytest.param({"custom": "value"}, {}, {"custom": "value"}, id="empty overwrite"),
        pytest.param(
            {"custom": "value", "reserved": "user"},
            {"generated": "value", "reserved": "controller"},
            {"custom": "value", "generated": "value", "reserved": "controller"},
            id="overwrite takes precedence",
        ),
    ],
)
def test_merge_annotations(
    base: dict[str, str] | None, overwrite: dict[str, str] | None, want: dict[str, str] | None
) -> None:
    """The overwrite wins, nil stays nil only when both are nil, and the result never aliases an input."""
    base_before, overwrite_before = copy.deepcopy(base), copy.deepcopy(overwrite)
    merged = merge_annotations(base, overwrite)
    assert merged == want
    assert (base, overwrite) == (base_before, overwrite_before)
    if merged is not None:
        for key in merged:
            merged[key] = "changed"
        merged["new"] = "value"
    assert base == base_before, "the result must not alias the base"
    assert overwrite == overwrite_before, "the result must not alias the overwrite"


def scale_set(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": "test-set",
            "namespace": "test-ns",
            "uid": "ars-uid",
            "generation": 7,
            "annotations": {
                constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID: "1",
                constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME: "test-group",
                constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: "test-set",
            },
        },
        "spec": {
            "githubConfigUrl": "https://github.com/org/repo",
            "template": {"spec": {"containers": [{"name": "runner", "image": "runner:latest"}]}},
            **spec,
        },
    }


METADATA_FIELDS = (
    "autoscalingListener",
    "listenerServiceAccountMetadata",
    "listenerRoleMetadata",
    "listenerRoleBindingMetadata",
    "listenerConfigSecretMetadata",
    "ephemeralRunnerSetMetadata",
    "ephemeralRunnerMetadata",
    "ephemeralRunnerConfigSecretMetadata",
)


def build_everything(
    ars: dict[str, Any], *, listener_options: ListenerBuildOptions, runner_options: RunnerBuildOptions
) -> dict[str, dict[str, Any]]:
    """Every object the four reconcilers build for one scale set, by a short name."""
    ers = new_ephemeral_runner_set(ars, options=runner_options)
    listener = new_autoscaling_listener(
        ars, ers, namespace=ars["metadata"]["namespace"], image="listener:latest", options=listener_options
    )
    listener["metadata"]["uid"] = "listener-uid"
    sa = new_scale_set_listener_service_account(listener, options=listener_options)
    role = new_scale_set_listener_role(listener, options=listener_options)
    binding = new_scale_set_listener_role_binding(listener, role, sa, options=listener_options)
    config = new_scale_set_listener_config(listener, AppConfig(token="test-token"), None, "", options=listener_options)
    config["metadata"]["resourceVersion"] = "1"
    listener_pod = new_scale_set_listener_pod(listener, config, sa, None, options=listener_options)
    ers["metadata"]["uid"] = "ers-uid"
    ers["spec"].update(patchID=3, actionableRevision=2)
    runner = new_ephemeral_runner(ers, options=runner_options)
    runner["metadata"].update(name="test-runner", uid="runner-uid")
    jit = new_ephemeral_runner_jit_secret(
        runner,
        JitRunnerConfig(encoded_jit_config="", runner_id=1, runner_name="test-runner", runner_scale_set_id=1),
        options=runner_options,
    )
    runner_pod = new_ephemeral_runner_pod(runner, jit, options=runner_options)
    return {
        "ers": ers,
        "listener": listener,
        "sa": sa,
        "role": role,
        "binding": binding,
        "config": config,
        "listener pod": listener_pod,
        "runner": runner,
        "jit": jit,
        "runner pod": runner_pod,
    }


def labels(obj: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = obj["metadata"].get("labels") or {}
    return found


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = obj["metadata"].get("annotations") or {}
    return found


# Upstream: TestMetadataPropagationWithoutAnnotations
@pytest.mark.parametrize(
    "user_annotations", [pytest.param(None, id="omitted annotations"), pytest.param({}, id="empty annotations")]
)
def test_metadata_propagation_without_annotations(user_annotations: dict[str, str] | None) -> None:
    """Labels-only user metadata reaches every built object, and the derived annotations are still there."""
    metadata: dict[str, Any] = {"labels": {"example.com/custom": "value"}}
    if user_annotations is not None:
        metadata["annotations"] = user_annotations
    ars = scale_set(**{field: copy.deepcopy(metadata) for field in METADATA_FIELDS})
    original = copy.deepcopy(ars)

    built = build_everything(ars, listener_options=ListenerBuildOptions(), runner_options=RunnerBuildOptions())

    for name, obj in built.items():
        assert labels(obj).get("example.com/custom") == "value", f"{name} labels"
        assert "example.com/custom" not in annotations(obj), f"{name} annotations"
    ers, runner = built["ers"], built["runner"]
    assert annotations(ers)[constants.ANNOTATION_KEY_AUTOSCALING_RUNNER_SET_GENERATION] == "7"
    assert annotations(ers)[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] == "test-group"
    assert annotations(ers)[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] == "test-set"
    assert annotations(runner)[constants.ANNOTATION_KEY_PATCH_ID] == "3"
    assert annotations(runner)[constants.ANNOTATION_KEY_ACTIONABLE_REVISION] == "2"
    assert ars == original, "building resources must not mutate the input metadata"


def _own(label: str) -> dict[str, Any]:
    return {
        "labels": {f"test.com/{label}-label": f"{label}-label"},
        "annotations": {f"test.com/{label}-annotation": f"{label}-annotation"},
    }


# Upstream: TestMetadataPropagation
def test_metadata_propagation() -> None:
    """Each object gets the ARS's labels (minus excluded prefixes), its own user metadata and the derived keys."""
    ars = scale_set(
        autoscalingListener=_own("autoscaling-listener"),
        listenerServiceAccountMetadata=_own("listener-service-account"),
        listenerRoleMetadata=_own("listener-role"),
        listenerRoleBindingMetadata=_own("listener-role-binding"),
        listenerConfigSecretMetadata=_own("listener-config-secret"),
        ephemeralRunnerSetMetadata=_own("ephemeral-runner-set"),
        ephemeralRunnerMetadata=_own("ephemeral-runner"),
        ephemeralRunnerConfigSecretMetadata=_own("ephemeral-runner-config-secret"),
    )
    ars["metadata"]["labels"] = {
        constants.LABEL_KEY_KUBERNETES_PART_OF: constants.LABEL_VALUE_KUBERNETES_PART_OF,
        constants.LABEL_KEY_KUBERNETES_VERSION: "0.2.0",
        "arbitrary-label": "random-value",
        "example.com/label": "example-value",
        "example.com/example": "example-value",
        "directly.excluded.org/label": "excluded-value",
        "directly.excluded.org/arbitrary": "not-excluded-value",
    }
    excluded = ("example.com/", "directly.excluded.org/label")
    built = build_everything(
        ars,
        listener_options=ListenerBuildOptions(exclude_label_propagation_prefixes=excluded),
        runner_options=RunnerBuildOptions(exclude_label_propagation_prefixes=excluded),
    )
    ers, listener = built["ers"], built["listener"]

    for obj, component, own in [
        (ers, "runner-set", "ephemeral-runner-set"),
        (listener, "runner-scale-set-listener", "autoscaling-listener"),
    ]:
        assert labels(obj)[constants.LABEL_KEY_KUBERNETES_PART_OF] == constants.LABEL_VALUE_KUBERNETES_PART_OF
        assert labels(obj)[constants.LABEL_KEY_KUBERNETES_COMPONENT] == component
        assert labels(obj)[constants.LABEL_KEY_KUBERNETES_VERSION] == "0.2.0"
        assert labels(obj)[constants.LABEL_KEY_GITHUB_SCALE_SET_NAME] == "test-set"
        assert labels(obj)[constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE] == "test-ns"
        assert labels(obj).get(constants.LABEL_KEY_GITHUB_ENTERPRISE, "") == ""
        assert labels(obj)[constants.LABEL_KEY_GITHUB_ORGANIZATION] == "org"
        assert labels(obj)[constants.LABEL_KEY_GITHUB_REPOSITORY] == "repo"
        assert labels(obj)["arbitrary-label"] == "random-value"
        assert labels(obj)[f"test.com/{own}-label"] == f"{own}-label"
        assert annotations(obj)[f"test.com/{own}-annotation"] == f"{own}-annotation"
    assert annotations(ers)[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] == "test-group"
    assert annotations(ers)[constants.ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME] == "test-set"

    for key in ("example.com/label", "example.com/example", "directly.excluded.org/label"):
        assert key not in labels(listener)
    assert labels(listener)["directly.excluded.org/arbitrary"] == "not-excluded-value"

    for name, own in [
        ("sa", "listener-service-account"),
        ("role", "listener-role"),
        ("binding", "listener-role-binding"),
        ("runner", "ephemeral-runner"),
        ("jit", "ephemeral-runner-config-secret"),
    ]:
        assert labels(built[name])[f"test.com/{own}-label"] == f"{own}-label", name
        assert annotations(built[name])[f"test.com/{own}-annotation"] == f"{own}-annotation", name

    assert labels(built["listener pod"]) == labels(listener)

    runner = built["runner"]
    for key in COMMON_LABEL_KEYS:
        if key != constants.LABEL_KEY_KUBERNETES_COMPONENT:
            assert labels(runner).get(key) == labels(ers).get(key), key
    assert labels(runner)[constants.LABEL_KEY_KUBERNETES_COMPONENT] == "runner"
    assert annotations(runner)[constants.ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME] == "test-group"
    for key, value in labels(runner).items():
        assert labels(built["runner pod"])[key] == value, key


# Upstream: TestLegacyIntegrityHashAnnotationCausesOneTimeListenerRecreation
def test_legacy_integrity_hash_annotation_causes_one_time_listener_recreation() -> None:
    """A listener left with the legacy hash differs from the desired one once; its replacement matches."""
    ars = scale_set()
    ars["metadata"]["labels"] = {
        constants.LABEL_KEY_KUBERNETES_PART_OF: constants.LABEL_VALUE_KUBERNETES_PART_OF,
        constants.LABEL_KEY_KUBERNETES_VERSION: "0.2.0",
    }
    options = ListenerBuildOptions()
    ers = new_ephemeral_runner_set(ars, options=RunnerBuildOptions())
    desired = new_autoscaling_listener(ars, ers, namespace="controller-ns", image="test:latest", options=options)
    assert LEGACY_INTEGRITY_HASH not in annotations(desired)

    live = copy.deepcopy(desired)
    live["metadata"]["annotations"] = {LEGACY_INTEGRITY_HASH: "some-stale-hash"}
    assert annotations(live) != annotations(desired), "else the legacy listener would never be replaced"

    replacement = new_autoscaling_listener(ars, ers, namespace="controller-ns", image="test:latest", options=options)
    assert LEGACY_INTEGRITY_HASH not in annotations(replacement)
    assert annotations(replacement) == annotations(desired), "else the controller would rebuild it forever"


# Upstream: TestLegacyIntegrityHashAnnotationRetainedOnExistingObjects
def test_legacy_integrity_hash_annotation_retained_on_existing_objects() -> None:
    """Merging live annotations under desired ones keeps the inert legacy hash and the user's annotations."""
    runner_set = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": "test-scale-set",
            "namespace": "test-ns",
            "uid": "ers-uid",
            "labels": {
                constants.LABEL_KEY_GITHUB_SCALE_SET_NAME: "test-scale-set",
                constants.LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: "test-ns",
            },
        },
    }
    desired = new_ephemeral_runner_set_proxy_secret(runner_set, {"http_proxy": b"http://proxy.example.com"})
    assert LEGACY_INTEGRITY_HASH not in annotations(desired)
    live = {LEGACY_INTEGRITY_HASH: "some-stale-hash", "example.com/user-annotation": "user-value"}

    merged = merge_annotations(live, annotations(desired))

    assert merged is not None
    assert LEGACY_INTEGRITY_HASH in merged
    assert merged["example.com/user-annotation"] == "user-value"
