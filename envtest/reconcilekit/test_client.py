"""The raw-JSON client on a real kube-apiserver: optimistic locks, retries, pagination, errors, watch."""

from __future__ import annotations

import asyncio
import math
from collections import Counter as Tally
from contextlib import aclosing
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from reconcilekit.client import (
    GroupVersionKind,
    ObjectKey,
    RestClient,
    json_patch,
    merge_from,
    merge_from_with_optimistic_lock,
    new_client,
    raw_patch,
    strategic_merge_from,
)
from reconcilekit.client.interfaces import Object
from reconcilekit.client.metrics import RequestKey
from reconcilekit.client.patch import MERGE_PATCH
from reconcilekit.client.typed import TypedClient
from reconcilekit.config import RestConfig, load_rest_config
from reconcilekit.controllerutil import OperationResult, create_or_patch, create_or_update
from reconcilekit.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    NoKindMatchError,
    NotFoundError,
    is_already_exists,
    is_conflict,
)
from reconcilekit.retry import Backoff, retry_on_conflict

pytestmark = pytest.mark.usefixtures("counter_crd")

COUNTER = GroupVersionKind("testing.reconcilekit.io", "v1", "Counter")
CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


def _counter(namespace: str, name: str = "c", count: int | None = None) -> Object:
    obj: Object = {
        "apiVersion": COUNTER.api_version,
        "kind": COUNTER.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"step": 1},
    }
    if count is not None:
        obj["status"] = {"count": count}
    return obj


def _configmap(namespace: str, name: str, data: dict[str, str] | None = None) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {},
    }


class _Recorded:
    """Wraps a patch and keeps the exact bytes the client sent with it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: list[bytes] = []

    @property
    def type(self) -> str:
        return str(self.inner.type)

    def data(self, obj: Any, /) -> bytes:
        body: bytes = self.inner.data(obj)
        self.sent.append(body)
        return body


async def _create_counter(client: RestClient, namespace: str, count: int = 0) -> Object:
    obj = await client.create(_counter(namespace))
    patch = merge_from(obj)
    obj["status"] = {"count": count}
    return await client.status().patch(obj, patch)


# -- Must show: optimistic lock versus plain merge patch -------------------------------------


async def test_stale_optimistic_lock_status_patch_conflicts_and_plain_merge_succeeds(
    client: RestClient, namespace: str
) -> None:
    """A status patch built with the optimistic lock from a stale read gets 409; the same change as a plain
    merge patch is applied. The bytes on the wire show why: only the first carries the read's RV."""
    await _create_counter(client, namespace, count=0)
    stale = await client.get(COUNTER, ObjectKey(namespace, "c"))
    stale_rv = stale["metadata"]["resourceVersion"]

    # Another writer moves the object on.
    other = await client.get(COUNTER, ObjectKey(namespace, "c"))
    bump = merge_from(other)
    other["status"]["count"] = 5
    await client.status().patch(other, bump)
    assert other["metadata"]["resourceVersion"] != stale_rv

    locked = _Recorded(merge_from_with_optimistic_lock(stale))
    change = {**stale, "status": {"count": 1}}
    with pytest.raises(ConflictError) as info:
        await client.status().patch(dict(change), locked)
    assert info.value.code == 409
    assert is_conflict(info.value)
    assert "the object has been modified" in info.value.message
    assert locked.sent == [f'{{"metadata":{{"resourceVersion":"{stale_rv}"}},"status":{{"count":1}}}}'.encode()]

    plain = _Recorded(merge_from(stale))
    applied = await client.status().patch(dict(change), plain)
    assert plain.sent == [b'{"status":{"count":1}}']
    assert applied["status"]["count"] == 1  # last writer wins: the other writer's 5 is lost
    assert client.counts.by_verb(resource="counters/status") == {"patch": 4}  # set-up, bump, 409, plain
    assert RequestKey("patch", "counters/status", 409) in client.request_counts()


# -- Must show: retry_on_conflict with concurrent writers ------------------------------------


