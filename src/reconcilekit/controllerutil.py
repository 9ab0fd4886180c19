"""Helpers every reconciler needs: owner references, finalizers, create-or-update, create-or-patch.

All work on JSON objects (dicts). Finalizer and owner-reference helpers change the object in
memory only; the caller persists it. With a plain `merge_from` patch the whole ``finalizers``
or ``ownerReferences`` list is sent and replaces the stored one, so prefer
`merge_from_with_optimistic_lock` when another writer may touch the same list.

Ports: sigs.k8s.io/controller-runtime/pkg/controller/controllerutil (controllerutil.go)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Any

from reconcilekit._internal import json as _json
from reconcilekit.client.interfaces import Client, GroupVersionKind, Object, object_key_from_object
from reconcilekit.client.patch import create_merge_patch, merge_from
from reconcilekit.errors import NotFoundError, ReconcileKitError

__all__ = [
    "AlreadyOwnedError",
    "MutateFn",
    "OperationResult",
    "add_finalizer",
    "contains_finalizer",
    "create_or_patch",
    "create_or_update",
    "has_controller_reference",
    "has_owner_reference",
    "remove_controller_reference",
    "remove_finalizer",
    "remove_owner_reference",
    "semantic_equal",
    "set_controller_reference",
    "set_owner_reference",
]

MutateFn = Callable[[Object], "Awaitable[object] | object"]
"""Changes the object it is given in place to the wanted state; may be a coroutine function."""


class OperationResult(StrEnum):
    """What `create_or_update` or `create_or_patch` did. Ports: controllerutil.OperationResult"""

    UNCHANGED = "unchanged"
    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    UPDATED_STATUS_ONLY = "updatedStatusOnly"


class AlreadyOwnedError(ReconcileKitError):
    """The object already has a controller reference to a different owner.

    Attributes:
        obj: the object (its key is in the message).
        owner: the controller reference it already has.

    Ports: controllerutil.AlreadyOwnedError
    """

    def __init__(self, obj: Mapping[str, Any], owner: Mapping[str, Any]) -> None:
        self.obj = obj
        self.owner = dict(owner)
        key = object_key_from_object(obj)
        super().__init__(
            f"Object {key.namespace}/{key.name} is already owned by another {owner.get('kind')} "
            f"controller {owner.get('name')}"
        )


# -- finalizers -----------------------------------------------------------------------------


def _meta(obj: Object) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    return meta


def contains_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Whether ``obj`` lists ``finalizer``. Ports: controllerutil.ContainsFinalizer"""
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def add_finalizer(obj: Object, finalizer: str) -> bool:
    """Append ``finalizer`` unless present; return whether ``obj`` changed. Ports: controllerutil.AddFinalizer"""
    meta = _meta(obj)
    finalizers = list(meta.get("finalizers") or [])
    if finalizer in finalizers:
        return False
    meta["finalizers"] = [*finalizers, finalizer]
    return True


