"""The CRDs in config/crd: generated from the models, and shaped like upstream's."""

from __future__ import annotations

import collections
import gzip
from pathlib import Path
from typing import Any

import pytest
import yaml

from arc_controllers.api.v1alpha1 import KINDS, crdgen

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "config" / "crd"
# A gzip copy of shared/reference/arc-crd-field-paths-2026-06.tsv (upstream master of 2026-06-30).
UPSTREAM_PATHS = Path(__file__).resolve().parent / "data" / "arc-crd-field-paths-2026-06.tsv.gz"
SHARED_REFERENCE = next(
    (
        folder / "shared" / "reference" / "arc-crd-field-paths-2026-06.tsv"
        for folder in (ROOT.parent, ROOT.parent.parent)
        if (folder / "shared" / "reference" / "arc-crd-field-paths-2026-06.tsv").exists()
    ),
    ROOT.parent / "shared" / "reference" / "arc-crd-field-paths-2026-06.tsv",
)

# Spec §2.2/§2.3: the status counters removed upstream by #4557 after the June list.
REMOVED_UPSTREAM = {
    "AutoscalingRunnerSet": {
        ".status.currentRunners",
        ".status.pendingEphemeralRunners",
        ".status.runningEphemeralRunners",
        ".status.failedEphemeralRunners",
    },
    "EphemeralRunnerSet": {
        ".status.currentReplicas",
        ".status.pendingEphemeralRunners",
        ".status.runningEphemeralRunners",
        ".status.failedEphemeralRunners",
    },
}
_LISTENER_CONFIG = {
    (".spec.listenerConfig", "object"),
    (".spec.listenerConfig.scaler", "object"),
    (".spec.listenerConfig.scaler.qps", "integer"),
    (".spec.listenerConfig.scaler.burst", "integer"),
    (".spec.listenerConfig.scaler.workers", "integer"),
}
# Issue 19 rule 4 (Beyond: ARC #2633, #4337, #4656): metav1.Condition lists, our addition, optional.
_CONDITIONS = {
    (".status.conditions", "array"),
    (".status.conditions[]", "object"),
    (".status.conditions[].type", "string"),
    (".status.conditions[].status", "string"),
    (".status.conditions[].reason", "string"),
    (".status.conditions[].message", "string"),
    (".status.conditions[].lastTransitionTime", "string"),
    (".status.conditions[].observedGeneration", "integer"),
}
# Spec §2: fields newer than the June list (#4636, #4638, #4642, #4660, listenerconfig_types.go).
NEW_FIELDS = {
    "AutoscalingRunnerSet": {(".status.observedGeneration", "integer"), *_LISTENER_CONFIG, *_CONDITIONS},
    "EphemeralRunnerSet": {
        (".spec.actionableRevision", "integer"),
        (".status.appliedActionableRevision", "integer"),
        (".status.finishedRunnerCleanupPatchID", "integer"),
    },
    "AutoscalingListener": {
        (".spec.phase", "string"),
        *_LISTENER_CONFIG,
        # The crash-loop count (ARC #4656, issue 19 rule 1): our addition, optional.
        (".status.failureCount", "integer"),
        (".status.lastFailureTime", "string"),
        *_CONDITIONS,
    },
    # The job timing fields the listener writes since 0ba3cc92 (spec §9 line B); the June
    # CRD lacks them, and without them the API server prunes what the listener sends.
    "EphemeralRunner": {
        (".status.jobEventName", "string"),
        (".status.jobQueuedAt", "string"),
        (".status.jobScaleSetAssignedAt", "string"),
        (".status.jobRunnerAssignedAt", "string"),
    },
}


def _paths(schema: dict[str, Any], path: str, out: set[tuple[str, str]]) -> None:
    out.add((path or ".", schema.get("type", "")))
    for name, sub in schema.get("properties", {}).items():
        _paths(sub, f"{path}.{name}", out)
    if isinstance(schema.get("items"), dict):
        _paths(schema["items"], path + "[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _paths(schema["additionalProperties"], path + "{}", out)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _our_paths() -> dict[str, set[tuple[str, str]]]:
    result: dict[str, set[tuple[str, str]]] = {}
    for kind in KINDS:
        crd = yaml.load((CRD_DIR / crdgen.crd_file_name(kind)).read_text(), Loader=_LOADER)
        found: set[tuple[str, str]] = set()
        _paths(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "", found)
        result[crd["spec"]["names"]["kind"]] = found
    return result


def _upstream_paths() -> dict[str, set[tuple[str, str]]]:
    result: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    for line in gzip.decompress(UPSTREAM_PATHS.read_bytes()).decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        kind, _version, path, openapi_type = line.split("\t")
        result[kind].add((path, openapi_type))
    return result


def test_regenerating_crds_gives_no_diff(tmp_path: Path) -> None:
    assert crdgen.main(["--out", str(CRD_DIR), "--check"]) == 0, "config/crd is stale: run make crds"
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    for kind in KINDS:
        name = crdgen.crd_file_name(kind)
        assert (tmp_path / name).read_text() == (CRD_DIR / name).read_text(), f"config/crd/{name} drifted"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in CRD_DIR.glob("*.yaml"))