async def test_retry_on_conflict_with_optimistic_lock_converges_with_five_concurrent_writers(
    client: RestClient, namespace: str
) -> None:
    """Five writers each increment one counter ten times, each increment a re-read plus an optimistic-lock
    status patch inside retry_on_conflict: no increment is lost."""
    writers, increments = 5, 10
    await _create_counter(client, namespace, count=0)
    conflicts = 0
    # DefaultRetry's 5 attempts assume mild contention; five writers hammering one object need more room.
    backoff = Backoff(steps=100, duration=0.005, factor=1.5, jitter=1.0, cap=0.2)
    start = asyncio.Event()

    async def increment_once() -> None:
        nonlocal conflicts

        async def attempt() -> None:
            nonlocal conflicts
            obj = await client.get(COUNTER, ObjectKey(namespace, "c"))  # re-read on every attempt
            patch = merge_from_with_optimistic_lock(obj)
            obj["status"]["count"] += 1
            try:
                await client.status().patch(obj, patch)
            except ConflictError:
                conflicts += 1
                raise

        await retry_on_conflict(backoff, attempt)

    async def writer() -> None:
        await start.wait()
        for _ in range(increments):
            await increment_once()

    async with asyncio.TaskGroup() as tasks:
        for n in range(writers):
            tasks.create_task(writer(), name=f"counter-writer-{n}")
        start.set()

    final = await client.get(COUNTER, ObjectKey(namespace, "c"))
    assert final["status"]["count"] == writers * increments
    assert conflicts > 0, "the writers never raced; the test proved nothing"
    counts = client.counts.by_verb(resource="counters/status")
    assert counts["patch"] == writers * increments + 1 + conflicts  # +1: the initial status patch


# -- Must show: pagination -------------------------------------------------------------------


@pytest.mark.slow
async def test_list_pagination_over_2000_objects_returns_each_exactly_once(client: RestClient, namespace: str) -> None:
    total, page_size = 2000, 150
    gate = asyncio.Semaphore(16)

    async def create(i: int) -> None:
        async with gate:
            await client.create(_configmap(namespace, f"cm-{i:04d}", {"i": str(i)}), field_owner="seeder")

    async with asyncio.TaskGroup() as tasks:
        for i in range(total):
            tasks.create_task(create(i), name=f"seed-{i}")
    client.reset_request_counts()

    seen: Tally[str] = Tally()
    token: str | None = None
    pages = 0
    while True:
        page = await client.list(CONFIGMAP, namespace=namespace, limit=page_size, continue_token=token)
        pages += 1
        assert len(page.items) <= page_size
        seen.update(item["metadata"]["name"] for item in page.items)
        assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for item in page.items)
        token = page.continue_token
        if token is None:
            break
    ours = {name: n for name, n in seen.items() if name.startswith("cm-")}
    assert len(ours) == total
    assert set(seen.values()) == {1}  # nothing twice (kube-root-ca.crt appears if a controller made it)
    assert pages == math.ceil(len(seen) / page_size)
    assert client.counts.by_verb() == {"list": pages}

    everything = await client.list_all(CONFIGMAP, namespace=namespace, page_size=500)
    names = [o["metadata"]["name"] for o in everything.items]
    assert len(names) == len(set(names)) == len(seen)
    assert everything.resource_version


# -- CRUD, errors and options ----------------------------------------------------------------


async def test_crud_round_trip_writes_back_into_the_object(client: RestClient, namespace: str) -> None:
    obj = _configmap(namespace, "crud", {"a": "1"})
    created = await client.create(obj)
    assert created is obj
    assert obj["metadata"]["uid"]
    assert obj["metadata"]["resourceVersion"]
    assert obj["metadata"]["managedFields"][0]["manager"] == "reconcilekit-tests"

    obj["data"]["b"] = "2"
    rv = obj["metadata"]["resourceVersion"]
    await client.update(obj)
    assert obj["metadata"]["resourceVersion"] != rv
    got = await client.get(CONFIGMAP, ObjectKey(namespace, "crud"))
    assert got["data"] == {"a": "1", "b": "2"}

    await client.delete(obj)
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAP, ObjectKey(namespace, "crud"))
    with pytest.raises(NotFoundError):
        await client.delete(obj)


