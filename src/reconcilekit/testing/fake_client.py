"""An in-memory API server for unit tests: resource versions, watches, 410 on demand.

`FakeClient` implements the `WithWatch` role over a dict store. It behaves like a real API
server in the ways controllers notice:

* every write bumps one global ``resourceVersion`` (a decimal string) and is recorded in an
  event history that watches replay from any resourceVersion still in the history;
* `FakeClient.compact` drops that history: a watch or a list at an older resourceVersion
  then gets ``410 Expired`` ("too old resource version"), and open watches can be ended
  with an ``ERROR`` 410 event, exactly what an informer behind etcd's compaction sees;
* `FakeClient.close_watches` ends open watches cleanly (a server-side timeout);
* lists page with ``limit``/``continue``, select by labels and fields (any dotted path,
  ``=``, ``==`` and ``!=``);
* ``update``/``patch`` with a stale resourceVersion → 409 Conflict; create of a taken name
  → 409 AlreadyExists; ``generateName``; finalizers hold a deletion (deletionTimestamp set);
* ``metadata.generation`` is bumped when anything outside ``metadata`` and ``status``
  changes (unlike controller-runtime's fake client, like a real server);
* kinds have a status subresource unless listed in ``kinds_without_status``: then
  ``update``/``patch`` keep the stored status and ``status().update/patch`` change only it;
* `FakeClient.requests` records every call as a `RecordedRequest`.

Not emulated: admission, defaulting, validation, garbage collection, server-side apply
field ownership (an apply patch is applied as a merge patch).

Ports: sigs.k8s.io/controller-runtime/pkg/client/fake
Differs: generation is bumped, lists page, any field is selectable, seeding is a constructor argument.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import jsonpatch

from reconcilekit._internal.jsoncopy import deep_copy_json
from reconcilekit._internal.selectors import parse_label_selector
from reconcilekit.client.interfaces import (
    GroupVersionKind,
    Object,
    ObjectKey,
    ObjectList,
    Patch,
    WatchEvent,
    WatchEventType,
    object_key_from_object,
)
from reconcilekit.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
)
from reconcilekit.testing._fake_support import SubResource, field_terms, fields_match, merge_patch, now

__all__ = ["DEFAULT_KINDS_WITHOUT_STATUS", "FakeClient", "RecordedRequest"]

DEFAULT_KINDS_WITHOUT_STATUS = frozenset(
    {
        "ConfigMap",
        "Secret",
        "Lease",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Event",
    }
)
"""Kinds whose status (if any) is written by plain updates: no status subresource."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One call made to a `FakeClient`.

    Attributes:
        verb: get, list, watch, create, update, patch, delete, deletecollection.
        kind: the object's kind.
        namespace, name: the target ("" when not applicable).
        subresource: "status" etc., or "".
    """

    verb: str
    kind: str
    namespace: str
    name: str
    subresource: str = ""


@dataclass(slots=True)
class _Event:
    rv: int
    gvk: GroupVersionKind
    type: WatchEventType
    obj: Object


class _Watcher:
    __slots__ = ("gvk", "queue")

    def __init__(self, gvk: GroupVersionKind) -> None:
        self.gvk = gvk
        self.queue: asyncio.Queue[_Event | str] = asyncio.Queue()


class FakeClient:
    """An in-memory `WithWatch` client. See the module docstring for what it emulates.

    Args:
        objects: objects to seed (they get resourceVersions in order).
        kinds_without_status: kinds with no status subresource.

    Python only: a test double shaped like controller-runtime's fake client.
    """

    def __init__(
        self,
        objects: Iterable[Object] = (),
        *,
        kinds_without_status: Iterable[str] = DEFAULT_KINDS_WITHOUT_STATUS,
    ) -> None:
        self._store: dict[GroupVersionKind, dict[ObjectKey, Object]] = {}
        self._rv = 0
        self._history: list[_Event] = []
        self._compacted = 0
        self._watchers: set[_Watcher] = set()
        self._no_status = frozenset(kinds_without_status)
        self.requests: list[RecordedRequest] = []
        """Every call made, oldest first."""
        for obj in objects:
            self._create(deep_copy_json(obj))

    # -- test controls -----------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion handed out."""
        return str(self._rv)

    def count(self, verb: str | None = None, kind: str | None = None, *, subresource: str | None = None) -> int:
        """How many recorded requests match every given filter."""
        return sum(
            1
            for r in self.requests
            if (verb is None or r.verb == verb)
            and (kind is None or r.kind == kind)
            and (subresource is None or r.subresource == subresource)
        )

    def compact(self, *, expire_open_watches: bool = True) -> str:
        """Forget the event history up to now, as etcd's compaction does.

        Afterwards a watch or list at any older resourceVersion gets 410 Expired. With
        ``expire_open_watches`` every open watch also ends with an ``ERROR`` 410 event (what
        the API server sends a watcher that fell behind).

        Returns:
            The compacted resourceVersion.
        """
        self._compacted = self._rv
        self._history.clear()
        if expire_open_watches:
            for watcher in list(self._watchers):
                watcher.queue.put_nowait("gone")
        return str(self._compacted)

    def close_watches(self) -> None:
        """End every open watch cleanly, as a server-side timeout does."""
        for watcher in list(self._watchers):
            watcher.queue.put_nowait("close")

    def bookmark(self) -> None:
        """Send every open watch a BOOKMARK at the current resourceVersion."""
        for watcher in list(self._watchers):
            watcher.queue.put_nowait("bookmark")

    @property
    def open_watches(self) -> int:
        """How many watch streams are open."""
        return len(self._watchers)

    def put_object(self, obj: Object) -> Object:
        """Create or replace ``obj`` without recording a request (test set-up)."""
        gvk = GroupVersionKind.of(obj)
        key = object_key_from_object(obj)
        if key in self._store.get(gvk, {}):
            stored = deep_copy_json(obj)
            return self._write(gvk, key, stored, "MODIFIED")
        return self._create(deep_copy_json(obj))

    def stored(self, gvk: GroupVersionKind, key: ObjectKey) -> Object | None:
        """The stored object itself (no copy, no request recorded), or ``None``."""
        return self._store.get(gvk, {}).get(key)

    # -- Reader ------------------------------------------------------------------------

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        self._record("get", gvk.kind, key.namespace, key.name)
        await asyncio.sleep(0)
        obj = self._store.get(gvk, {}).get(key)
        if obj is None:
            raise self._not_found(gvk, key.name)
        return deep_copy_json(obj)

    async def list(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        self._record("list", gvk.kind, namespace or "", "")
        await asyncio.sleep(0)
        if resource_version not in (None, "", "0") and int(resource_version) < self._compacted:
            raise self._expired(resource_version)
        selector = parse_label_selector(labels)
        terms = field_terms(fields)
        keys = sorted(self._store.get(gvk, {}))
        start = 0
        list_rv = str(self._rv)
        if continue_token:
            token_rv, _, last = continue_token.partition(":")
            list_rv = token_rv
            start = next((i for i, k in enumerate(keys) if str(k) > last), len(keys))
        items: list[Object] = []
        next_token: str | None = None
        for i in range(start, len(keys)):
            obj = self._store[gvk][keys[i]]
            if namespace and keys[i].namespace != namespace:
                continue
            if not selector.matches(obj) or not fields_match(obj, terms):
                continue
            if limit and len(items) >= limit:
                next_token = f"{list_rv}:{keys[i - 1]}"
                break
            items.append(deep_copy_json(obj))
        return ObjectList(items=items, resource_version=list_rv, continue_token=next_token)

    # -- Writer ------------------------------------------------------------------------

    async def create(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        gvk = GroupVersionKind.of(obj)
        meta = obj.get("metadata") or {}
        self._record("create", gvk.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        await asyncio.sleep(0)
        if meta.get("resourceVersion"):
            raise BadRequestError(400, "BadRequest", "resourceVersion should not be set on objects to be created")
        if dry_run:
            return obj
        stored = self._create(deep_copy_json(obj))
        return self._write_back(obj, stored)

    async def update(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        return await self._update(obj, subresource="", dry_run=dry_run)

    async def patch(
        self,
        obj: Object,
        patch: Patch,
        /,
        *,
        dry_run: bool = False,
        field_owner: str | None = None,
        force: bool | None = None,
    ) -> Object:
        return await self._patch(obj, patch, subresource="", dry_run=dry_run)

    async def delete(
        self,
        obj: Object,
        /,
        *,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Object | None:
        """Delete as the API server does; answers with the object (a copy) as the server would.

        An object with finalizers answers with its deletionTimestamp set; one removed at
        once answers with its last state; a dry run with the object as stored.
        """
        gvk = GroupVersionKind.of(obj)
        key = object_key_from_object(obj)
        self._record("delete", gvk.kind, key.namespace, key.name)
        await asyncio.sleep(0)
        stored = self._store.get(gvk, {}).get(key)
        if stored is None:
            raise self._not_found(gvk, key.name)
        meta = stored["metadata"]
        for field, want in (preconditions or {}).items():
            have = meta.get("uid" if field == "uid" else "resourceVersion")
            if want and have != want:
                raise ConflictError(409, "Conflict", f"Precondition failed: {field}: {want}, actual: {have}")
        if dry_run:
            return deep_copy_json(stored)
        return deep_copy_json(self._delete(gvk, key))

    async def delete_all_of(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
    ) -> None:
        self._record("deletecollection", gvk.kind, namespace or "", "")
        await asyncio.sleep(0)
        selector = parse_label_selector(labels)
        terms = field_terms(fields)
        for key, obj in list(self._store.get(gvk, {}).items()):
            if namespace and key.namespace != namespace:
                continue
            if selector.matches(obj) and fields_match(obj, terms) and not dry_run:
                self._delete(gvk, key)

    def status(self) -> SubResource:
        return SubResource(self, "status")

    def sub_resource(self, name: str, /) -> SubResource:
        return SubResource(self, name)

    # -- watch -------------------------------------------------------------------------

    async def watch(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = True,
        read_idle_timeout: float | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Replay history after ``resource_version``, then stream live events.

        A ``resource_version`` older than the last `compact` yields one ``ERROR`` 410 event.
        ``read_idle_timeout`` is accepted and ignored: an in-memory server never goes half-open.
        """
        self._record("watch", gvk.kind, namespace or "", "")
        selector = parse_label_selector(labels)
        terms = field_terms(fields)

        def visible(ev: _Event) -> bool:
            if ev.gvk != gvk:
                return False
            meta = ev.obj.get("metadata") or {}
            if namespace and meta.get("namespace") != namespace:
                return False
            return selector.matches(ev.obj) and fields_match(ev.obj, terms)

        start = int(resource_version) if resource_version not in (None, "", "0") else self._rv
        if start < self._compacted:
            yield WatchEvent("ERROR", self._expired_status(str(start)))
            return
        watcher = _Watcher(gvk)
        self._watchers.add(watcher)
        deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
        try:
            for ev in [e for e in self._history if e.rv > start]:
                if visible(ev):
                    yield WatchEvent(ev.type, deep_copy_json(ev.obj))
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return
                try:
                    async with asyncio.timeout(remaining):
                        item = await watcher.queue.get()
                except TimeoutError:
                    return
                if item == "close":
                    return
                if item == "gone":
                    yield WatchEvent("ERROR", self._expired_status(str(start)))
                    return
                if item == "bookmark":
                    if allow_watch_bookmarks:
                        yield WatchEvent(
                            "BOOKMARK",
                            {
                                "apiVersion": gvk.api_version,
                                "kind": gvk.kind,
                                "metadata": {"resourceVersion": str(self._rv)},
                            },
                        )
                    continue
                assert isinstance(item, _Event)
                if item.rv > start and visible(item):
                    start = item.rv
                    yield WatchEvent(item.type, deep_copy_json(item.obj))
        finally:
            self._watchers.discard(watcher)

    # -- internals ---------------------------------------------------------------------

    def _record(self, verb: str, kind: str, namespace: str, name: str, subresource: str = "") -> None:
        self.requests.append(RecordedRequest(verb, kind, namespace, name, subresource))

    @staticmethod
    def _not_found(gvk: GroupVersionKind, name: str) -> NotFoundError:
        resource = gvk.kind.lower() + "s"
        return NotFoundError(
            404, "NotFound", f'{resource} "{name}" not found', details={"name": name, "kind": resource}
        )

    def _expired_status(self, rv: str) -> Object:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": 410,
            "reason": "Expired",
            "message": f"too old resource version: {rv} ({self._compacted})",
        }

    def _expired(self, rv: str) -> GoneError:
        return GoneError(410, "Expired", f"too old resource version: {rv} ({self._compacted})")

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _emit(self, gvk: GroupVersionKind, event_type: WatchEventType, obj: Object) -> None:
        ev = _Event(self._rv, gvk, event_type, deep_copy_json(obj))
        self._history.append(ev)
        for watcher in list(self._watchers):
            if watcher.gvk == gvk:
                watcher.queue.put_nowait(ev)

    def _create(self, obj: Object) -> Object:
        gvk = GroupVersionKind.of(obj)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise InvalidError(422, "Invalid", "metadata.name: Required value: name or generateName is required")
            meta["name"] = prefix + uuid.uuid4().hex[:5]
        key = object_key_from_object(obj)
        bucket = self._store.setdefault(gvk, {})
        if key in bucket:
            raise AlreadyExistsError(
                409, "AlreadyExists", f'{gvk.kind.lower()}s "{key.name}" already exists', details={"name": key.name}
            )
        meta.pop("deletionTimestamp", None)
        meta["uid"] = meta.get("uid") or str(uuid.uuid4())
        meta["creationTimestamp"] = meta.get("creationTimestamp") or now()
        meta["generation"] = 1
        meta["resourceVersion"] = self._next_rv()
        bucket[key] = obj
        self._emit(gvk, "ADDED", obj)
        return obj

    def _write(self, gvk: GroupVersionKind, key: ObjectKey, new: Object, event: WatchEventType = "MODIFIED") -> Object:
        old = self._store[gvk][key]
        old_meta, meta = old["metadata"], new.setdefault("metadata", {})
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        body_old = {k: v for k, v in old.items() if k not in ("metadata", "status")}
        body_new = {k: v for k, v in new.items() if k not in ("metadata", "status")}
        if body_old != body_new:
            meta["generation"] = int(old_meta.get("generation") or 1) + 1
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._store[gvk][key] = new
            self._delete(gvk, key)
            return new
        if new == old:
            return new  # a no-op write keeps the resourceVersion, as the API server does
        meta["resourceVersion"] = self._next_rv()
        self._store[gvk][key] = new
        self._emit(gvk, event, new)
        return new

    def _delete(self, gvk: GroupVersionKind, key: ObjectKey) -> Object:
        """Mark or remove the stored object; the object as the DELETE leaves it."""
        obj = self._store[gvk][key]
        meta = obj["metadata"]
        if meta.get("finalizers"):
            if not meta.get("deletionTimestamp"):
                updated = deep_copy_json(obj)
                updated["metadata"]["deletionTimestamp"] = now()
                updated["metadata"]["resourceVersion"] = self._next_rv()
                self._store[gvk][key] = updated
                self._emit(gvk, "MODIFIED", updated)
                return updated
            return obj
        del self._store[gvk][key]
        final = deep_copy_json(obj)
        final["metadata"]["resourceVersion"] = self._next_rv()
        self._emit(gvk, "DELETED", final)
        return final

    @staticmethod
    def _write_back(target: Object, stored: Object) -> Object:
        fresh = deep_copy_json(stored)
        target.clear()
        target.update(fresh)
        return target

    def _check_rv(self, gvk: GroupVersionKind, obj: Object, stored: Object) -> None:
        want = (obj.get("metadata") or {}).get("resourceVersion")
        have = stored["metadata"].get("resourceVersion")
        if want and want != have:
            name = stored["metadata"].get("name")
            raise ConflictError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {gvk.kind.lower()}s "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )

    async def _update(self, obj: Object, *, subresource: str, dry_run: bool) -> Object:
        gvk = GroupVersionKind.of(obj)
        key = object_key_from_object(obj)
        self._record("update", gvk.kind, key.namespace, key.name, subresource)
        await asyncio.sleep(0)
        stored = self._store.get(gvk, {}).get(key)
        if stored is None:
            raise self._not_found(gvk, key.name)
        self._check_rv(gvk, obj, stored)
        new = self._apply_scope(gvk, stored, deep_copy_json(obj), subresource)
        if dry_run:
            return obj
        return self._write_back(obj, self._write(gvk, key, new))

    async def _patch(self, obj: Object, patch: Patch, *, subresource: str, dry_run: bool) -> Object:
        gvk = GroupVersionKind.of(obj)
        key = object_key_from_object(obj)
        self._record("patch", gvk.kind, key.namespace, key.name, subresource)
        await asyncio.sleep(0)
        stored = self._store.get(gvk, {}).get(key)
        if stored is None:
            raise self._not_found(gvk, key.name)
        body = json.loads(patch.data(obj) or b"null")
        if patch.type == "application/json-patch+json":
            patched = jsonpatch.apply_patch(deep_copy_json(stored), body)
        else:  # merge, strategic merge and apply are all applied as a merge patch here
            if isinstance(body, dict):
                self._check_rv(gvk, body, stored)
            patched = merge_patch(deep_copy_json(stored), body)
        new = self._apply_scope(gvk, stored, patched, subresource)
        new["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        if dry_run:
            return obj
        return self._write_back(obj, self._write(gvk, key, new))

    def _apply_scope(self, gvk: GroupVersionKind, stored: Object, new: Object, subresource: str) -> Object:
        if gvk.kind in self._no_status:
            return new
        if subresource == "status":
            result = deep_copy_json(stored)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            return result
        if "status" in stored:
            new["status"] = deep_copy_json(stored)["status"]
        else:
            new.pop("status", None)
        return new
