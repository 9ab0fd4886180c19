"""Comparing a served CRD schema with ours: what it drops, what it demands beyond ours."""

from __future__ import annotations

import copy
from typing import Any

from arc_controllers.api.v1alpha1 import (
    KINDS,
    AutoscalingListener,
    AutoscalingRunnerSet,
    EphemeralRunner,
    EphemeralRunnerSet,
)
from arc_controllers.api.v1alpha1.crdcompat import compare_served, embedded_paths, served_schemas
from arc_controllers.api.v1alpha1.crdgen import generate


def ours(kind: Any) -> dict[str, Any]:
    schema: dict[str, Any] = copy.deepcopy(generate(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    return schema


def go_arc_0_14_ers() -> dict[str, Any]:
    """The EphemeralRunnerSet schema as Go ARC 0.14.2's chart installs it: no revisions, counters required."""
    schema = ours(EphemeralRunnerSet)
    spec, status = schema["properties"]["spec"], schema["properties"]["status"]
    del spec["properties"]["actionableRevision"]
    spec["required"] = ["patchID"]
    for name in ("appliedActionableRevision", "finishedRunnerCleanupPatchID"):
        del status["properties"][name]
    status["properties"]["currentReplicas"] = {"type": "integer"}
    status["required"] = ["currentReplicas"]
    return schema


def test_our_own_schemas_have_no_gap() -> None:
    for kind in KINDS:
        assert compare_served(kind, ours(kind)) is None


def test_go_arc_0_14_schema_names_the_dropped_and_the_demanded_fields_arc_4638() -> None:
    gap = compare_served(EphemeralRunnerSet, go_arc_0_14_ers())
    assert gap is not None
    assert gap.missing == (
        "spec.actionableRevision",
        "status.appliedActionableRevision",
        "status.finishedRunnerCleanupPatchID",
    )
    assert gap.extra_required == ("spec.patchID", "status.currentReplicas")
    assert gap.describe() == (
        "EphemeralRunnerSet lacks spec.actionableRevision, status.appliedActionableRevision, "
        "status.finishedRunnerCleanupPatchID and requires spec.patchID, status.currentReplicas"
    )


def test_nested_fields_maps_and_lists_are_compared() -> None:
    listener = ours(AutoscalingListener)
    del listener["properties"]["spec"]["properties"]["listenerConfig"]["properties"]["scaler"]["properties"]["workers"]
    runner = ours(EphemeralRunner)
    del runner["properties"]["status"]["properties"]["failures"]["additionalProperties"]
    ars = ours(AutoscalingRunnerSet)
    labels = ars["properties"]["spec"]["properties"]["listenerMetrics"]["properties"]["counters"]
    labels["additionalProperties"]["properties"]["labels"].pop("items")
    assert compare_served(AutoscalingListener, listener).missing == ("spec.listenerConfig.scaler.workers",)  # type: ignore[union-attr]
    assert compare_served(EphemeralRunner, runner).missing == ("status.failures{}",)  # type: ignore[union-attr]
    assert compare_served(AutoscalingRunnerSet, ars).missing == ("spec.listenerMetrics.counters{}.labels[]",)  # type: ignore[union-attr]


def test_embedded_kubernetes_types_count_as_present_whatever_their_version() -> None:
    ars = ours(AutoscalingRunnerSet)
    pod_spec = ars["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    del pod_spec["properties"]["resources"]  # an older Kubernetes' pod spec
    pod_spec["required"] = ["containers", "somethingNew"]
    assert compare_served(AutoscalingRunnerSet, ars) is None
    assert "spec.template" in embedded_paths(AutoscalingRunnerSet)
    del ars["properties"]["spec"]["properties"]["template"]
    assert compare_served(AutoscalingRunnerSet, ars).missing == ("spec.template",)  # type: ignore[union-attr]


def test_preserved_unknown_fields_keep_everything_below() -> None:
    ers = go_arc_0_14_ers()
    ers["properties"]["status"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert compare_served(EphemeralRunnerSet, ers).missing == ("spec.actionableRevision",)  # type: ignore[union-attr]


def test_a_kind_not_served_is_a_gap() -> None:
    gap = compare_served(EphemeralRunner, None)
    assert gap is not None
    assert "not served" in gap.describe()


def test_served_schemas_are_found_by_their_group_version_kind() -> None:
    ers = ours(EphemeralRunnerSet)
    document = {
        "components": {
            "schemas": {
                "com.github.actions.v1alpha1.EphemeralRunnerSet": {
                    **ers,
                    "x-kubernetes-group-version-kind": [
                        {"group": "actions.github.com", "version": "v1alpha1", "kind": "EphemeralRunnerSet"}
                    ],
                },
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object"},
                "other": {"x-kubernetes-group-version-kind": [{"group": "x", "version": "v1alpha1", "kind": "Y"}]},
            }
        }
    }
    assert list(served_schemas(document)) == ["EphemeralRunnerSet"]