@pytest.mark.envtest_only  # add_user needs the envtest client CA
async def test_status_answers_map_to_errors(client: RestClient, namespace: str, envtest_environment: Any) -> None:
    """404 NotFound, 409 AlreadyExists (not a conflict), 409 Conflict, 422 Invalid, 403 Forbidden."""
    counter = await _create_counter(client, namespace)
    with pytest.raises(AlreadyExistsError) as exists:
        await client.create(_counter(namespace))
    assert is_already_exists(exists.value)
    assert not is_conflict(exists.value)

    stale = dict(counter)
    fresh = await client.get(COUNTER, ObjectKey(namespace, "c"))
    fresh["spec"]["step"] = 2
    await client.update(fresh)
    stale["spec"] = {"step": 3}
    with pytest.raises(ConflictError):
        await client.update(stale)

    no_rv = await client.get(COUNTER, ObjectKey(namespace, "c"))
    del no_rv["metadata"]["resourceVersion"]
    with pytest.raises(InvalidError, match="must be specified for an update"):
        await client.update(no_rv)

    bad = await client.get(COUNTER, ObjectKey(namespace, "c"))
    patch = merge_from(bad)
    bad["status"]["count"] = -1
    with pytest.raises(InvalidError) as invalid:
        await client.status().patch(bad, patch)
    assert any("status.count" in c.get("field", "") for c in invalid.value.causes)

    nobody = await envtest_environment.add_user("nobody")
    async with new_client(await load_rest_config(nobody.kubeconfig_path)) as weak:
        with pytest.raises(ForbiddenError):
            await weak.get(CONFIGMAP, ObjectKey(namespace, "x"))

    with pytest.raises(NoKindMatchError):
        await client.get(GroupVersionKind("testing.reconcilekit.io", "v1", "Nothing"), ObjectKey(namespace, "x"))


async def test_dry_run_writes_nothing(client: RestClient, namespace: str, rest_config: RestConfig) -> None:
    obj = await client.create(_configmap(namespace, "dry"), dry_run=True)
    assert obj["metadata"]["name"] == "dry"
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAP, ObjectKey(namespace, "dry"))

    async with new_client(rest_config, dry_run=True) as dry:
        await dry.create(_configmap(namespace, "dry2"))
        real = await client.create(_configmap(namespace, "real"))
        await dry.delete(real)
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAP, ObjectKey(namespace, "dry2"))
    await client.get(CONFIGMAP, ObjectKey(namespace, "real"))


async def test_delete_options_preconditions_and_delete_all_of(client: RestClient, namespace: str) -> None:
    obj = await client.create(_configmap(namespace, "pre"))
    with pytest.raises(ConflictError):
        await client.delete(obj, preconditions={"uid": "00000000-0000-0000-0000-000000000000"})
    await client.delete(
        obj,
        preconditions={"uid": obj["metadata"]["uid"], "resourceVersion": obj["metadata"]["resourceVersion"]},
        grace_period_seconds=0,
        propagation_policy="Background",
    )
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAP, ObjectKey(namespace, "pre"))

    for i in range(3):
        cm = _configmap(namespace, f"sel-{i}")
        cm["metadata"]["labels"] = {"group": "a" if i < 2 else "b"}
        await client.create(cm)
    await client.delete_all_of(CONFIGMAP, namespace=namespace, labels={"group": "a"})
    left = await client.list(CONFIGMAP, namespace=namespace, labels="group")
    assert [o["metadata"]["name"] for o in left.items] == ["sel-2"]


async def test_status_subresource_ignores_spec_and_main_endpoint_ignores_status(
    client: RestClient, namespace: str
) -> None:
    obj = await _create_counter(client, namespace, count=1)
    obj["spec"]["step"] = 9
    obj["status"]["count"] = 2
    await client.status().update(obj)
    assert obj["spec"]["step"] == 1
    assert obj["status"]["count"] == 2
    obj["spec"]["step"] = 9
    obj["status"]["count"] = 3
    await client.update(obj)
    assert obj["spec"]["step"] == 9
    assert obj["status"]["count"] == 2
    whole = await client.status().get(obj)
    assert whole["status"]["count"] == 2


