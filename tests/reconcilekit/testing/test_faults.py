"""The fault kit: conflicts on the k-th write, crashes at an await point, lagging caches, counts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconcilekit.cache import InformerCache, Options
from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.errors import ConflictError, NotFoundError
from reconcilekit.testing import (
    CRASHED,
    ConflictInjector,
    CrashInjector,
    FakeClient,
    LaggingClient,
    consistently,
    eventually,
)

CM = GroupVersionKind("", "v1", "ConfigMap")
FAST = BackoffSettings(initial=0.01, jitter=0.0, cap=0.05)


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {}}


async def test_conflict_on_the_second_write_only() -> None:
    fake = FakeClient([cm("a")])
    client = ConflictInjector(fake, kind="ConfigMap", nth=2)
    obj = await client.get(CM, ObjectKey("default", "a"))
    obj["data"]["n"] = "1"
    await client.update(obj)
    obj["data"]["n"] = "2"
    with pytest.raises(ConflictError):
        await client.update(obj)
    await client.update(obj)
    assert client.injected == 1
    client.assert_count(3, verb="update", kind="ConfigMap")
    assert fake.count("update") == 2  # the injected conflict never reached the server
    with pytest.raises(AssertionError, match="expected 5 update"):
        client.assert_count(5, verb="update")


async def test_crash_after_the_write_then_the_restarted_reconcile_converges() -> None:
    fake = FakeClient()
    crash = CrashInjector(fake, verb="create", kind="ConfigMap", when="after")
    cleanups: list[str] = []

    async def reconcile(client: Any) -> str:
        try:
            await client.get(CM, ObjectKey("default", "made"))
            return "exists"
        except NotFoundError:
            pass
        try:
            await client.create(cm("made"))
        except Exception:  # a crash is not an Exception: this must not swallow it
            cleanups.append("swallowed")
            raise
        return "created"

    assert await crash.run(reconcile(crash)) is CRASHED
    assert cleanups == []
    assert fake.stored(CM, ObjectKey("default", "made")) is not None  # the write happened
    assert await reconcile(crash) == "exists"
    crash.assert_count(1, verb="create")


async def test_lagging_cache_holds_events_until_released() -> None:
    fake = FakeClient([cm("a")])
    lag = LaggingClient(fake)
    cache = InformerCache(lag, Options(backoff=FAST))
    task = asyncio.create_task(cache.start())
    await asyncio.sleep(0)
    try:
        await cache.get(CM, ObjectKey("default", "a"))
        await eventually(lambda: fake.open_watches == 1)
        lag.hold()
        await fake.create(cm("b"))

        async def b_missing() -> bool:
            return len((await cache.list(CM)).items) == 1

        await consistently(b_missing, duration=0.3)
        lag.release()

        async def b_cached() -> bool:
            return len((await cache.list(CM)).items) == 2

        await eventually(b_cached)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_disconnected_cache_catches_up_by_relist_after_compaction() -> None:
    fake = FakeClient([cm("a"), cm("b")])
    lag = LaggingClient(fake)
    cache = InformerCache(lag, Options(backoff=FAST))
    task = asyncio.create_task(cache.start())
    await asyncio.sleep(0)
    try:
        await cache.get(CM, ObjectKey("default", "a"))
        await eventually(lambda: fake.open_watches == 1)
        lag.disconnect()
        await eventually(lambda: fake.open_watches == 0)
        a = fake.stored(CM, ObjectKey("default", "a"))
        assert a is not None
        await fake.delete(a)
        fake.compact()
        lists = fake.count("list")
        lag.reconnect()

        async def a_gone() -> bool:
            return [o["metadata"]["name"] for o in (await cache.list(CM)).items] == ["b"]

        await eventually(a_gone)
        assert fake.count("list") > lists
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
