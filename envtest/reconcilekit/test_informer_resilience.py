"""Must-show: informers survive an API server restart and etcd compaction (real kube-apiserver + etcd).

* kube-apiserver is stopped and restarted on the same etcd while objects change; afterwards the
  cache matches the server and every change reached the handlers.
* an informer that falls behind etcd's compaction window gets 410, relists, and objects deleted
  meanwhile arrive as tombstones. Compaction: etcd's gRPC gateway ``POST /v3/kv/compaction`` at
  the current revision, on a control plane whose kube-apiserver runs with ``--watch-cache=false``
  (with the watch cache on, the API server answers old resourceVersions from memory and etcd's
  compaction never reaches the watcher).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from reconcilekit.cache import ByObject, InformerCache, Options
from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.client import new_client
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.config import load_rest_config
from reconcilekit.envtest._environment import Environment
from reconcilekit.testing import LaggingClient, eventually

from .rk_support import CM, StateRecorder, configmap, server_state

pytestmark = [pytest.mark.slow, pytest.mark.envtest_only]

QUICK = BackoffSettings(initial=0.2, factor=2.0, jitter=1.0, cap=2.0)


async def _client(env: Any) -> Any:
    return new_client(await load_rest_config(env.kubeconfig_path), register_prometheus=False)


async def _run(cache: InformerCache) -> asyncio.Task[None]:
    task = asyncio.create_task(cache.start(), name="cache")
    await asyncio.sleep(0)
    return task


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_apiserver_restart_cache_matches_server_and_handlers_saw_every_change(
    envtest_environment: Any, namespace: str
) -> None:
    client = await _client(envtest_environment)
    writer = await _client(envtest_environment)
    for i in range(20):
        await writer.create(configmap(f"cm-{i}", namespace))
    cache = InformerCache(client, Options(backoff=QUICK, by_object={CM: ByObject(namespaces=[namespace])}))
    recorder = StateRecorder()
    (await cache.get_informer(CM)).add_event_handler(recorder)
    task = await _run(cache)
    try:
        assert await asyncio.wait_for(cache.wait_for_cache_sync(), 30)
        # changes racing the stop
        for i in range(5):
            obj = await writer.get(CM, ObjectKey(namespace, f"cm-{i}"))
            obj["data"]["value"] = "before-stop"
            await writer.update(obj)
        await envtest_environment.stop_apiserver()
        await envtest_environment.start_apiserver()
        # changes made while the informer is still backing off, disconnected
        for i in range(5, 10):
            obj = await writer.get(CM, ObjectKey(namespace, f"cm-{i}"))
            obj["data"]["value"] = "after-restart"
            await writer.update(obj)
        for i in range(10, 15):
            await writer.delete(configmap(f"cm-{i}", namespace))
        for i in range(20, 25):
            await writer.create(configmap(f"cm-{i}", namespace, "new"))

        truth = server_state((await writer.list(CM, namespace=namespace)).items)
        assert len(truth) == 20

        async def cache_matches() -> None:
            cached = server_state((await cache.list(CM, namespace=namespace)).items)
            assert cached == truth
            assert recorder.state == truth

        await eventually(cache_matches, timeout=60, interval=0.2)
        for i in range(5):
            assert ("update", f"{namespace}/cm-{i}", "before-stop") in recorder.calls
        for i in range(10, 15):
            assert ("delete", f"{namespace}/cm-{i}", None) in recorder.calls
        stats = cache.informer_stats(CM)
        print("restart: reflector (lists, watches) =", stats, "tombstones =", len(recorder.tombstones))
    finally:
        await _stop(task)
        await client.close()
        await writer.close()


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def no_watch_cache_env() -> AsyncIterator[Environment]:
    """A second control plane whose kube-apiserver serves watches from etcd (``--watch-cache=false``)."""
    async with Environment(apiserver_args={"watch-cache": "false"}) as env:
        yield env


async def _etcd_compact(etcd_url: str, revision: str) -> None:
    url = f"{etcd_url}/v3/kv/compaction"
    async with aiohttp.ClientSession() as http, http.post(url, json={"revision": revision, "physical": True}) as resp:
        body = await resp.text()
        assert resp.status == 200, body


async def test_informer_behind_compaction_gets_410_relists_and_sees_tombstones(
    no_watch_cache_env: Environment,
) -> None:
    env = no_watch_cache_env
    namespace = await env.create_namespace()
    real = await _client(env)
    writer = await _client(env)
    lag = LaggingClient(real)
    cache = InformerCache(lag, Options(backoff=QUICK, by_object={CM: ByObject(namespaces=[namespace])}))
    recorder = StateRecorder()
    (await cache.get_informer(CM)).add_event_handler(recorder)
    for i in range(10):
        await writer.create(configmap(f"cm-{i}", namespace))
    task = await _run(cache)
    try:
        assert await asyncio.wait_for(cache.wait_for_cache_sync(), 30)
        await eventually(lambda: lag.watches_opened >= 1)
        await asyncio.sleep(1.5)  # an established watch: its end is a clean close, not a stall
        lists_before = cache.informer_stats(CM)[namespace].lists
        lag.disconnect()  # the informer falls behind: its watch ends and cannot reopen
        for i in range(3):
            await writer.delete(configmap(f"cm-{i}", namespace))
        for i in range(3, 5):
            obj = await writer.get(CM, ObjectKey(namespace, f"cm-{i}"))
            obj["data"]["value"] = "changed"
            await writer.update(obj)
        await writer.create(configmap("cm-new", namespace, "new"))
        revision = (await writer.list(CM, namespace=namespace)).resource_version
        await _etcd_compact(env.etcd_url, revision)
        lag.reconnect()

        truth = server_state((await writer.list(CM, namespace=namespace)).items)

        async def caught_up() -> None:
            assert server_state((await cache.list(CM, namespace=namespace)).items) == truth
            assert recorder.state == truth

        await eventually(caught_up, timeout=60, interval=0.2)
        assert sorted(recorder.tombstones) == [f"{namespace}/cm-{i}" for i in range(3)]
        stats = cache.informer_stats(CM)[namespace]
        assert stats.expired >= 1  # the re-watch from the old resourceVersion got 410
        assert stats.lists == lists_before + 1  # ...which forced exactly one relist
        # unchanged objects were not re-delivered as updates
        updates = [c for c in recorder.calls if c[0] == "update"]
        assert sorted(k for _, k, _ in updates) == [f"{namespace}/cm-3", f"{namespace}/cm-4"]
        print("compaction: reflector (lists, watches) =", cache.informer_stats(CM))
    finally:
        await _stop(task)
        await real.close()
        await writer.close()
