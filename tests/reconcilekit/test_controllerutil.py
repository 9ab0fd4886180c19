"""controllerutil: finalizers, owner references, create_or_update and create_or_patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, Patch
from reconcilekit.controllerutil import (
    AlreadyOwnedError,
    OperationResult,
    add_finalizer,
    contains_finalizer,
    create_or_patch,
    create_or_update,
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_finalizer,
    remove_owner_reference,
    semantic_equal,
    set_controller_reference,
    set_owner_reference,
)
from reconcilekit.errors import NotFoundError


def _obj(kind: str = "ConfigMap", name: str = "o", ns: str | None = "ns", api: str = "v1", uid: str = "u1") -> Object:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": api, "kind": kind, "metadata": meta}


# -- finalizers -----------------------------------------------------------------------------


def test_add_finalizer_reports_change_once() -> None:
    obj = _obj()
    assert add_finalizer(obj, "a") is True
    assert add_finalizer(obj, "a") is False
    assert obj["metadata"]["finalizers"] == ["a"]
    assert contains_finalizer(obj, "a")
    assert not contains_finalizer(obj, "b")


def test_remove_finalizer_removes_every_occurrence_and_keeps_order() -> None:
    obj = _obj()
    obj["metadata"]["finalizers"] = ["a", "x", "b", "x"]
    assert remove_finalizer(obj, "x") is True
    assert obj["metadata"]["finalizers"] == ["a", "b"]
    assert remove_finalizer(obj, "x") is False


def test_finalizers_on_object_without_metadata() -> None:
    obj: Object = {"apiVersion": "v1", "kind": "ConfigMap"}
    assert not contains_finalizer(obj, "a")
    assert remove_finalizer(obj, "a") is False
    assert add_finalizer(obj, "a") is True


# -- owner references -----------------------------------------------------------------------


def test_set_controller_reference_builds_the_reference() -> None:
    owner = _obj("EphemeralRunnerSet", "set", api="actions.github.com/v1alpha1", uid="owner-uid")
    obj = _obj("EphemeralRunner", "r", api="actions.github.com/v1alpha1")
    set_controller_reference(owner, obj)
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "name": "set",
            "uid": "owner-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert has_controller_reference(obj)
    assert has_owner_reference(owner, obj)


def test_set_controller_reference_replaces_the_same_owner_in_place() -> None:
    """Same group, kind and name is the same owner even at another version and UID."""
    obj = _obj()
    other = _obj("Secret", "s", uid="s1")
    set_owner_reference(other, obj)
    set_controller_reference(_obj("Deployment", "d", api="apps/v1", uid="old"), obj)
    set_controller_reference(_obj("Deployment", "d", api="apps/v2", uid="new"), obj)
    refs = obj["metadata"]["ownerReferences"]
    assert [r["kind"] for r in refs] == ["Secret", "Deployment"]
    assert refs[1]["uid"] == "new"
    assert refs[1]["apiVersion"] == "apps/v2"


def test_set_controller_reference_refuses_a_second_controller() -> None:
    obj = _obj(name="child")
    set_controller_reference(_obj("Deployment", "d1", api="apps/v1"), obj)
    with pytest.raises(AlreadyOwnedError, match="Object ns/child is already owned by another Deployment controller d1"):
        set_controller_reference(_obj("Deployment", "d2", api="apps/v1"), obj)
    # Another group with the same kind and name is another object.
    with pytest.raises(AlreadyOwnedError):
        set_controller_reference(_obj("Deployment", "d1", api="example.com/v1"), obj)


def test_owner_namespace_rules() -> None:
    with pytest.raises(ValueError, match="cluster-scoped resource must not have a namespace-scoped owner"):
        set_controller_reference(_obj(ns="a"), _obj("Namespace", "n", ns=None))
    with pytest.raises(ValueError, match="cross-namespace owner references are disallowed"):
        set_owner_reference(_obj(ns="a"), _obj(ns="b"))
    # A cluster-scoped owner may own anything.
    obj = _obj(ns="b")
    set_owner_reference(_obj("Namespace", "n", ns=None), obj)
    assert "controller" not in obj["metadata"]["ownerReferences"][0]


def test_set_owner_reference_does_not_check_controller_and_can_block() -> None:
    obj = _obj()
    set_controller_reference(_obj("Deployment", "d1", api="apps/v1"), obj)
    set_owner_reference(_obj("Deployment", "d2", api="apps/v1"), obj, block_owner_deletion=True)
    assert obj["metadata"]["ownerReferences"][1]["blockOwnerDeletion"] is True


def test_remove_owner_and_controller_references() -> None:
    owner = _obj("Deployment", "d", api="apps/v1")
    obj = _obj()
    with pytest.raises(ValueError, match="not controlled"):
        remove_controller_reference(owner, obj)
    set_controller_reference(owner, obj)
    remove_controller_reference(owner, obj)
    assert obj["metadata"]["ownerReferences"] == []
    with pytest.raises(ValueError, match="is not an owner"):
        remove_owner_reference(owner, obj)


def test_semantic_equal_treats_absent_null_and_empty_alike() -> None:
    assert semantic_equal({"a": None, "b": [], "c": {}}, {})
    assert semantic_equal({"spec": {"env": []}}, {"spec": {}})
    assert not semantic_equal({"a": 1}, {"a": True})
    assert not semantic_equal({"a": ""}, {})


# -- create or update / patch ---------------------------------------------------------------


class _MemClient:
    """A tiny in-memory stand-in that records calls (the real fake client lives in reconcilekit.testing)."""

    def __init__(self) -> None:
        self.store: dict[tuple[str, str, str], Object] = {}
        self.calls: list[tuple[str, bytes | None]] = []
        self.rv = 0

    def _key(self, obj: Object) -> tuple[str, str, str]:
        m = obj["metadata"]
        return obj["kind"], m.get("namespace", ""), m["name"]

    def _stamp(self, obj: Object) -> Object:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        self.calls.append(("get", None))
        try:
            return copy.deepcopy(self.store[(gvk.kind, key.namespace, key.name)])
        except KeyError:
            raise NotFoundError(404, "NotFound", "not found") from None

    async def create(self, obj: Object, /, **_: Any) -> Object:
        self.calls.append(("create", None))
        stored = self._stamp(copy.deepcopy(obj))
        stored.pop("status", None)  # status is not persisted on create when a status subresource exists
        self.store[self._key(obj)] = stored
        obj.clear()
        obj.update(copy.deepcopy(stored))
        return obj

    async def update(self, obj: Object, /, **_: Any) -> Object:
        self.calls.append(("update", None))
        self.store[self._key(obj)] = self._stamp(copy.deepcopy(obj))
        return obj

    async def patch(self, obj: Object, patch: Patch, /, **_: Any) -> Object:
        data = patch.data(obj)
        self.calls.append(("patch", data))
        stored = self.store[self._key(obj)]
        status = stored.get("status")
        new = self._stamp(copy.deepcopy(obj))
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status
        self.store[self._key(obj)] = new
        obj.clear()
        obj.update(copy.deepcopy(new))
        return obj

    def status(self) -> _MemStatus:
        return _MemStatus(self)


class _MemStatus:
    def __init__(self, c: _MemClient) -> None:
        self.c = c

    async def patch(self, obj: Object, patch: Patch, /, **_: Any) -> Object:
        self.c.calls.append(("status-patch", patch.data(obj)))
        self.c.store[self.c._key(obj)]["status"] = copy.deepcopy(obj.get("status"))
        return obj


async def test_create_or_update_creates_updates_and_leaves_alone() -> None:
    c = _MemClient()
    obj = _obj(uid="")

    def want(o: Object) -> None:
        o["data"] = {"k": "v"}

    assert await create_or_update(c, obj, want) == OperationResult.CREATED  # type: ignore[arg-type]
    assert c.store[("ConfigMap", "ns", "o")]["data"] == {"k": "v"}
    assert await create_or_update(c, _obj(uid=""), want) == OperationResult.UNCHANGED  # type: ignore[arg-type]

    async def want2(o: Object) -> None:
        o["data"] = {"k": "w"}

    obj2 = _obj(uid="")
    assert await create_or_update(c, obj2, want2) == OperationResult.UPDATED  # type: ignore[arg-type]
    assert obj2["data"] == {"k": "w"}
    assert [name for name, _ in c.calls] == ["get", "create", "get", "get", "update"]


async def test_create_or_update_refuses_a_renaming_mutate() -> None:
    c = _MemClient()

    def rename(o: Object) -> None:
        o["metadata"]["name"] = "other"

    with pytest.raises(ValueError, match="MutateFn cannot mutate object name and/or object namespace"):
        await create_or_update(c, _obj(), rename)  # type: ignore[arg-type]


async def test_create_or_patch_results_and_bytes() -> None:
    c = _MemClient()
    obj = _obj(uid="")
    assert await create_or_patch(c, obj, lambda o: o.update(data={"a": "1"})) == OperationResult.CREATED  # type: ignore[arg-type]
    c.calls.clear()
    assert await create_or_patch(c, _obj(uid=""), lambda o: None) == OperationResult.UNCHANGED  # type: ignore[arg-type]

    def spec_only(o: Object) -> None:
        o["data"] = {"a": "2"}

    assert await create_or_patch(c, _obj(uid=""), spec_only) == OperationResult.UPDATED  # type: ignore[arg-type]
    assert c.calls[-1] == ("patch", b'{"data":{"a":"2"}}')

    def status_only(o: Object) -> None:
        o["status"] = {"phase": "Ready"}

    assert await create_or_patch(c, _obj(uid=""), status_only) == OperationResult.UPDATED_STATUS_ONLY  # type: ignore[arg-type]
    assert c.calls[-1] == ("status-patch", b'{"status":{"phase":"Ready"}}')

    def both(o: Object) -> None:
        o["data"] = {"a": "3"}
        o["status"] = {"phase": "Done"}

    assert await create_or_patch(c, _obj(uid=""), both) == OperationResult.UPDATED_STATUS  # type: ignore[arg-type]
    assert c.store[("ConfigMap", "ns", "o")]["status"] == {"phase": "Done"}
    assert c.store[("ConfigMap", "ns", "o")]["data"] == {"a": "3"}