def remove_finalizer(obj: Object, finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer``, keeping order; return whether ``obj`` changed.

    Ports: controllerutil.RemoveFinalizer
    """
    meta = _meta(obj)
    finalizers = list(meta.get("finalizers") or [])
    kept = [f for f in finalizers if f != finalizer]
    if len(kept) == len(finalizers):
        return False
    meta["finalizers"] = kept
    return True


# -- owner references -----------------------------------------------------------------------


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # Same API group, kind and name; version and UID are not compared.
    return (
        _group(str(a.get("apiVersion", ""))) == _group(str(b.get("apiVersion", "")))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    gvk = GroupVersionKind.of(owner)
    meta = owner.get("metadata") or {}
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "name": meta.get("name", ""), "uid": meta.get("uid", "")}


def _validate_owner(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    owner_ns = (owner.get("metadata") or {}).get("namespace") or ""
    obj_ns = (obj.get("metadata") or {}).get("namespace") or ""
    if owner_ns:
        if not obj_ns:
            raise ValueError(
                f"cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_ns}"
            )
        if owner_ns != obj_ns:
            raise ValueError(
                f"cross-namespace owner references are disallowed, owner's namespace {owner_ns}, "
                f"obj's namespace {obj_ns}"
            )


def _upsert(obj: Object, ref: dict[str, Any]) -> None:
    meta = _meta(obj)
    refs = list(meta.get("ownerReferences") or [])
    for i, existing in enumerate(refs):
        if _same_object(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs


def _controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") is True:
            return ref  # type: ignore[no-any-return]
    return None


def set_controller_reference(owner: Mapping[str, Any], obj: Object, *, block_owner_deletion: bool = True) -> None:
    """Make ``owner`` the controller of ``obj`` (``controller: true``), replacing a reference to it.

    Args:
        owner: the owning object, with apiVersion, kind, metadata.name and metadata.uid.
        obj: the owned object, changed in place.
        block_owner_deletion: set ``blockOwnerDeletion`` (foreground deletion waits for ``obj``).

    Raises:
        AlreadyOwnedError: ``obj`` has a controller reference to another object.
        ValueError: ``owner`` is namespaced and ``obj`` is cluster-scoped or in another namespace.

    Ports: controllerutil.SetControllerReference
    """
    ref = _reference(owner)
    ref["controller"] = True
    ref["blockOwnerDeletion"] = block_owner_deletion
    _validate_owner(owner, obj)
    existing = _controller_of(obj)
    if existing is not None and not _same_object(existing, ref):
        raise AlreadyOwnedError(obj, existing)
    _upsert(obj, ref)


def set_owner_reference(owner: Mapping[str, Any], obj: Object, *, block_owner_deletion: bool | None = None) -> None:
    """Add (or replace) a plain owner reference to ``owner`` on ``obj``; no controller check.

    Raises:
        ValueError: ``owner`` is namespaced and ``obj`` is cluster-scoped or in another namespace.

    Ports: controllerutil.SetOwnerReference
    """
    ref = _reference(owner)
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    _validate_owner(owner, obj)
    _upsert(obj, ref)


def has_owner_reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` has any reference to ``owner``. Ports: controllerutil.HasOwnerReference"""
    ref = _reference(owner)
    return any(_same_object(r, ref) for r in (obj.get("metadata") or {}).get("ownerReferences") or [])


def has_controller_reference(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` has a controller reference. Ports: controllerutil.HasControllerReference"""
    return _controller_of(obj) is not None


def remove_owner_reference(owner: Mapping[str, Any], obj: Object) -> None:
    """Remove ``obj``'s references to ``owner``.

    Raises:
        ValueError: ``obj`` has no reference to ``owner``.

    Ports: controllerutil.RemoveOwnerReference
    """
    ref = _reference(owner)
    meta = _meta(obj)
    refs = list(meta.get("ownerReferences") or [])
    kept = [r for r in refs if not _same_object(r, ref)]
    if len(kept) == len(refs):
        raise ValueError(f"{ref['kind']}/{ref['name']} is not an owner of {object_key_from_object(obj)}")
    meta["ownerReferences"] = kept


def remove_controller_reference(owner: Mapping[str, Any], obj: Object) -> None:
    """Remove ``obj``'s controller reference, which must point at ``owner``.

    Raises:
        ValueError: ``obj`` has no controller reference, or one to another object.

    Ports: controllerutil.RemoveControllerReference
    """
    existing = _controller_of(obj)
    if existing is None or not _same_object(existing, _reference(owner)):
        raise ValueError(f"{object_key_from_object(obj)} is not controlled by {owner.get('kind')}")
    remove_owner_reference(owner, obj)


# -- create or update / patch ---------------------------------------------------------------


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _norm(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Equality where ``null``, absent and empty lists or maps are the same; otherwise type-strict.

    Differs: quantities and timestamps compare as written, not by value (apimachinery's
    Semantic.DeepEqual parses them); ``True`` is not ``1``.

    Ports: equality.Semantic.DeepEqual (the nil-versus-empty rule)
    """
    return create_merge_patch({"v": _norm(a)}, {"v": _norm(b)}) == {}


async def _mutate(mutate: MutateFn, obj: Object) -> None:
    key = object_key_from_object(obj)
    result = mutate(obj)
    if inspect.isawaitable(result):
        await result
    if object_key_from_object(obj) != key:
        raise ValueError("MutateFn cannot mutate object name and/or object namespace")


def _replace(obj: Object, new: Object) -> None:
    obj.clear()
    obj.update(new)


async def create_or_update(client: Client, obj: Object, mutate: MutateFn) -> OperationResult:
    """Make the stored object match what ``mutate`` makes of it: create it, update it, or do nothing.

    Reads by ``obj``'s key through ``client`` (a cached client reads the cache: a stale cache
    gives 409 on the update). ``obj`` ends as the stored object.

    Args:
        client: reads and writes.
        obj: apiVersion, kind and key of the object; on return, the object as stored.
        mutate: called with the object (the fresh read, or ``obj`` when absent) to set the
            wanted state; must not change name or namespace.

    Returns:
        `OperationResult.CREATED`, `UPDATED` or `UNCHANGED`.

    Raises:
        ValueError: ``mutate`` changed the name or namespace.
        APIStatusError: the read (other than NotFound), create or update failed.

    Ports: controllerutil.CreateOrUpdate
    """
    gvk = GroupVersionKind.of(obj)
    key = object_key_from_object(obj)
    try:
        current = await client.get(gvk, key)
    except NotFoundError:
        await _mutate(mutate, obj)
        await client.create(obj)
        return OperationResult.CREATED
    _replace(obj, current)
    before = _json.loads(_json.dumps(obj))
    await _mutate(mutate, obj)
    if semantic_equal(before, obj):
        return OperationResult.UNCHANGED
    await client.update(obj)
    return OperationResult.UPDATED


async def create_or_patch(client: Client, obj: Object, mutate: MutateFn) -> OperationResult:
    """Like `create_or_update`, but with merge patches: one for the object, one for its status.

    No optimistic lock (as upstream). A status set by ``mutate`` is not persisted on create.

    Returns:
        ``CREATED``; ``UPDATED`` (object only); ``UPDATED_STATUS`` (object and status);
        ``UPDATED_STATUS_ONLY``; or ``UNCHANGED``.

    Raises:
        ValueError: ``mutate`` changed the name or namespace.
        APIStatusError: a read (other than NotFound) or write failed.

    Ports: controllerutil.CreateOrPatch
    """
    gvk = GroupVersionKind.of(obj)
    key = object_key_from_object(obj)
    try:
        current = await client.get(gvk, key)
    except NotFoundError:
        await _mutate(mutate, obj)
        await client.create(obj)
        return OperationResult.CREATED
    _replace(obj, current)
    patch = merge_from(obj)
    before = _json.loads(_json.dumps(obj))
    await _mutate(mutate, obj)
    after = _json.loads(_json.dumps(obj))
    before_status, after_status = before.pop("status", None), after.pop("status", None)
    result = OperationResult.UNCHANGED
    if create_merge_patch(before, after):
        await client.patch(obj, patch)
        result = OperationResult.UPDATED
    if (before_status is not None or after_status is not None) and create_merge_patch(
        {"s": before_status}, {"s": after_status}
    ):
        if result is OperationResult.UPDATED:
            if after_status is None:
                obj.pop("status", None)
            else:
                obj["status"] = after_status
        await client.status().patch(obj, patch)
        result = (
            OperationResult.UPDATED_STATUS if result is OperationResult.UPDATED else OperationResult.UPDATED_STATUS_ONLY
        )
    return result
