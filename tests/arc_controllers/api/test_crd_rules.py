"""Our CRDs marker for marker like upstream's, and the rules where kube-apiserver's OpenAPI and controller-gen differ.

Upstream's markers come from ``data/arc-crd-markers-2026-06.tsv.gz`` (hack/crd_markers.py
over upstream's config/crd/bases at master 2ee6b3b8, 2026-06-30). The three rules below
are what converting kube-apiserver's OpenAPI into controller-gen's shape must get right
(`k8sschema.UNEVALUATED_DEFAULTS`, `k8sschema.INLINED_ATOMIC`) plus upstream's own edit of
controller-gen's output (`crdgen.ATOMIC_CLAIMS`).
"""

from __future__ import annotations

import collections
import gzip
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arc_controllers.api.v1alpha1 import KINDS, crdgen

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "hack"))
from crd_markers import markers  # noqa: E402

UPSTREAM_MARKERS = Path(__file__).resolve().parent / "data" / "arc-crd-markers-2026-06.tsv.gz"

# Markers newer upstream changed after the June list (spec §2.3): 6f89d057 marks patchID
# +optional (no longer required); #4557 removes status.currentReplicas (and its required).
CHANGED_UPSTREAM = {
    ("EphemeralRunnerSet", ".spec", "required"),
    ("EphemeralRunnerSet", ".status", "required"),
}
# Markers of ours upstream lacks, each an issue-19 addition (Beyond: ARC #2633): a CEL rule refusing
# minRunners > maxRunners at admission. Only additions may be listed: a key upstream has stays compared.
BEYOND_UPSTREAM = {
    ("AutoscalingRunnerSet", ".spec", "x-kubernetes-validations"),
}


def _schemas() -> dict[str, dict[str, Any]]:
    return {kind.GVK.kind: crdgen.generate(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"] for kind in KINDS}  # type: ignore[attr-defined]


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(schema.get(key), dict):
            yield from _nodes(schema[key], path + suffix)


def _matching(pattern: str) -> list[tuple[str, str, dict[str, Any]]]:
    regex = re.compile(pattern)
    return [(kind, path, node) for kind, s in _schemas().items() for path, node in _nodes(s) if regex.search(path)]


def _upstream() -> dict[tuple[str, str, str], str]:
    rows = {}
    for line in gzip.decompress(UPSTREAM_MARKERS.read_bytes()).decode().splitlines():
        if line and not line.startswith("#"):
            kind, path, key, value = line.split("\t")
            rows[(kind, path, key)] = value
    return rows


def test_every_marker_equals_upstreams_on_the_fields_both_have() -> None:
    upstream = _upstream()
    upstream_paths = {(kind, path) for kind, path, _ in upstream}
    ours = {
        (kind, path, key): value
        for kind, schema in _schemas().items()
        for path, key, value in markers(schema)
        if (kind, path) in upstream_paths
    }
    ours_paths = {(kind, path) for kind, path, _ in ours}
    diff = collections.Counter()
    report = []
    for key in sorted(set(upstream) | set(ours)):
        if key[:2] not in ours_paths or key in CHANGED_UPSTREAM:
            continue  # a field newer upstream removed (test_crdgen pins which)
        if key in BEYOND_UPSTREAM and key not in upstream:
            continue
        if upstream.get(key) != ours.get(key):
            diff[key[2]] += 1
            report.append(f"{key}: ours {ours.get(key)} upstream {upstream.get(key)}")
    assert not report, f"{dict(diff)}\n" + "\n".join(report[:40])


def test_no_default_where_controller_gen_skips_a_ref_marker() -> None:
    disks = _matching(r"\.volumes\[\]\.azureDisk$")
    assert len(disks) == 5  # a pod spec in each of ARS template and listenerTemplate, ERS, ER, listener
    for kind, path, node in disks:
        props = node["properties"]
        assert "default" not in props["cachingMode"], f"{kind} {path}.cachingMode"
        assert "default" not in props["kind"], f"{kind} {path}.kind"
        assert props["fsType"]["default"] == "ext4"  # literal +default markers stay, as controller-gen writes them


def test_types_embedding_an_atomic_reference_are_atomic() -> None:
    found = _matching(
        r"(\.envFrom\[\]\.(configMapRef|secretRef)|\.volumes\[\]\.configMap|\.projected\.sources\[\]\.(configMap|secret))$"
    )
    assert len(found) == 45  # 5 pod specs x (3 container lists x 2 + 3)
    not_atomic = [(kind, path) for kind, path, node in found if node.get("x-kubernetes-map-type") != "atomic"]
    assert not_atomic == []


def test_resource_claims_are_atomic_where_upstream_deletes_the_map() -> None:
    claims = _matching(r"\.resources\.claims$")
    assert len(claims) == 20  # 5 pod specs x (pod-level + 3 container lists)
    atomic = sorted((kind, path) for kind, path, node in claims if "x-kubernetes-list-type" not in node)
    assert atomic == sorted((kind, path) for kind, paths in crdgen.ATOMIC_CLAIMS.items() for path in paths)
    assert len(atomic) == 10
    for _kind, _path, node in claims:
        if "x-kubernetes-list-type" in node:
            assert (node["x-kubernetes-list-type"], node["x-kubernetes-list-map-keys"]) == ("map", ["name"])
        else:
            assert "x-kubernetes-list-map-keys" not in node


def test_a_claims_path_that_stops_resolving_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(crdgen.ATOMIC_CLAIMS, "EphemeralRunner", (".spec.spec.sidecars[].resources.claims",))
    with pytest.raises(TypeError, match="ATOMIC_CLAIMS path"):
        crdgen.generate(KINDS[2])
