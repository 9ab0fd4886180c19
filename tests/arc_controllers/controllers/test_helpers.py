"""Unit tests for the drift helpers.

Upstream: helpers_drift_test.go, TestEphemeralRunnerSetDesiredSpecChanged_Metadata.
"""

from __future__ import annotations

from typing import Any

from arc_controllers.controllers.helpers import (
    ephemeral_runner_set_actionable_spec_changed,
    ephemeral_runner_set_desired_spec_changed,
    ephemeral_runner_set_outdated_for_applied_revision,
    listener_pod_spec_requires_recreation,
    listener_spec_changed,
    next_actionable_revision,
    semantic_derivative,
)


def ers(
    runner_spec: Any = None, metadata: Any = None, revision: int = 0, applied: int = 0, phase: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {"ephemeralRunnerSpec": runner_spec or {"spec": {"containers": [{"name": "runner"}]}}}
    if metadata is not None:
        spec["ephemeralRunnerMetadata"] = metadata
    if revision:
        spec["actionableRevision"] = revision
    return {"spec": spec, "status": {"phase": phase, "appliedActionableRevision": applied}}


def test_actionable_spec_changed_is_semantic() -> None:
    a = ers({"spec": {"containers": [{"name": "runner", "env": []}]}})
    b = ers({"spec": {"containers": [{"name": "runner"}]}})
    assert not ephemeral_runner_set_actionable_spec_changed(a, b)
    c = ers({"spec": {"containers": [{"name": "runner", "resources": {"limits": {"cpu": "1000m"}}}]}})
    d = ers({"spec": {"containers": [{"name": "runner", "resources": {"limits": {"cpu": "1"}}}]}})
    assert not ephemeral_runner_set_actionable_spec_changed(c, d)
    assert ephemeral_runner_set_actionable_spec_changed(a, ers({"spec": {"containers": [{"name": "other"}]}}))
    assert ephemeral_runner_set_actionable_spec_changed(None, a)
    assert not ephemeral_runner_set_actionable_spec_changed(None, None)


# Upstream: TestEphemeralRunnerSetDesiredSpecChanged_Metadata
def test_desired_spec_changed_metadata_cases() -> None:
    assert not ephemeral_runner_set_desired_spec_changed(ers(metadata={}), ers(metadata={"labels": {}}))
    assert not ephemeral_runner_set_desired_spec_changed(ers(metadata={"annotations": {}}), ers(metadata={}))
    assert ephemeral_runner_set_desired_spec_changed(ers(), ers(metadata={}))  # metadata object added
    assert ephemeral_runner_set_desired_spec_changed(ers(metadata={}), ers())
    assert ephemeral_runner_set_desired_spec_changed(ers(metadata={"labels": {"a": "1"}}), ers(metadata={}))


def test_next_revision_and_outdated_for_applied() -> None:
    assert next_actionable_revision(None) == 1
    assert next_actionable_revision(ers(revision=3, applied=1)) == 4
    assert next_actionable_revision(ers(revision=1, applied=3)) == 4
    assert ephemeral_runner_set_outdated_for_applied_revision(ers(revision=2, applied=2, phase="Outdated"))
    assert not ephemeral_runner_set_outdated_for_applied_revision(ers(revision=3, applied=2, phase="Outdated"))
    assert not ephemeral_runner_set_outdated_for_applied_revision(ers(revision=2, applied=2, phase="Running"))


def test_listener_spec_changed_ignores_phase_and_empty_collections() -> None:
    a = {"spec": {"maxRunners": 3, "phase": "Stopped", "imagePullSecrets": []}}
    b = {"spec": {"maxRunners": 3}}
    assert not listener_spec_changed(a, b)
    assert listener_spec_changed(a, {"spec": {"maxRunners": 4}})


def test_pod_recreation() -> None:
    key = "actions.github.com/listener-config-resource-version"
    desired = {
        "metadata": {"annotations": {key: "2"}},
        "spec": {"containers": [{"name": "listener", "ports": [{"containerPort": 1}]}]},
    }
    live = {
        "metadata": {"annotations": {key: "2"}},
        "spec": {
            "containers": [
                {"name": "listener", "ports": [{"containerPort": 1, "protocol": "TCP"}], "imagePullPolicy": "Always"}
            ],
            "dnsPolicy": "ClusterFirst",
            "tolerations": [{"key": "a"}],
        },
    }
    assert not listener_pod_spec_requires_recreation(live, desired)
    live["metadata"]["annotations"][key] = "1"
    assert listener_pod_spec_requires_recreation(live, desired)
    live["metadata"]["annotations"][key] = "2"
    live["spec"]["containers"][0]["ports"].append({"containerPort": 2})
    assert listener_pod_spec_requires_recreation(live, desired)  # a removed port


def test_semantic_derivative_lets_live_lists_be_longer() -> None:
    assert semantic_derivative({"t": [{"k": "a"}]}, {"t": [{"k": "a"}, {"k": "b"}]})
    assert not semantic_derivative({"t": [{"k": "a"}, {"k": "b"}]}, {"t": [{"k": "a"}]})
    assert semantic_derivative({"x": "", "y": None, "z": []}, {})
    assert not semantic_derivative({"readOnly": True}, {"readOnly": 1})
