"""Patch bytes: RFC 7386 merge patches, the optimistic lock, JSON patch, apply, strategic merge."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from reconcilekit.client.patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    OptimisticLockError,
    apply,
    create_merge_patch,
    json_patch,
    json_patch_from,
    merge,
    merge_from,
    merge_from_with_optimistic_lock,
    raw_patch,
    strategic_merge_from,
)


def test_spec_example_gives_the_exact_bytes() -> None:
    """The semantics reference's example: deleted label is null, the list is replaced whole, x is left out."""
    base = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"ports": [80, 443], "x": 1}}
    modified = {"metadata": {"labels": {"a": "9"}}, "spec": {"ports": [80], "x": 1}}
    patch = merge_from(base)
    assert patch.type == MERGE_PATCH
    assert patch.data(modified) == b'{"metadata":{"labels":{"a":"9","b":null}},"spec":{"ports":[80]}}'


def test_no_change_is_an_empty_object() -> None:
    obj = {"metadata": {"name": "a"}, "spec": {"x": [1, {"y": None}]}}
    assert merge_from(obj).data(obj) == b"{}"


def test_base_is_snapshotted_when_the_patch_is_made() -> None:
    """Mutating the object after building the patch does not change the base."""
    obj: dict[str, Any] = {"metadata": {"name": "a", "labels": {"k": "v"}}}
    patch = merge_from(obj)
    obj["metadata"]["labels"]["k"] = "w"
    assert patch.data(obj) == b'{"metadata":{"labels":{"k":"w"}}}'


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (True, 1, b'{"v":1}'),
        (1, True, b'{"v":true}'),
        (1, 1.0, b'{"v":1.0}'),
        (0, False, b'{"v":false}'),
        ([1], [True], b'{"v":[true]}'),
        ({"a": 1}, {"a": True}, b'{"v":{"a":true}}'),
        ("1", 1, b'{"v":1}'),
        (None, None, b"{}"),
        (None, {}, b'{"v":{}}'),
        ({"a": 1}, None, b'{"v":null}'),
        ([1, 2], [2, 1], b'{"v":[2,1]}'),
        ([{"a": 1}], [{"a": 1}], b"{}"),
        ({}, {}, b"{}"),
    ],
)
def test_values_are_compared_type_strictly(old: Any, new: Any, expected: bytes) -> None:
    """True is not 1 and 1 is not 1.0, at any depth; equal nulls give nothing."""
    assert merge_from({"v": old}).data({"v": new}) == expected


def test_keys_are_sorted_compact_and_go_escaped() -> None:
    patch = merge_from({})
    data = patch.data({"z": 1, "a": {"c": "<&>", "b": "ü\u2028"}})
    assert data == '{"a":{"b":"ü\\u2028","c":"\\u003c\\u0026\\u003e"},"z":1}'.encode()
    assert json.loads(data) == {"a": {"b": "ü\u2028", "c": "<&>"}, "z": 1}


def test_nested_removal_and_addition() -> None:
    base = {"spec": {"a": {"b": {"c": 1, "d": 2}}, "gone": {"x": 1}}}
    modified = {"spec": {"a": {"b": {"c": 1, "e": 3}}, "new": [1]}}
    assert create_merge_patch(base, modified) == {"spec": {"a": {"b": {"d": None, "e": 3}}, "gone": None, "new": [1]}}


def test_merge_patch_needs_objects() -> None:
    with pytest.raises(TypeError):
        create_merge_patch([], {})  # type: ignore[arg-type]


def test_optimistic_lock_puts_the_base_resource_version_into_the_patch() -> None:
    """The patch carries the base's RV even when the object was refreshed to a newer one."""
    base = {"metadata": {"name": "r", "resourceVersion": "41"}, "status": {"n": 1}}
    patch = merge_from_with_optimistic_lock(base)
    modified = {"metadata": {"name": "r", "resourceVersion": "99"}, "status": {"n": 2}}
    assert patch.data(modified) == b'{"metadata":{"resourceVersion":"41"},"status":{"n":2}}'
    assert modified["metadata"]["resourceVersion"] == "99"  # the caller's object is untouched