@pytest.mark.skipif(not SHARED_REFERENCE.exists(), reason="no shared/reference beside the repository")
def test_vendored_path_list_is_the_shared_reference() -> None:
    assert gzip.decompress(UPSTREAM_PATHS.read_bytes()) == SHARED_REFERENCE.read_bytes()


def test_every_upstream_field_path_exists_except_the_removed_ones() -> None:
    ours, upstream = _our_paths(), _upstream_paths()
    assert set(ours) == set(upstream)
    report = []
    for kind in sorted(upstream):
        missing = sorted(p for p in upstream[kind] - ours[kind] if p[0] not in REMOVED_UPSTREAM.get(kind, set()))
        extra = sorted(ours[kind] - upstream[kind])
        removed_still_there = sorted(p for p in ours[kind] if p[0] in REMOVED_UPSTREAM.get(kind, set()))
        print(f"{kind}: {len(upstream[kind])} upstream paths, {len(ours[kind])} ours")
        print(f"  removed by newer upstream (absent here): {sorted(REMOVED_UPSTREAM.get(kind, set()))}")
        print(f"  not in the June list (ours only): {extra}")
        if missing:
            report.append(f"{kind} lacks {missing}")
        if removed_still_there:
            report.append(f"{kind} still has removed {removed_still_there}")
        if set(extra) != NEW_FIELDS[kind]:
            report.append(f"{kind}: ours-only paths {extra} != the spec's new fields {sorted(NEW_FIELDS[kind])}")
    assert not report, "\n".join(report)


def test_crd_names_scope_subresource_and_columns() -> None:
    expected_columns = {
        # Ready and Reason are ours (Beyond: ARC #2633): the Ready condition's status and reason.
        "AutoscalingRunnerSet": ["Minimum Runners", "Maximum Runners", "Phase", "Ready", "Reason"],
        "EphemeralRunnerSet": ["DesiredReplicas", "Phase"],
        "EphemeralRunner": [
            "GitHub Config URL",
            "RunnerId",
            "Phase",
            "JobRepository",
            "JobWorkflowRef",
            "WorkflowRunId",
            "JobDisplayName",
            "JobId",
            "Message",
            "Age",
        ],
        "AutoscalingListener": [
            "GitHub Configure URL",
            "AutoscalingRunnerSet Namespace",
            "AutoscalingRunnerSet Name",
            "Ready",  # ours, as on the scale set (Beyond: ARC #4656)
            "Reason",
        ],
    }
    for kind in KINDS:
        crd = crdgen.generate(kind)
        names = crd["spec"]["names"]
        assert crd["metadata"]["name"] == f"{names['plural']}.actions.github.com"
        assert names["plural"] == names["kind"].lower() + "s"
        assert names["singular"] == names["kind"].lower()
        assert names["listKind"] == names["kind"] + "List"
        assert "shortNames" not in names
        assert crd["spec"]["scope"] == "Namespaced"
        (version,) = crd["spec"]["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
        assert version["subresources"] == {"status": {}}
        assert [c["name"] for c in version["additionalPrinterColumns"]] == expected_columns[names["kind"]]


def test_markers_reach_the_schema() -> None:
    ars = crdgen.generate(KINDS[0])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = ars["properties"]["spec"]["properties"]
    assert spec["minRunners"] == {"description": spec["minRunners"]["description"], "minimum": 0, "type": "integer"}
    assert spec["template"]["properties"]["metadata"]["properties"].keys() == {
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    }
    assert spec["listenerMetrics"]["properties"]["counters"]["additionalProperties"]["required"] == ["labels"]
    assert "$ref" not in crdgen.render(ars)
    runner = crdgen.generate(KINDS[2])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    runner_spec = runner["properties"]["spec"]
    assert runner_spec["required"] == ["githubConfigSecret", "githubConfigUrl", "runnerScaleSetId"]
    assert runner["properties"]["status"]["properties"]["failures"]["additionalProperties"] == {
        "format": "date-time",
        "type": "string",
    }
    assert runner["properties"]["status"]["properties"]["jobRequestId"]["format"] == "int64"
    containers = runner_spec["properties"]["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    limits = containers["items"]["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True


def test_conditions_are_a_map_by_type_and_min_over_max_is_refused_by_cel() -> None:
    """Beyond: ARC #2633: conditions merge by type; an impossible spec is refused at admission."""
    for kind in (KINDS[0], KINDS[3]):
        schema = crdgen.generate(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        conditions = schema["properties"]["status"]["properties"]["conditions"]
        assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == ("map", ["type"])
        assert conditions["items"]["required"] == ["lastTransitionTime", "message", "reason", "status", "type"]
    ars = crdgen.generate(KINDS[0])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    (rule,) = ars["properties"]["spec"]["x-kubernetes-validations"]
    assert "self.minRunners <= self.maxRunners" in rule["rule"]
