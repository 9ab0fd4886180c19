"""Issue 16: the reflector recovers fast and never waits longer than its cap.

* Backoff delays stay under the cap with jitter included (200 seeds × 12 delays), under the
  lower ``unreachable_cap`` after connection-level failures, and start over once a list and a
  watch worked.
* A 410 relists at once; only a second 410 in a row backs off.
* A 429 with ``Retry-After`` waits what the server asked, not the backoff.
* A watch that went silent past its read-idle deadline is re-opened from the last
  resourceVersion without a relist; the deadline reaches the client's ``watch``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from structlog.testing import capture_logs

from reconcilekit.cache._internal.backoff import BackoffManager, BackoffSettings
from reconcilekit.cache._internal.reflector import DEFAULT_READ_IDLE_TIMEOUT, Reflector
from reconcilekit.cache._internal.shared_informer import SharedIndexInformer
from reconcilekit.client.interfaces import GroupVersionKind, Object, WatchEvent
from reconcilekit.errors import TooManyRequestsError, TransportError
from reconcilekit.testing import FakeClient, eventually

CM = GroupVersionKind("", "v1", "ConfigMap")
SLOW = BackoffSettings(initial=20.0, factor=2.0, jitter=0.0, cap=30.0, unreachable_cap=30.0)
"""A backoff so slow that any wait for it fails the test's short eventually."""


def _cm(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}, "data": {}}


def _refused() -> TransportError:
    err = TransportError("GET watch failed: connection refused")
    err.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return err


def _went_silent() -> TransportError:
    err = TransportError("watch broke: timeout on reading data from socket")
    err.__cause__ = aiohttp.SocketTimeoutError("Timeout on reading data from socket")
    return err


def test_200_seeds_by_12_delays_never_exceed_the_cap_issue_16() -> None:
    """Default settings: jitter is applied inside the 30 s cap (client-go's reached 59.99 s)."""
    settings = BackoffSettings()
    worst = 0.0
    for seed in range(200):
        random.seed(seed)
        manager = BackoffManager(settings)
        delays = [manager.delay() for _ in range(12)]
        worst = max(worst, *delays)
        assert all(d <= settings.cap for d in delays), (seed, delays)
        assert delays[0] >= settings.initial
    assert worst > 0.9 * settings.cap  # the cap is reached, so the bound is not vacuous
    print(f"max delay over 200 seeds x 12: {worst:.2f} s (cap {settings.cap} s)")


def test_delays_near_the_cap_stay_spread_out() -> None:
    """Replicas that failed together do not all retry at exactly the cap."""
    random.seed(7)
    manager = BackoffManager(BackoffSettings())
    tail = [manager.delay() for _ in range(40)][10:]
    assert min(tail) >= 15.0
    assert max(tail) - min(tail) > 5.0


def test_unreachable_delays_stay_under_the_unreachable_cap() -> None:
    settings = BackoffSettings()
    for seed in range(200):
        random.seed(seed)
        manager = BackoffManager(settings)
        delays = [manager.delay(unreachable=True) for _ in range(12)]
        assert max(delays) <= settings.unreachable_cap, (seed, delays)


def test_reset_starts_over_from_the_initial_delay() -> None:
    manager = BackoffManager(BackoffSettings(jitter=0.0))
    assert [manager.delay() for _ in range(5)] == [0.8, 1.6, 3.2, 6.4, 12.8]
    manager.reset()
    assert manager.delay() == 0.8


def test_default_read_idle_timeout_is_twice_the_bookmark_interval() -> None:
    assert DEFAULT_READ_IDLE_TIMEOUT == 120.0


