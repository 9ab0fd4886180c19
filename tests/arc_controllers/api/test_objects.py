"""The object accessors read without writing and the mutable ones write through."""

from __future__ import annotations

from typing import Any

from arc_controllers.api.v1alpha1 import (
    API_VERSION,
    EPHEMERAL_RUNNER,
    SECRET,
    EphemeralRunnerPhase,
    Kind,
    objects,
)


def test_reads_of_absent_fields_are_empty_and_leave_the_object_alone() -> None:
    obj: dict[str, Any] = {}
    assert objects.meta(obj) == {}
    assert objects.spec(obj) == {}
    assert objects.status(obj) == {}
    assert objects.labels(obj) == {}
    assert objects.annotations(obj) == {}
    assert objects.finalizers(obj) == []
    assert objects.owner_references(obj) == []
    assert objects.name(obj) == ""
    assert objects.namespace(obj) == ""
    assert objects.uid(obj) == ""
    assert objects.resource_version(obj) == ""
    assert not objects.is_deleting(obj)
    assert objects.controller_reference(obj) is None
    assert obj == {}


def test_reads_of_present_fields() -> None:
    obj: dict[str, Any] = {
        "metadata": {
            "name": "r",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"a": "b"},
            "annotations": {"c": "d"},
            "finalizers": ["f"],
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"name": "x"}, {"name": "y", "controller": True}],
        },
        "spec": {"replicas": 1},
        "status": {"phase": "Running"},
    }
    assert (objects.name(obj), objects.namespace(obj), objects.uid(obj), objects.resource_version(obj)) == (
        "r",
        "ns",
        "u",
        "7",
    )
    assert objects.labels(obj) == {"a": "b"}
    assert objects.annotations(obj) == {"c": "d"}
    assert objects.finalizers(obj) == ["f"]
    assert objects.is_deleting(obj)
    assert objects.controller_reference(obj) == {"name": "y", "controller": True}
    assert objects.spec(obj)["replicas"] == 1
    assert objects.status(obj)["phase"] == "Running"


def test_mutable_accessors_create_the_field() -> None:
    obj: dict[str, Any] = {}
    objects.mutable_status(obj)["phase"] = "Pending"
    objects.mutable_meta(obj)["name"] = "r"
    assert obj == {"status": {"phase": "Pending"}, "metadata": {"name": "r"}}


def test_one_spelling_of_kinds_and_phases() -> None:
    assert EPHEMERAL_RUNNER.kind == Kind.EPHEMERAL_RUNNER == "EphemeralRunner"
    assert EPHEMERAL_RUNNER.api_version == API_VERSION == "actions.github.com/v1alpha1"
    assert SECRET.api_version == "v1"
    assert SECRET.kind == "Secret"
    assert EphemeralRunnerPhase.OUTDATED == "Outdated"
