"""The informer cache on the in-memory FakeClient: list, watch, resume, relist, tombstones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from reconcilekit.cache import ByObject, DeletedFinalStateUnknown, InformerCache, Options
from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey
from reconcilekit.errors import NotFoundError
from reconcilekit.testing import FakeClient, eventually

CM = GroupVersionKind("", "v1", "ConfigMap")
FAST = BackoffSettings(initial=0.01, factor=2.0, jitter=0.0, cap=0.05)


def cm(name: str, ns: str = "default", **labels: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "managedFields": [{"manager": "test"}],
        },
        "data": {"k": name},
    }


class Recorder:
    """Records every notification as a tuple."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_add(self, obj: Object, initial: bool) -> None:
        self.events.append(("add", obj["metadata"]["name"], initial))

    def on_update(self, old: Object, new: Object) -> None:
        self.events.append(("update", new["metadata"]["name"], new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.events.append(("tombstone", obj.key, obj.obj is not None))
        else:
            self.events.append(("delete", obj["metadata"]["name"]))

    def names(self, kind: str) -> list[Any]:
        return [e[1] for e in self.events if e[0] == kind]


@pytest.fixture
async def running() -> AsyncIterator[tuple[FakeClient, InformerCache]]:
    fake = FakeClient([cm(f"cm-{i}", app="a" if i % 2 else "b") for i in range(7)])
    cache = InformerCache(fake, Options(page_size=3, backoff=FAST, min_watch_timeout=300))
    task = asyncio.create_task(cache.start(), name="cache")
    await asyncio.sleep(0)
    try:
        yield fake, cache
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_initial_list_is_paged_then_one_watch_from_the_list_rv(running: tuple[FakeClient, InformerCache]) -> None:
    fake, cache = running
    informer = await cache.get_informer(CM)
    rec = Recorder()
    informer.add_event_handler(rec)
    assert await asyncio.wait_for(cache.wait_for_cache_sync(), 5)
    assert fake.count("list", "ConfigMap") == 3  # 7 items in pages of 3
    assert sorted(rec.names("add")) == [f"cm-{i}" for i in range(7)]
    assert all(e[2] is True for e in rec.events)
    await eventually(lambda: fake.open_watches == 1)
    await fake.create(cm("late"))
    await eventually(lambda: ("add", "late", False) in rec.events)


async def test_managed_fields_are_dropped_and_reads_are_copies(running: tuple[FakeClient, InformerCache]) -> None:
    _, cache = running
    got = await cache.get(CM, ObjectKey("default", "cm-1"))
    assert "managedFields" not in got["metadata"]
    assert got["kind"] == "ConfigMap"
    got["data"]["k"] = "changed"
    again = await cache.get(CM, ObjectKey("default", "cm-1"))
    assert again["data"]["k"] == "cm-1"


async def test_not_found_names_the_kind(running: tuple[FakeClient, InformerCache]) -> None:
    _, cache = running
    with pytest.raises(NotFoundError) as info:
        await cache.get(CM, ObjectKey("default", "nope"))
    assert str(info.value.message) == 'ConfigMap "nope" not found'


async def test_list_selectors_and_field_index(running: tuple[FakeClient, InformerCache]) -> None:
    _, cache = running
    await cache.index_field(CM, "data.k", lambda o: [o["data"]["k"]])
    assert len((await cache.list(CM)).items) == 7
    assert len((await cache.list(CM, labels={"app": "a"})).items) == 3
    assert len((await cache.list(CM, labels="app in (a,b),app!=a")).items) == 4
    hit = await cache.list(CM, namespace="default", fields={"data.k": "cm-4"})
    assert [o["metadata"]["name"] for o in hit.items] == ["cm-4"]
    hit = await cache.list(CM, fields="data.k==cm-5")
    assert [o["metadata"]["name"] for o in hit.items] == ["cm-5"]
    assert (await cache.list(CM, namespace="other", fields={"data.k": "cm-4"})).items == []
    with pytest.raises(ValueError, match="does not exist"):
        await cache.list(CM, fields={"data.other": "x"})
    with pytest.raises(ValueError, match="not supported"):
        await cache.list(CM, fields="data.k!=x")
    with pytest.raises(ValueError, match="indexer conflict"):
        await cache.index_field(CM, "data.k", lambda o: [])
    limited = await cache.list(CM, limit=2)
    assert len(limited.items) == 2
    assert limited.continue_token == "continue-not-supported"


async def test_clean_close_rewatches_from_last_rv_without_relist(running: tuple[FakeClient, InformerCache]) -> None:
    fake, cache = running
    rec = Recorder()
    (await cache.get_informer(CM)).add_event_handler(rec)
    await cache.wait_for_cache_sync()
    await eventually(lambda: fake.open_watches == 1)
    lists = fake.count("list")
    fake.bookmark()
    fake.close_watches()
    await fake.create(cm("while-closed"))  # happens between two watches: must not be lost
    await eventually(lambda: ("add", "while-closed", False) in rec.events)
    await eventually(lambda: fake.count("watch") == 2)
    assert fake.count("list") == lists


async def test_compaction_relists_and_delivers_tombstones(running: tuple[FakeClient, InformerCache]) -> None:
    fake, cache = running
    rec = Recorder()
    (await cache.get_informer(CM)).add_event_handler(rec)
    await cache.wait_for_cache_sync()
    await eventually(lambda: fake.open_watches == 1)
    # The informer falls behind: it misses a delete and an update, then its watch gets 410.
    watch = next(iter(fake._watchers))
    fake._watchers.discard(watch)  # stop live delivery to this watcher: it "lags"
    victim = fake.stored(CM, ObjectKey("default", "cm-0"))
    assert victim is not None
    await fake.delete(victim)
    changed = fake.stored(CM, ObjectKey("default", "cm-1"))
    assert changed is not None
    changed = dict(changed, data={"k": "new"})
    await fake.update(changed)
    rec.events.clear()
    fake._watchers.add(watch)
    fake.compact()
    await eventually(lambda: ("tombstone", "default/cm-0", True) in rec.events)
    await eventually(lambda: "cm-1" in rec.names("update"))
    # unchanged objects are not re-delivered to ordinary handlers
    assert sorted(rec.names("update")) == ["cm-1"]
    assert fake.count("list") >= 4
    got = await cache.list(CM)
    assert sorted(o["metadata"]["name"] for o in got.items) == [f"cm-{i}" for i in range(1, 7)]


async def test_handler_added_after_sync_gets_every_object(running: tuple[FakeClient, InformerCache]) -> None:
    _, cache = running
    informer = await cache.get_informer(CM)
    await cache.wait_for_cache_sync()
    rec = Recorder()
    reg = informer.add_event_handler(rec)
    assert reg.has_synced()
    assert len(rec.names("add")) == 7


async def test_resync_goes_only_to_the_handler_that_asked() -> None:
    fake = FakeClient([cm("a")])
    cache = InformerCache(fake, Options(backoff=FAST, sync_period=0))
    informer = await cache.get_informer(CM)
    fast, plain = Recorder(), Recorder()
    informer.add_event_handler(fast, resync_period=1.0)
    informer.add_event_handler(plain)
    task = asyncio.create_task(cache.start())
    await asyncio.sleep(0)
    try:
        await eventually(lambda: fast.names("update") == ["a"], timeout=5)
        assert plain.names("update") == []
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_namespaced_cache_routes_reads_and_hides_other_namespaces() -> None:
    fake = FakeClient([cm("x", "ns1"), cm("y", "ns2"), cm("z", "ns3")])
    cache = InformerCache(fake, Options(backoff=FAST, by_object={CM: ByObject(namespaces=["ns1", "ns2"])}))
    task = asyncio.create_task(cache.start())
    await asyncio.sleep(0)
    try:
        assert sorted(o["metadata"]["name"] for o in (await cache.list(CM)).items) == ["x", "y"]
        assert (await cache.get(CM, ObjectKey("ns2", "y")))["metadata"]["name"] == "y"
        from reconcilekit.cache import UnknownNamespaceError

        with pytest.raises(UnknownNamespaceError):
            await cache.get(CM, ObjectKey("ns3", "z"))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_no_copy_mode_returns_the_cached_object() -> None:
    fake = FakeClient([cm("a")])
    cache = InformerCache(fake, Options(backoff=FAST, default_unsafe_disable_deep_copy=True))
    task = asyncio.create_task(cache.start())
    await asyncio.sleep(0)
    try:
        one = await cache.get(CM, ObjectKey("default", "a"))
        two = await cache.get(CM, ObjectKey("default", "a"))
        assert one is two
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_reads_before_start_fail() -> None:
    from reconcilekit.cache import CacheNotStartedError

    cache = InformerCache(FakeClient(), Options())
    with pytest.raises(CacheNotStartedError):
        await cache.get(CM, ObjectKey("default", "a"))