class Scripted(FakeClient):
    """A FakeClient whose next watches fail or expire as scripted; remembers the watch arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.script: list[Exception | str] = []
        self.watch_kwargs: list[dict[str, Any]] = []
        self.watch_times: list[float] = []
        self.always_expire = False

    async def watch(self, gvk: GroupVersionKind, /, **kwargs: Any) -> AsyncIterator[WatchEvent]:
        self.watch_kwargs.append(kwargs)
        self.watch_times.append(time.monotonic())
        step = self.script.pop(0) if self.script else None
        if isinstance(step, Exception):
            raise step
        if self.always_expire or step == "expire":
            yield WatchEvent("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
            return
        if step == "bookmark-then-silence":
            yield WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": self.resource_version}})
            raise _went_silent()
        async for event in super().watch(gvk, **kwargs):
            yield event


async def _start(client: FakeClient, backoff: BackoffSettings, **kwargs: Any) -> tuple[Reflector, asyncio.Task[None]]:
    informer = SharedIndexInformer(name="cm")
    reflector = Reflector(client=client, gvk=CM, store=informer, backoff=backoff, **kwargs)
    return reflector, asyncio.create_task(reflector.run(), name="reflector")


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_410_relists_at_once_instead_of_waiting_out_the_backoff_issue_16() -> None:
    """After a restart the first re-watch gets 410: the relist must not wait the escalated delay."""
    client = Scripted([_cm("a")])
    client.script = [_refused(), _refused(), "expire"]  # down twice (0.01 s, 1 s), then 410: next delay 30 s
    settings = BackoffSettings(initial=0.01, factor=100.0, jitter=0.0, cap=30.0, unreachable_cap=30.0)
    reflector, task = await _start(client, settings)
    try:
        await eventually(lambda: client.open_watches == 1, timeout=3)
        assert reflector.lists == 2
        assert reflector.expired == 1
    finally:
        await _stop(task)


async def test_a_second_410_in_a_row_backs_off() -> None:
    """A server that expires every watch at once is not hammered by relists."""
    client = Scripted([_cm("a")])
    client.always_expire = True
    reflector, task = await _start(client, SLOW)
    try:
        await eventually(lambda: reflector.expired == 2, timeout=2)
        await asyncio.sleep(0.3)
        assert reflector.lists == 2  # list, 410, relist at once, 410, now waiting 20 s
    finally:
        await _stop(task)


async def test_the_first_event_of_a_watch_resets_the_backoff() -> None:
    """Escalated by failures, the delay starts over once a list and a watch worked."""
    client = Scripted([_cm("a")])
    settings = BackoffSettings(initial=0.02, factor=50.0, jitter=0.0, cap=30.0, unreachable_cap=30.0)
    client.script = [_refused(), _refused()]  # delays 0.02 s, then 1 s; the next would be 30 s
    reflector, task = await _start(client, settings)
    try:
        await eventually(lambda: client.open_watches == 1, timeout=5)
        await client.create(_cm("c"))  # one event on the open watch
        await eventually(lambda: reflector.last_sync_resource_version == client.resource_version)
        client.script = [_refused()]
        before = len(client.watch_times)
        client.close_watches()  # re-watch: refused, then the delay: 0.02 s after the reset, 30 s without
        await eventually(lambda: len(client.watch_times) >= before + 2, timeout=2)
    finally:
        await _stop(task)


async def test_a_429_with_retry_after_waits_what_the_server_asked() -> None:
    client = Scripted([_cm("a")])
    client.script = [TooManyRequestsError(429, "TooManyRequests", "storage is (re)initializing", retry_after=0.1)]
    reflector, task = await _start(client, SLOW)
    try:
        await eventually(lambda: client.open_watches == 1, timeout=2)
        assert client.watch_times[1] - client.watch_times[0] >= 0.1
        assert reflector.lists == 1
    finally:
        await _stop(task)


async def test_a_silent_watch_is_reopened_from_the_last_rv_without_a_relist_issue_16() -> None:
    """A half-open watch (no byte for read_idle_timeout) is dropped and re-opened where it was."""
    client = Scripted([_cm("a")])
    client.script = ["bookmark-then-silence"]
    with capture_logs() as logs:
        reflector, task = await _start(client, SLOW, read_idle_timeout=7.5)
        try:
            await eventually(lambda: client.open_watches == 1, timeout=2)
        finally:
            await _stop(task)
    assert reflector.silent == 1
    assert reflector.lists == 1
    assert [k["read_idle_timeout"] for k in client.watch_kwargs] == [7.5, 7.5]
    assert client.watch_kwargs[1]["resource_version"] == client.watch_kwargs[0]["resource_version"]
    assert any(e["event"] == "watch went silent, re-watching" and e["log_level"] == "warning" for e in logs)


async def test_the_deadline_is_not_passed_to_a_client_whose_watch_does_not_take_it() -> None:
    """Clients written before the deadline existed keep working (the argument is left out)."""

    class OldClient(FakeClient):
        async def watch(  # type: ignore[override]
            self,
            gvk: GroupVersionKind,
            /,
            *,
            namespace: str | None = None,
            labels: Any = None,
            fields: Any = None,
            resource_version: str | None = None,
            timeout_seconds: int | None = None,
            allow_watch_bookmarks: bool = True,
        ) -> AsyncIterator[WatchEvent]:
            async for event in super().watch(gvk, namespace=namespace, resource_version=resource_version):
                yield event

    client = OldClient([_cm("a")])
    reflector, task = await _start(client, SLOW)
    try:
        await eventually(lambda: client.open_watches == 1, timeout=2)
        assert reflector.read_idle_timeout == DEFAULT_READ_IDLE_TIMEOUT
    finally:
        await _stop(task)
