"""An in-memory API server with a cached client, an uncached reader and a request ledger.

Python only: a small stand-in for reconcilekit.testing's FakeClient until that branch
lands. Enough of the API server's behaviour for the runner controllers: resource
versions, merge patches with the optimistic lock, the status subresource, finalizers
holding deletion, generateName, delete preconditions, a lagging cache, injected conflicts.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, ObjectList, Patch
from reconcilekit.errors import AlreadyExistsError, ConflictError, NotFoundError

CONTROLLER_INDEX = ".metadata.controller"


def merge_apply(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_apply(result.get(key), value)
    return result


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Request:
    verb: str
    kind: str
    name: str
    subresource: str = ""
    body: bytes = b""
    cached: bool = False


@dataclass
class FakeCluster:
    """The server side: the store, the ledger and fault injection."""

    store: dict[tuple[str, str, str], Object] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    conflicts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(verb, kind, subresource) → how many more requests answer 409."""
    hooks: list[Any] = field(default_factory=list)
    """Callables run at each request: ``hook(request)``; may raise (e.g. cancellation)."""
    post_hooks: list[Any] = field(default_factory=list)
    """Callables run after a write was applied: ``hook(request)``."""
    cache_snapshot: dict[tuple[str, str, str], Object] | None = None
    uncached_kinds: frozenset[str] = frozenset({"Secret", "ConfigMap"})
    """Kinds the cached client reads from the server (ARC's Cache.DisableFor)."""
    rng: random.Random | None = None
    """When set, generated names, UIDs and creation timestamps come from it (a seed reproduces a
    run); otherwise names and UIDs are uuid4 and timestamps the wall clock."""
    _rv: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _created: itertools.count[int] = field(default_factory=lambda: itertools.count(0))

    def new_suffix(self) -> str:
        """Five hex characters for a generateName."""
        return (uuid.uuid4().hex if self.rng is None else f"{self.rng.getrandbits(20):05x}")[:5]

    def new_uid(self) -> str:
        return str(uuid.uuid4() if self.rng is None else uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def new_timestamp(self) -> str:
        """Seeded: one logical second per object, from 2026-01-01; otherwise now."""
        if self.rng is None:
            return now_rfc3339()
        at = datetime(2026, 1, 1, tzinfo=UTC).timestamp() + next(self._created)
        return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # ---- views ---------------------------------------------------------------------
    def client(self) -> FakeClient:
        return FakeClient(self, cached=True)

    def api_reader(self) -> FakeClient:
        return FakeClient(self, cached=False)

    def freeze_cache(self) -> None:
        """From now on cached reads see the store as it is now (a lagging informer)."""
        self.cache_snapshot = copy.deepcopy(self.store)

    def thaw_cache(self) -> None:
        self.cache_snapshot = None

    def inject_conflicts(self, verb: str, kind: str, subresource: str = "", *, count: int = 1) -> None:
        self.conflicts[(verb, kind, subresource)] = count

    # ---- helpers for tests ------------------------------------------------------------
    def objects(self, kind: str, namespace: str | None = None) -> list[Object]:
        return [
            copy.deepcopy(o)
            for (k, ns, _), o in sorted(self.store.items())
            if k == kind and (namespace is None or ns == namespace)
        ]

    def get(self, kind: str, namespace: str, name: str) -> Object:
        return copy.deepcopy(self.store[(kind, namespace, name)])

    def put(self, obj: Object) -> Object:
        """Create or overwrite an object as-is (status included), as a test fixture does."""
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            meta["name"] = meta.get("generateName", "obj-") + self.new_suffix()
        meta.setdefault("uid", self.new_uid())
        meta.setdefault("creationTimestamp", self.new_timestamp())
        meta["resourceVersion"] = str(next(self._rv))
        self.store[(obj["kind"], meta.get("namespace", ""), meta["name"])] = copy.deepcopy(obj)
        return obj

    def set_status(self, kind: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        obj = self.store[(kind, namespace, name)]
        obj["status"] = merge_apply(obj.get("status") or {}, dict(status))
        obj["metadata"]["resourceVersion"] = str(next(self._rv))

    def counts(self, *, include_cached: bool = False) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.requests:
            if r.cached and not include_cached:
                continue
            key = f"{r.verb} {r.kind}{'/' + r.subresource if r.subresource else ''}"
            out[key] = out.get(key, 0) + 1
        return out

    # ---- server ------------------------------------------------------------------------
    async def _record(self, request: Request) -> None:
        self.requests.append(request)
        for hook in list(self.hooks):
            hook(request)
        await asyncio.sleep(0)  # every request is an await point
        left = self.conflicts.get((request.verb, request.kind, request.subresource), 0)
        if left > 0:
            self.conflicts[(request.verb, request.kind, request.subresource)] = left - 1
            raise ConflictError(409, "Conflict", f"injected conflict on {request.kind} {request.name}")

    def _after(self, request: Request) -> None:
        for hook in list(self.post_hooks):
            hook(request)

    def _bump(self, obj: Object) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._rv))

    def _finish_delete_if_free(self, key: tuple[str, str, str]) -> None:
        obj = self.store.get(key)
        if obj and obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            del self.store[key]


