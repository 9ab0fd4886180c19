"""Parking (Outdated) and convergence of the AutoscalingRunnerSet controller on a real API server.

Upstream: Describe "Test AutoscalingRunnerSet outdated lifecycle" (#4652/#4660),
"AutoscalingListener empty collection convergence" (autoscalingrunnerset_listener_drift_test.go, #4682),
and TestAutoscalingRunnerSetParksFirstRejectionOfPublishedGeneration ("Resource metadata empty collection
convergence", #4695, is in test_autoscalingrunnerset_metadata.py). As upstream's ARS suite, the
EphemeralRunnerSet controller does not run: the test writes the set's status.
"""

from __future__ import annotations

from typing import Any

import pytest

from arc_controllers.resourcebuilder.listener import scale_set_listener_name

from .scaleset_world import (
    ARS,
    ERS,
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

NEW_IMAGE = "ghcr.io/actions/actions-runner:2.330.0"


async def _phase(w: World, phase: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        ars = await w.get(ARS, w.name)
        status = ars.get("status") or {}
        if status.get("phase") != phase:
            return None
        if phase == "Running" and status.get("observedGeneration") != ars["metadata"]["generation"]:
            return None
        return ars

    result: dict[str, Any] = await eventually(check)
    return result


async def _park(w: World) -> dict[str, Any]:
    """Runners reject the spec: the set reports Outdated for the revision it applied."""
    ers = await w.get(ERS, w.name)
    ers = await w.patch(ers, {"spec": {"replicas": 3, "patchID": 5}})
    applied = int(ers["spec"].get("actionableRevision") or 0)
    await w.patch(ers, {"status": {"phase": "Outdated", "appliedActionableRevision": applied}}, status=True)
    return await _phase(w, "Outdated")


# Upstream: Describe "Test AutoscalingRunnerSet outdated lifecycle" / Context "When the runners reject the runner spec
#   they were given" (Its not recovered verbatim) and TestAutoscalingRunnerSetParksFirstRejectionOfPublishedGeneration
async def test_outdated_parks_stops_listener_pins_set_and_recovers_on_runner_spec_change(world: World) -> None:
    w = world
    await w.start(enabled=("autoscalingrunnerset", "autoscalinglistener"))
    await w.client.create(w.ars())
    ars = await _phase(w, "Running")
    listener_name = scale_set_listener_name(ars)
    revision = (await w.get(ERS, w.name))["spec"].get("actionableRevision")

    ars = await _park(w)

    async def parked() -> bool:
        ers = await w.get(ERS, w.name)
        listener = await w.get(LISTENER, listener_name, w.controller_namespace)
        pod = await w.find(POD, listener_name, w.controller_namespace)
        return (
            ers["spec"]["replicas"] == 0
            and ers["spec"]["patchID"] == 0
            and ers["spec"].get("actionableRevision") == revision
            and listener["spec"].get("phase") == "Stopped"
            and pod is None
        )

    await eventually(parked)
    uid = (await w.get(ERS, w.name))["metadata"]["uid"]

    # min/max edits do not un-park, but reach the stopped listener (which stays stopped)
    ars = await w.patch(ars, {"spec": {"maxRunners": 4}})

    async def propagated() -> bool:
        listener = await w.get(LISTENER, listener_name, w.controller_namespace)
        return listener["spec"]["maxRunners"] == 4 and listener["spec"].get("phase") == "Stopped"

    await eventually(propagated)

    async def still_parked() -> bool:
        current = await w.get(ARS, w.name)
        ers = await w.get(ERS, w.name)
        return (current.get("status") or {}).get("phase") == "Outdated" and ers["spec"].get(
            "actionableRevision"
        ) == revision

    await consistently(still_parked, duration=2.0)

    # a runner spec change is the recovery signal: new revision, listener running again, same set
    template = {"spec": {"containers": [{"name": "runner", "image": NEW_IMAGE}]}}
    await w.patch(ars, {"spec": {"template": template}})
    await _phase(w, "Running")
    ers = await w.get(ERS, w.name)
    assert ers["metadata"]["uid"] == uid
    assert ers["spec"]["actionableRevision"] == int(revision or 0) + 1
    assert ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["image"] == NEW_IMAGE
    listener = await w.get(LISTENER, listener_name, w.controller_namespace)
    assert listener["spec"].get("phase") in (None, "Running")

    async def pod_back() -> bool:
        return await w.find(POD, listener_name, w.controller_namespace) is not None

    await eventually(pod_back)


# Upstream: (#4660) a runner-metadata change also un-parks the scale set
async def test_runner_metadata_change_also_recovers(world: World) -> None:
    w = world
    await w.start(enabled=("autoscalingrunnerset", "autoscalinglistener"))
    await w.client.create(w.ars())
    await _phase(w, "Running")
    revision = int((await w.get(ERS, w.name))["spec"].get("actionableRevision") or 0)
    ars = await _park(w)
    await w.patch(ars, {"spec": {"ephemeralRunnerMetadata": {"labels": {"fixed": "yes"}}}})
    await _phase(w, "Running")
    ers = await w.get(ERS, w.name)
    assert ers["spec"]["actionableRevision"] == revision + 1
    assert ers["spec"]["ephemeralRunnerMetadata"] == {"labels": {"fixed": "yes"}}


def _collections(case: str) -> dict[str, Any]:
    """Explicit empty collections for one upstream case (they round-trip through the API server)."""
    empty_meta = {"labels": {}, "annotations": {}}
    return {
        "baseline": {},
        "metrics maps": {"listenerMetrics": {"counters": {}, "gauges": {}, "histograms": {}}},
        "template collections": {
            "listenerTemplate": {
                "metadata": {"labels": {}, "annotations": {}},
                "spec": {"containers": [], "volumes": [], "tolerations": [], "nodeSelector": {}},
            }
        },
        "service account metadata": {"listenerServiceAccountMetadata": empty_meta},
        "role metadata": {"listenerRoleMetadata": empty_meta},
        "role binding metadata": {"listenerRoleBindingMetadata": empty_meta},
        "config secret metadata": {"listenerConfigSecretMetadata": empty_meta},
    }[case]


async def _resource_versions(w: World, ars: dict[str, Any]) -> dict[str, str]:
    name = scale_set_listener_name(ars)
    objects = {
        "ars": await w.find(ARS, w.name),
        "ers": await w.find(ERS, w.name),
        "listener": await w.find(LISTENER, name, w.controller_namespace),
        "sa": await w.find(SA, name, w.controller_namespace),
        "role": await w.find(ROLE, name),
        "binding": await w.find(ROLE_BINDING, name),
        "secret": await w.find(SECRET, name + "-config", w.controller_namespace),
        "pod": await w.find(POD, name, w.controller_namespace),
    }
    return {key: (obj or {}).get("metadata", {}).get("resourceVersion", "absent") for key, obj in objects.items()}


async def _converges(w: World, body: dict[str, Any]) -> None:
    await w.client.create(body)
    ars = await _phase(w, "Running")
    name = scale_set_listener_name(ars)

    async def pod() -> bool:
        return await w.find(POD, name, w.controller_namespace) is not None

    await eventually(pod)
    versions = await _resource_versions(w, ars)
    assert "absent" not in versions.values(), versions

    async def unchanged() -> bool:
        return await _resource_versions(w, ars) == versions

    await consistently(unchanged, duration=3.0)


@pytest.mark.parametrize(
    "case",
    [
        "baseline",
        "metrics maps",
        "template collections",
        "service account metadata",
        "role metadata",
        "role binding metadata",
        "config secret metadata",
    ],
)
# Upstream: Describe "AutoscalingListener empty collection convergence" — one It per case (#4682)
# The scale set is created with explicit empty collections (as upstream's unstructured create). Upstream's point is
# that the stored listener and the desired one may differ only in nil versus empty (Go ARC writes the listener with
# its empty collections omitted); so once converged, the stored listener is rewritten as Go ARC would have written
# it, and the next scale-set reconcile must keep it (same UID, never deleted, scale set stays Running). Every case
# but the baseline carries an empty collection the rewrite drops, so strict equality in listenerSpecChanged fails it.
async def test_listener_empty_collection_convergence(world: World, case: str) -> None:
    w = world
    await w.start(enabled=("autoscalingrunnerset", "autoscalinglistener"))
    await _converges(w, w.ars(**_collections(case)))
    ars = await w.get(ARS, w.name)
    listener = await w.get(LISTENER, scale_set_listener_name(ars), w.controller_namespace)
    as_go_writes_it = _omit_empty(listener["spec"])
    assert (as_go_writes_it != listener["spec"]) == (case != "baseline"), as_go_writes_it
    listener["spec"] = as_go_writes_it
    before = _reconciles("autoscalingrunnerset")
    rewritten = await w.client.update(listener)

    async def reconciled() -> bool:
        return _reconciles("autoscalingrunnerset") > before

    if case != "baseline":  # an update that changes nothing is no event, so no reconcile
        await eventually(reconciled)

    async def kept() -> bool:
        live = await w.find(LISTENER, listener["metadata"]["name"], w.controller_namespace)
        current = await w.get(ARS, w.name)
        return (
            live is not None
            and live["metadata"]["uid"] == rewritten["metadata"]["uid"]
            and not live["metadata"].get("deletionTimestamp")
            and (current.get("status") or {}).get("phase") == "Running"
        )

    await consistently(kept, duration=2.5)


_GO_MAP_KEYS = frozenset({"labels", "annotations", "nodeSelector", "counters", "gauges", "histograms"})
"""Python only: map-typed fields among those the test leaves empty (Go's omitempty drops empty maps, keeps structs)."""


def _omit_empty(value: Any) -> Any:
    """Python only: what Go's ``omitempty`` leaves: empty slices and maps dropped, structs (even empty) kept.

    ``containers`` has no ``omitempty`` in Go's PodSpec (and the CRD requires it), so an empty list stays.
    """
    if isinstance(value, dict):
        kept = {k: _omit_empty(v) for k, v in value.items()}
        return {
            k: v
            for k, v in kept.items()
            if v is not None and not (v == [] and k != "containers") and not (v == {} and k in _GO_MAP_KEYS)
        }
    if isinstance(value, list):
        return [_omit_empty(v) for v in value]
    return value


def _reconciles(controller: str) -> float:
    from reconcilekit.metrics import REGISTRY

    return sum(
        REGISTRY.get_sample_value("controller_runtime_reconcile_total", {"controller": controller, "result": r}) or 0.0
        for r in ("success", "error", "requeue", "requeue_after")
    )


# Python only (pins the semantic equality in ephemeralRunnerSetActionableSpecChanged and listenerSpecChanged,
#   #4682/#4695, end to end): a scale set whose runner and listener templates hold explicit empty collections, with
#   the EphemeralRunnerSet and listener as Go ARC writes them (typed structs, ``omitempty``: the empty collections
#   absent). A restarted controller must see no change: no new revision, the same listener. Strict equality would
#   publish a new revision (and replace every idle runner) and rebuild the listener on every such upgrade.
async def test_nil_versus_empty_collections_are_no_runner_or_listener_change(world: World) -> None:
    w = world
    empty_container = {"env": [], "envFrom": [], "ports": [], "volumeMounts": [], "args": [], "resources": {}}
    template = {
        "metadata": {"labels": {}, "annotations": {}},
        "spec": {
            "containers": [{"name": "runner", "image": "runner:latest", **empty_container}],
            "volumes": [],
            "nodeSelector": {},
            "tolerations": [],
            "imagePullSecrets": [],
        },
    }
    listener_template = {
        "metadata": {"labels": {}, "annotations": {}},
        "spec": {"containers": [{"name": "listener", "env": [], "ports": []}], "volumes": [], "nodeSelector": {}},
    }
    await w.start(enabled=("autoscalingrunnerset", "autoscalinglistener"))
    await w.client.create(w.ars(template=template, listenerTemplate=listener_template))
    ars = await _phase(w, "Running")
    await w.stop()

    # what Go ARC would have stored: the same objects with every empty collection omitted
    ers = await w.get(ERS, w.name)
    revision = ers["spec"].get("actionableRevision")
    ers["spec"] = _omit_empty(ers["spec"])
    assert ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"] == [
        {"name": "runner", "image": "runner:latest", "resources": {}}
    ]
    ers = await w.client.update(ers)
    listener = await w.get(LISTENER, scale_set_listener_name(ars), w.controller_namespace)
    listener["spec"] = _omit_empty(listener["spec"])
    assert "volumes" not in listener["spec"]["template"]["spec"]
    listener = await w.client.update(listener)

    before = _reconciles("autoscalingrunnerset")
    await w.start(enabled=("autoscalingrunnerset", "autoscalinglistener"))

    async def reconciled() -> bool:
        return _reconciles("autoscalingrunnerset") > before

    await eventually(reconciled)

    async def unchanged() -> bool:
        now = await w.get(ERS, w.name)
        live = await w.find(LISTENER, listener["metadata"]["name"], w.controller_namespace)
        return (
            now["spec"].get("actionableRevision") == revision
            and live is not None
            and live["metadata"]["uid"] == listener["metadata"]["uid"]
            and not live["metadata"].get("deletionTimestamp")
        )

    await consistently(unchanged, duration=2.5)
    await _phase(w, "Running")
