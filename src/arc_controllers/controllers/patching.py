"""Copy-on-first-write snapshots and the JSON merge patches computed from them.

A reconcile that changes nothing takes no copy. The first `LazyCopy.mutate` deep-copies
the object as the "before" snapshot and hands back the live object; `LazyCopy.merge_from`
then diffs live against snapshot, so only changed fields are sent and fields written
concurrently by others (the listener's job fields, a status marker) are left alone.

Ports: controllers/actions.github.com/lazycopy.go; client.MergeFrom and
client.MergeFromWithOptimisticLock (sigs.k8s.io/controller-runtime/pkg/client/patch.go)
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from reconcilekit import retry as _retry
from reconcilekit.client.interfaces import Object

__all__ = [
    "MERGE_PATCH_TYPE",
    "LazyCopy",
    "MergeFrom",
    "SupersededVersions",
    "add_finalizer",
    "contains_finalizer",
    "json_merge_diff",
    "merge_patch",
    "remove_finalizer",
    "retry_on_conflict",
    "snapshots_taken",
]

MERGE_PATCH_TYPE = "application/merge-patch+json"

T = TypeVar("T")

_snapshots = 0


def snapshots_taken() -> int:
    """Python only: how many `LazyCopy` snapshots this process has taken (tests and benchmarks)."""
    return _snapshots


def json_merge_diff(before: Any, after: Any) -> Any:
    """The RFC 7386 merge patch that turns ``before`` into ``after``; ``{}`` when they are equal.

    Removed keys become ``None``; lists and scalars are replaced whole.

    Ports: jsonpatch.CreateMergePatch as client.MergeFrom uses it
    """
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return copy.deepcopy(after)
    patch: dict[str, Any] = {}
    for key, value in after.items():
        if key not in before:
            patch[key] = copy.deepcopy(value)
        elif before[key] != value:
            if isinstance(before[key], Mapping) and isinstance(value, Mapping):
                patch[key] = json_merge_diff(before[key], value)
            else:
                patch[key] = copy.deepcopy(value)
    for key in before:
        if key not in after:
            patch[key] = None
    return patch


class MergeFrom:
    """A merge patch against a snapshot, optionally carrying the snapshot's resourceVersion as a lock.

    With the lock the API server answers 409 Conflict when the object changed since
    the snapshot was read, so a write decided on stale data is never applied.

    Ports: client.MergeFrom / client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{})
    """

    def __init__(self, before: Mapping[str, Any], *, optimistic_lock: bool = False) -> None:
        """Python only: see the class docstring."""
        self._before = before
        self._optimistic_lock = optimistic_lock

    @property
    def type(self) -> str:
        """Python only: the content type, ``application/merge-patch+json``."""
        return MERGE_PATCH_TYPE

    def diff(self, obj: Mapping[str, Any], /) -> dict[str, Any]:
        """Python only: the patch body as a dict (``data`` is its JSON)."""
        patch: dict[str, Any] = json_merge_diff(self._before, obj)
        if self._optimistic_lock:
            rv = (self._before.get("metadata") or {}).get("resourceVersion", "")
            patch.setdefault("metadata", {})["resourceVersion"] = rv
        return patch

    def data(self, obj: Mapping[str, Any], /) -> bytes:
        """The request body for ``obj``. Ports: mergeFromPatch.Data"""
        return json.dumps(self.diff(obj), separators=(",", ":")).encode()


class LazyCopy:
    """Wraps a fetched object; snapshots it only on the first `mutate`.

    Not safe for concurrent use. Every change the patch must carry has to be made on
    the object `mutate` returns, after that call: a change made before it is baked
    into the snapshot and silently missing from the patch.

    Ports: lazyCopy
    """

    __slots__ = ("_before", "obj")

    def __init__(self, obj: Object) -> None:
        """Python only: see the class docstring."""
        self.obj = obj
        self._before: Object | None = None

    def mutate(self) -> Object:
        """Snapshot on first call; return the live object to change. Ports: lazyCopy.Mutate"""
        global _snapshots
        if self._before is None:
            self._before = copy.deepcopy(self.obj)
            _snapshots += 1
        return self.obj

    def modified(self) -> bool:
        """True once `mutate` was called. Ports: lazyCopy.Modified"""
        return self._before is not None

    def merge_from(self, *, optimistic_lock: bool = False) -> MergeFrom:
        """The merge patch from the snapshot to the live object.

        Raises:
            RuntimeError: `mutate` was never called (a programming error).

        Ports: lazyCopy.MergeFrom
        """
        if self._before is None:
            raise RuntimeError("merge_from called before mutate: no snapshot to diff against")
        return MergeFrom(self._before, optimistic_lock=optimistic_lock)


def contains_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """Ports: controllerutil.ContainsFinalizer"""
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def add_finalizer(obj: Object, finalizer: str) -> bool:
    """Append ``finalizer`` if missing; True when it was added. Ports: controllerutil.AddFinalizer"""
    finalizers = obj.setdefault("metadata", {}).setdefault("finalizers", [])
    if finalizer in finalizers:
        return False
    finalizers.append(finalizer)
    return True


def remove_finalizer(obj: Object, finalizer: str) -> bool:
    """Drop ``finalizer``; True when it was present. Ports: controllerutil.RemoveFinalizer"""
    meta = obj.setdefault("metadata", {})
    finalizers = meta.get("finalizers") or []
    if finalizer not in finalizers:
        return False
    meta["finalizers"] = [f for f in finalizers if f != finalizer]
    return True


async def retry_on_conflict(attempt: Callable[[], Awaitable[T]]) -> T:
    """Run ``attempt`` again while it conflicts, with client-go's ``retry.DefaultBackoff``.

    Raises:
        ConflictError: the last attempt still conflicted.

    Ports: retry.RetryOnConflict(retry.DefaultBackoff, ...) as the EphemeralRunnerSet status writers call it
    """
    return await _retry.retry_on_conflict(_retry.DEFAULT_BACKOFF, attempt)


class SupersededVersions:
    """Remembers the resourceVersions this process replaced by its own writes, per object UID.

    A reconcile triggered before the informer cache saw the controller's own write reads
    the object as it was before that write and would act on it again (a second status
    patch, a second delete, even a new JIT registration for a runner it just deleted). A
    cached object whose resourceVersion is one this process superseded is known to be
    stale, and the watch event of the newer version enqueues the object again.

    Python only: controller-runtime has no such guard; the extra requests it avoids are the
    echo reads and writes of the per-runner ledger.
    """

    __slots__ = ("_by_uid", "_objects", "_per_object")

    def __init__(self, *, per_object: int = 4, objects: int = 10_000) -> None:
        """Python only: see the class docstring."""
        self._by_uid: OrderedDict[str, list[str]] = OrderedDict()
        self._per_object = per_object
        self._objects = objects

    def superseded(self, uid: str, resource_version: str) -> None:
        """Record that a successful write replaced ``resource_version`` of object ``uid``.

        Keeps the last ``per_object`` versions of the last ``objects`` objects written.
        Python only.
        """
        if not uid or not resource_version:
            return
        versions = self._by_uid.setdefault(uid, [])
        self._by_uid.move_to_end(uid)
        versions.append(resource_version)
        del versions[: -self._per_object]
        while len(self._by_uid) > self._objects:
            self._by_uid.popitem(last=False)

    def is_stale(self, obj: Mapping[str, Any]) -> bool:
        """Python only: true when ``obj`` shows a version this process already replaced."""
        meta = obj.get("metadata") or {}
        return str(meta.get("resourceVersion", "")) in self._by_uid.get(str(meta.get("uid", "")), ())

    def forget(self, uid: str) -> None:
        """Python only: drop what is known about ``uid`` (the object is gone)."""
        self._by_uid.pop(uid, None)


@asynccontextmanager
async def merge_patch(
    client: Any, obj: Object, *, status: bool = False, optimistic_lock: bool = False
) -> AsyncIterator[Object]:
    """Snapshot ``obj``, let the block change it, then send one merge patch of the difference.

    No request is made when the block leaves ``obj`` as it was, or raises. After the
    patch ``obj`` holds the server's answer (new resourceVersion included).

    Args:
        client: Where the patch goes (a `reconcilekit.client.Client`).
        status: Patch the ``status`` subresource instead of the object.
        optimistic_lock: Carry the snapshot's resourceVersion, so the write fails with
            `ConflictError` if anyone wrote ``obj`` since it was read.

    Raises:
        APIStatusError: the API server refused the patch.

    Ports: lazyCopy.Mutate followed by lazyCopy.MergeFrom and a Patch call
    """
    lazy = LazyCopy(obj)
    yield lazy.mutate()
    if not lazy.merge_from().diff(obj):
        return
    patch = lazy.merge_from(optimistic_lock=optimistic_lock)
    writer = client.status() if status else client
    await writer.patch(obj, patch)