def test_optimistic_lock_without_change_still_sends_the_resource_version() -> None:
    base = {"metadata": {"name": "r", "resourceVersion": "7"}}
    assert merge_from_with_optimistic_lock(base).data(base) == b'{"metadata":{"resourceVersion":"7"}}'


@pytest.mark.parametrize("meta", [{}, {"resourceVersion": ""}, {"resourceVersion": None}])
def test_optimistic_lock_requires_a_resource_version(meta: dict[str, Any]) -> None:
    with pytest.raises(OptimisticLockError, match="does not have any resource version"):
        merge_from_with_optimistic_lock({"metadata": meta})


def test_plain_merge_from_carries_no_resource_version() -> None:
    base = {"metadata": {"name": "r", "resourceVersion": "41"}, "status": {"n": 1}}
    modified = {"metadata": {"name": "r", "resourceVersion": "41"}, "status": {"n": 2}}
    assert merge_from(base).data(modified) == b'{"status":{"n":2}}'


class _Thing(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    api_version: str = "v1"
    name: str | None = None


def test_models_are_dumped_the_same_way_on_both_sides() -> None:
    """A pydantic model diffs by alias without None fields; unknown extra fields ride along."""
    model = _Thing.model_validate({"api_version": "v1", "name": "a", "extra": {"k": 1}})
    patch = merge_from(model)
    model.name = None
    model.extra = {"k": 2}  # type: ignore[attr-defined]
    assert patch.data(model) == b'{"extra":{"k":2},"name":null}'


def test_merge_sends_the_whole_object() -> None:
    assert merge().data({"b": 1, "a": None}) == b'{"a":null,"b":1}'
    assert merge().type == MERGE_PATCH


def test_raw_patch_is_sent_untouched() -> None:
    patch = raw_patch(JSON_PATCH, '[{"op":"remove","path":"/x"}]')
    assert patch.type == JSON_PATCH
    assert patch.data({"ignored": True}) == b'[{"op":"remove","path":"/x"}]'


def test_json_patch_operations_and_diff() -> None:
    patch = json_patch([{"op": "test", "path": "/metadata/resourceVersion", "value": "5"}])
    assert patch.type == JSON_PATCH
    assert patch.data({}) == b'[{"op":"test","path":"/metadata/resourceVersion","value":"5"}]'
    with pytest.raises(ValueError, match="op and path"):
        json_patch([{"value": 1}])
    diff = json_patch_from({"spec": {"a": 1}})
    assert json.loads(diff.data({"spec": {"a": 2}})) == [{"op": "replace", "path": "/spec/a", "value": 2}]


def test_apply_sends_the_configuration_and_forces_by_default() -> None:
    patch = apply({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}})
    assert patch.type == APPLY_PATCH
    assert patch.force is True
    assert patch.data({"whatever": 1}) == b'{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap"}'
    assert apply(force=False).data({"a": 1}) == b'{"a":1}'


def test_strategic_merge_by_key_and_primitive_lists() -> None:
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"finalizers": ["a", "b"]},
        "spec": {"containers": [{"name": "c1", "image": "x"}, {"name": "c2", "image": "y"}]},
    }
    modified = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"finalizers": ["b", "c"]},
        "spec": {"containers": [{"name": "c1", "image": "z"}]},
    }
    patch = strategic_merge_from(base)
    assert patch.type == STRATEGIC_MERGE_PATCH
    assert json.loads(patch.data(modified)) == {
        "metadata": {
            "$setElementOrder/finalizers": ["b", "c"],
            "finalizers": ["c"],
            "$deleteFromPrimitiveList/finalizers": ["a"],
        },
        "spec": {
            "$setElementOrder/containers": [{"name": "c1"}],
            "containers": [{"name": "c1", "image": "z"}, {"$patch": "delete", "name": "c2"}],
        },
    }


def test_strategic_merge_refuses_custom_kinds() -> None:
    with pytest.raises(ValueError, match="built-in kinds only"):
        strategic_merge_from({"apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunner"})


def test_strategic_merge_with_optimistic_lock() -> None:
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"resourceVersion": "3"}, "data": {"a": "1"}}
    patch = strategic_merge_from(base, optimistic_lock=True)
    modified = {**base, "data": {"a": "2"}}
    assert patch.data(modified) == b'{"data":{"a":"2"},"metadata":{"resourceVersion":"3"}}'
