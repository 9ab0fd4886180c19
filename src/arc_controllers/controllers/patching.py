"""Copy-on-first-write snapshots and the JSON merge patches computed from them.

A reconcile that changes nothing takes no copy. The first `LazyCopy.mutate` deep-copies
the object as the "before" snapshot and hands back the live object; `LazyCopy.merge_from`
then diffs live against snapshot, so only changed fields are sent and fields written
concurrently by others (the listener's job fields, a status marker) are left alone.

Ports: controllers/actions.github.com/lazycopy.go; client.MergeFrom and
client.MergeFromWithOptimisticLock (sigs.k8s.io/controller-runtime/pkg/client/patch.go)
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from reconcilekit.client.interfaces import Object
from reconcilekit.errors import ConflictError

__all__ = [
    "MERGE_PATCH_TYPE",
    "LazyCopy",
    "MergeFrom",
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
        self._before = before
        self._optimistic_lock = optimistic_lock

    @property
    def type(self) -> str:
        """The content type, ``application/merge-patch+json``."""
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


async def retry_on_conflict(
    attempt: Callable[[], Awaitable[T]], *, steps: int = 5, duration: float = 0.01, factor: float = 1.0
) -> T:
    """Run ``attempt`` again while it raises `ConflictError`, up to ``steps`` times.

    Defaults are client-go's ``retry.DefaultRetry`` (5 steps, 10 ms, factor 1, jitter 0.1).

    Raises:
        ConflictError: the last attempt still conflicted.

    Ports: retry.RetryOnConflict
    """
    delay = duration
    for step in range(steps):
        try:
            return await attempt()
        except ConflictError:
            if step == steps - 1:
                raise
            await asyncio.sleep(delay * (1 + 0.1 * random.random()))
            delay *= factor
    raise AssertionError("unreachable")


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
        ApiError: the API server refused the patch.

    Ports: lazyCopy.Mutate followed by lazyCopy.MergeFrom and a Patch call
    """
    lazy = LazyCopy(obj)
    yield lazy.mutate()
    patch = lazy.merge_from(optimistic_lock=optimistic_lock)
    if not json_merge_diff(lazy._before, obj):
        return
    writer = client.status() if status else client
    await writer.patch(obj, patch)
