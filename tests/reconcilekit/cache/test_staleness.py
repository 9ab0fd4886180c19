"""Issue 16: informers say how long ago they heard from the server; the cache's health check uses it."""

from __future__ import annotations

import asyncio

import pytest

from reconcilekit.cache import InformerCache, InformerStaleError, Options
from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.client.interfaces import GroupVersionKind, Object
from reconcilekit.testing import FakeClient, eventually

CM = GroupVersionKind("", "v1", "ConfigMap")
FAST = BackoffSettings(initial=0.01, jitter=0.0, cap=0.05)


def _cm(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}, "data": {}}


def test_the_default_deadline_is_120_s_and_the_check_fails_at_twice_that() -> None:
    assert Options().watch_read_idle_timeout == 120.0


def test_a_non_positive_deadline_is_refused() -> None:
    with pytest.raises(ValueError, match="watch_read_idle_timeout"):
        Options(watch_read_idle_timeout=0)


def test_a_cache_without_deadline_needs_an_explicit_threshold() -> None:
    cache = InformerCache(FakeClient(), Options(watch_read_idle_timeout=None))
    with pytest.raises(ValueError, match="threshold"):
        cache.staleness_checker()
    cache.staleness_checker(threshold=30)


async def test_events_and_bookmarks_keep_an_informer_fresh_and_silence_makes_the_check_fail() -> None:
    fake = FakeClient([_cm("a")])
    cache = InformerCache(fake, Options(backoff=FAST, watch_read_idle_timeout=0.1))
    informer = await cache.get_informer(CM)
    check = cache.staleness_checker()  # 2 × 0.1 s
    await check()  # not started: nothing to be stale
    task = asyncio.create_task(cache.start())
    try:
        assert await cache.wait_for_cache_sync()
        await eventually(lambda: fake.open_watches == 1)
        await check()
        await asyncio.sleep(0.3)  # nothing at all for longer than the threshold
        with pytest.raises(InformerStaleError) as failure:
            await check()
        assert list(failure.value.stale) == [f"{CM}@*"]
        assert failure.value.threshold == pytest.approx(0.2)
        assert informer.seconds_since_last_event() > 0.2
        fake.bookmark()  # a bookmark is news from the server
        await eventually(lambda: informer.seconds_since_last_event() < 0.2)
        await check()
        await asyncio.sleep(0.3)
        await fake.create(_cm("b"))  # so is an event
        await eventually(lambda: informer.seconds_since_last_event() < 0.2)
        await check()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert cache.staleness() == {}  # stopped informers are not judged


async def test_the_error_names_each_stale_informer_and_its_age() -> None:
    err = InformerStaleError({"v1, Kind=Pod@*": 301.4}, 240.0)
    assert str(err) == "informers silent for more than 240 s: v1, Kind=Pod@* 301 s"