def _matches(obj: Object, labels: Mapping[str, str] | str | None, fields: Mapping[str, str] | str | None) -> bool:
    if isinstance(labels, Mapping):
        have = obj["metadata"].get("labels") or {}
        if any(have.get(k) != v for k, v in labels.items()):
            return False
    if isinstance(fields, Mapping):
        for key, value in fields.items():
            if key == CONTROLLER_INDEX:
                refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
                if not refs or refs[0].get("name") != value:
                    return False
            elif key == "metadata.name":
                if obj["metadata"]["name"] != value:
                    return False
            else:
                raise ValueError(f"unsupported field selector {key}")
    return True


class _Status:
    def __init__(self, client: FakeClient) -> None:
        self._client = client

    async def patch(self, obj: Object, patch: Patch, /, **_: Any) -> Object:
        return await self._client._patch(obj, patch, subresource="status")

    async def update(self, obj: Object, /, **_: Any) -> Object:  # pragma: no cover - unused
        raise NotImplementedError

    async def get(self, obj: Object, /) -> Object:  # pragma: no cover - unused
        raise NotImplementedError

    async def create(self, obj: Object, body: Object, /, **_: Any) -> Object:  # pragma: no cover - unused
        raise NotImplementedError


class FakeClient:
    """Reads from the cache (``cached=True``) or the server; writes go to the server."""

    def __init__(self, cluster: FakeCluster, *, cached: bool) -> None:
        self.cluster = cluster
        self.cached = cached

    def _is_cached(self, kind: str) -> bool:
        return self.cached and kind not in self.cluster.uncached_kinds

    def _source(self, kind: str) -> dict[tuple[str, str, str], Object]:
        if self._is_cached(kind) and self.cluster.cache_snapshot is not None:
            return self.cluster.cache_snapshot
        return self.cluster.store

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        await self.cluster._record(Request("get", gvk.kind, key.name, cached=self._is_cached(gvk.kind)))
        obj = self._source(gvk.kind).get((gvk.kind, key.namespace, key.name))
        if obj is None:
            raise NotFoundError(404, "NotFound", f"{gvk.kind} {key} not found")
        return copy.deepcopy(obj)

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
    ) -> ObjectList:
        await self.cluster._record(Request("list", gvk.kind, namespace or "", cached=self._is_cached(gvk.kind)))
        if not self._is_cached(gvk.kind) and isinstance(fields, Mapping) and CONTROLLER_INDEX in fields:
            raise ValueError("the API server rejects the client-side .metadata.controller index")
        items = [
            copy.deepcopy(o)
            for (k, ns, _), o in sorted(self._source(gvk.kind).items())
            if k == gvk.kind and (namespace is None or ns == namespace) and _matches(o, labels, fields)
        ]
        return ObjectList(items=items)

    async def create(self, obj: Object, /, **_: Any) -> Object:
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or meta.get("generateName", "") + self.cluster.new_suffix()
        request = Request("create", obj["kind"], name, body=json.dumps(obj).encode())
        await self.cluster._record(request)
        key = (obj["kind"], meta.get("namespace", ""), name)
        if key in self.cluster.store:
            raise AlreadyExistsError(409, "AlreadyExists", f"{obj['kind']} {name} already exists")
        stored = copy.deepcopy(obj)
        stored.pop("status", None)
        stored["metadata"].update(name=name, uid=self.cluster.new_uid(), creationTimestamp=self.cluster.new_timestamp())
        stored["metadata"].pop("generateName", None)
        self.cluster._bump(stored)
        self.cluster.store[key] = stored
        obj.clear()
        obj.update(copy.deepcopy(stored))
        self.cluster._after(request)
        return obj

    async def update(self, obj: Object, /, **_: Any) -> Object:  # pragma: no cover - unused
        raise NotImplementedError

    async def _patch(self, obj: Object, patch: Patch, *, subresource: str = "") -> Object:
        meta = obj["metadata"]
        body = patch.data(obj)
        request = Request("patch", obj["kind"], meta["name"], subresource, body)
        await self.cluster._record(request)
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        stored = self.cluster.store.get(key)
        if stored is None:
            raise NotFoundError(404, "NotFound", f"{obj['kind']} {meta['name']} not found")
        doc = json.loads(body)
        rv = (doc.get("metadata") or {}).get("resourceVersion")
        if rv is not None and rv != stored["metadata"]["resourceVersion"]:
            raise ConflictError(409, "Conflict", f"the object {meta['name']} has been modified")
        if subresource == "status":
            doc = {"status": doc["status"]} if "status" in doc else {}
        else:
            doc.pop("status", None)
            if "metadata" in doc:
                doc["metadata"] = {k: v for k, v in doc["metadata"].items() if k != "resourceVersion"}
        updated = merge_apply(stored, doc)
        if updated != stored:
            self.cluster._bump(updated)
            self.cluster.store[key] = updated
            self.cluster._finish_delete_if_free(key)
        obj.clear()
        obj.update(copy.deepcopy(updated))
        self.cluster._after(request)
        return obj

    async def patch(self, obj: Object, patch: Patch, /, **_: Any) -> Object:
        return await self._patch(obj, patch)

    async def delete(
        self, obj: Object, /, *, preconditions: Mapping[str, str] | None = None, **options: Any
    ) -> Object | None:
        """DELETE as the API server answers it: the object, with its deletionTimestamp when finalizers hold it."""
        meta = obj["metadata"]
        body = json.dumps({"preconditions": dict(preconditions or {}), **options}).encode()
        request = Request("delete", obj["kind"], meta["name"], body=body)
        await self.cluster._record(request)
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        stored = self.cluster.store.get(key)
        if stored is None:
            raise NotFoundError(404, "NotFound", f"{obj['kind']} {meta['name']} not found")
        if preconditions and preconditions.get("uid") not in (None, stored["metadata"]["uid"]):
            raise ConflictError(409, "Conflict", "precondition failed: uid")
        if stored["metadata"].get("finalizers"):
            if not stored["metadata"].get("deletionTimestamp"):
                stored["metadata"]["deletionTimestamp"] = self.cluster.new_timestamp()
                self.cluster._bump(stored)
        else:
            del self.cluster.store[key]
        self.cluster._after(request)
        return copy.deepcopy(stored)

    async def delete_all_of(self, gvk: GroupVersionKind, /, **_: Any) -> None:  # pragma: no cover - unused
        raise NotImplementedError

    def status(self) -> _Status:
        return _Status(self)

    def sub_resource(self, name: str, /) -> _Status:  # pragma: no cover - unused
        return _Status(self)