async def test_scale_and_other_patch_types_on_built_ins(client: RestClient, namespace: str) -> None:
    cm = await client.create(_configmap(namespace, "patches", {"a": "1"}))
    await client.patch(cm, json_patch([{"op": "add", "path": "/data/b", "value": "2"}]))
    assert cm["data"] == {"a": "1", "b": "2"}
    patch = strategic_merge_from(cm)
    cm["metadata"]["finalizers"] = ["x.example.com/f"]
    await client.patch(cm, patch)
    assert cm["metadata"]["finalizers"] == ["x.example.com/f"]
    patch = strategic_merge_from(cm)
    cm["metadata"]["finalizers"] = []
    await client.patch(cm, patch)
    assert "finalizers" not in cm["metadata"]

    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "patches", "namespace": namespace}}
    applied = await client.apply({**config, "data": {"c": "3"}}, field_owner="applier")
    assert applied["data"]["c"] == "3"

    deploy: Object = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    await client.create(deploy)
    scale = await client.sub_resource("scale").get(deploy)
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 1
    patched = await client.sub_resource("scale").patch(deploy, raw_patch(MERGE_PATCH, b'{"spec":{"replicas":2}}'))
    assert patched["kind"] == "Scale"
    assert patched["spec"]["replicas"] == 2


async def test_watch_streams_events_from_a_resource_version(client: RestClient, namespace: str) -> None:
    listed = await client.list(CONFIGMAP, namespace=namespace)
    events: list[tuple[str, str]] = []

    async def watch() -> None:
        rv = listed.resource_version
        stream = client.watch(CONFIGMAP, namespace=namespace, resource_version=rv, timeout_seconds=5)
        async with aclosing(stream) as events_in:
            async for event in events_in:
                if event.type == "BOOKMARK":
                    continue
                events.append((event.type, event.object["metadata"]["name"]))
                if event.type == "DELETED":
                    return

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(watch(), name="watch-under-test")
        await asyncio.sleep(0.2)
        cm = await client.create(_configmap(namespace, "w"))
        patch = merge_from(cm)
        cm["data"] = {"x": "1"}
        await client.patch(cm, patch)
        await client.delete(cm)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_create_or_update_and_create_or_patch(client: RestClient, namespace: str) -> None:
    def want(o: Object) -> None:
        o["data"] = {"k": "v"}

    assert await create_or_update(client, _configmap(namespace, "cou"), want) == OperationResult.CREATED
    assert await create_or_update(client, _configmap(namespace, "cou"), want) == OperationResult.UNCHANGED
    client.reset_request_counts()
    assert await create_or_patch(client, _counter(namespace, "cop"), lambda o: None) == OperationResult.CREATED

    def both(o: Object) -> None:
        o["spec"]["step"] = 4
        o["status"] = {"count": 7}

    assert await create_or_patch(client, _counter(namespace, "cop"), both) == OperationResult.UPDATED_STATUS
    stored = await client.get(COUNTER, ObjectKey(namespace, "cop"))
    assert stored["spec"]["step"] == 4
    assert stored["status"]["count"] == 7
    counts = client.counts.by_verb()
    counts.pop("discovery", None)  # the first Counter request of this client asked discovery
    assert counts == {"get": 3, "create": 1, "patch": 2}


class _CounterModel(BaseModel):
    """Declares only metadata: spec and status ride along as extra fields and must survive."""

    model_config = ConfigDict(extra="allow")
    GVK: ClassVar[GroupVersionKind] = COUNTER
    apiVersion: str = COUNTER.api_version
    kind: str = COUNTER.kind
    metadata: dict[str, Any]


async def test_typed_client_keeps_unknown_fields_through_update_and_patch(client: RestClient, namespace: str) -> None:
    raw = _counter(namespace, "typed")
    raw["spec"]["unknown"] = {"nested": [1, 2, {"deep": True}]}
    await client.create(raw)
    typed = TypedClient(client)
    model = await typed.get(_CounterModel, ObjectKey(namespace, "typed"))
    assert model.model_extra is not None
    assert model.model_extra["spec"] == {"step": 1, "unknown": {"nested": [1, 2, {"deep": True}]}}

    patch = merge_from_with_optimistic_lock(model)
    model.metadata["labels"] = {"typed": "yes"}
    await typed.patch(model, patch)
    rv = model.metadata["resourceVersion"]
    model.metadata["labels"]["typed"] = "again"
    await typed.update(model)  # a PUT of the whole model: the extra spec goes back unchanged
    assert model.metadata["resourceVersion"] != rv

    stored = await client.get(COUNTER, ObjectKey(namespace, "typed"))
    assert stored["spec"] == {"step": 1, "unknown": {"nested": [1, 2, {"deep": True}]}}
    assert stored["metadata"]["labels"] == {"typed": "again"}
