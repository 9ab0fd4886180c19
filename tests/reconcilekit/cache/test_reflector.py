"""Reflector arithmetic and error paths: backoff, watch timeouts, 429, very short watches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from structlog.testing import capture_logs

from reconcilekit.cache._internal.backoff import BackoffManager, BackoffSettings
from reconcilekit.cache._internal.reflector import Reflector
from reconcilekit.cache._internal.shared_informer import SharedIndexInformer
from reconcilekit.client.interfaces import GroupVersionKind, WatchEvent
from reconcilekit.errors import ForbiddenError, TooManyRequestsError
from reconcilekit.testing import FakeClient, eventually

CM = GroupVersionKind("", "v1", "ConfigMap")
FAST = BackoffSettings(initial=0.01, jitter=0.0, cap=0.02)


def test_backoff_doubles_to_the_cap_and_resets_after_two_quiet_minutes() -> None:
    now = [0.0]
    manager = BackoffManager(BackoffSettings(jitter=0.0), clock=lambda: now[0])
    assert [manager.delay() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    now[0] = 121.0
    assert manager.delay() == 0.8


def test_jittered_backoff_stays_within_one_sided_bounds() -> None:
    manager = BackoffManager(BackoffSettings())
    first = manager.delay()
    assert 0.8 <= first < 1.6


class Recording(FakeClient):
    """A FakeClient that remembers the watch arguments and can fail watches on demand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeouts: list[int | None] = []
        self.watch_rvs: list[str | None] = []
        self.fail_next_watch: Exception | None = None
        self.empty_watches = 0

    async def watch(self, gvk: GroupVersionKind, /, **kwargs: Any) -> AsyncIterator[WatchEvent]:
        self.timeouts.append(kwargs.get("timeout_seconds"))
        self.watch_rvs.append(kwargs.get("resource_version"))
        if self.fail_next_watch is not None:
            err, self.fail_next_watch = self.fail_next_watch, None
            raise err
        if self.empty_watches:
            self.empty_watches -= 1
            return
        async for event in super().watch(gvk, **kwargs):
            yield event


async def _run(client: Recording) -> tuple[Reflector, asyncio.Task[None]]:
    informer = SharedIndexInformer(name="cm")
    reflector = Reflector(client=client, gvk=CM, store=informer, backoff=FAST)
    return reflector, asyncio.create_task(reflector.run())


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_watch_timeouts_are_drawn_from_300_to_600_and_start_at_the_list_rv() -> None:
    client = Recording([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}])
    reflector, task = await _run(client)
    try:
        for n in range(1, 6):
            await eventually(lambda n=n: client.open_watches == 1 and len(client.timeouts) == n)
            client.bookmark()  # one event: the close that follows is a normal end, not a stall
            await asyncio.sleep(0.01)
            client.close_watches()
        await eventually(lambda: len(client.timeouts) >= 6)
        assert all(t is not None and 300 <= t < 600 for t in client.timeouts)
        assert client.watch_rvs[0] == "1"
        assert reflector.lists == 1
    finally:
        await _stop(task)


async def test_429_on_watch_rewatches_at_the_same_rv_without_relisting() -> None:
    client = Recording()
    client.fail_next_watch = TooManyRequestsError(429, "TooManyRequests", "slow down")
    reflector, task = await _run(client)
    try:
        await eventually(lambda: client.open_watches == 1)
        assert reflector.lists == 1
        assert len(client.watch_rvs) == 2
        assert client.watch_rvs[0] == client.watch_rvs[1]
    finally:
        await _stop(task)


async def test_a_very_short_empty_watch_is_an_error_that_relists() -> None:
    client = Recording()
    client.empty_watches = 1
    reflector, task = await _run(client)
    try:
        await eventually(lambda: reflector.lists == 2)
    finally:
        await _stop(task)


class Denied(Recording):
    """A client whose identity may not list ConfigMaps (what kube-apiserver answers without RBAC)."""

    async def list(self, gvk: GroupVersionKind, /, **kwargs: Any) -> Any:
        raise ForbiddenError(
            403,
            "Forbidden",
            'configmaps is forbidden: User "system:serviceaccount:a:b" cannot list resource "configmaps"',
        )


async def test_a_forbidden_list_is_logged_at_error_level_on_every_retry() -> None:
    """A 403 is not retried silently: each cycle logs an error naming the resource, then backs off."""
    client = Denied()
    with capture_logs() as events:
        reflector, task = await _run(client)
        try:
            await eventually(lambda: reflector.forbidden >= 2)
        finally:
            await _stop(task)
    errors = [e for e in events if e["log_level"] == "error"]
    assert len(errors) >= 2
    assert errors[0]["event"].startswith("list and watch forbidden")
    assert errors[0]["gvk"] == str(CM)
    assert 'cannot list resource "configmaps"' in errors[0]["error"]
    assert reflector.lists == 0


async def _list_once(client: Recording, *, freeze: bool) -> tuple[SharedIndexInformer, asyncio.Task[None]]:
    informer = SharedIndexInformer(name="cm")
    reflector = Reflector(
        client=client, gvk=CM, store=informer, backoff=FAST, page_size=2, freeze_listed_objects=freeze
    )
    task = asyncio.create_task(reflector.run())
    await eventually(informer.has_synced)
    return informer, task


def _config_maps(n: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "n"}} for i in range(n)
    ]


async def test_freeze_listed_objects_freezes_after_every_page_and_after_the_store_takes_the_list(
    monkeypatch: Any,
) -> None:
    informer = SharedIndexInformer(name="cm")
    cached_at_freeze: list[int] = []  # how many objects the store held at each freeze
    monkeypatch.setattr(
        "reconcilekit.cache._internal.reflector.gc.freeze", lambda: cached_at_freeze.append(len(informer.indexer))
    )
    reflector = Reflector(
        client=Recording(_config_maps(5)), gvk=CM, store=informer, backoff=FAST, page_size=2, freeze_listed_objects=True
    )
    task = asyncio.create_task(reflector.run())
    try:
        await eventually(informer.has_synced)
        assert cached_at_freeze == [0, 0, 0, 5]  # three pages of at most 2, then once the store holds all 5
    finally:
        await _stop(task)


async def test_freeze_listed_objects_never_freezes_on_a_relist(monkeypatch: Any) -> None:
    """A relist runs beside live reconciles: freezing then would keep their later cycles for good."""
    freezes: list[int] = []
    monkeypatch.setattr("reconcilekit.cache._internal.reflector.gc.freeze", lambda: freezes.append(1))
    reflector = Reflector(
        client=Recording(_config_maps(5)), gvk=CM, store=SharedIndexInformer(name="cm"), backoff=FAST, page_size=2,
        freeze_listed_objects=True,
    )  # fmt: skip
    await reflector._list()
    first = len(freezes)
    await reflector._list()  # as after a 410
    assert first == 4
    assert len(freezes) == first


async def test_without_freeze_listed_objects_the_reflector_never_freezes(monkeypatch: Any) -> None:
    freezes: list[int] = []
    monkeypatch.setattr("reconcilekit.cache._internal.reflector.gc.freeze", lambda: freezes.append(1))
    informer, task = await _list_once(Recording(_config_maps(5)), freeze=False)
    try:
        assert freezes == []
        assert len(informer.indexer) == 5
    finally:
        await _stop(task)
