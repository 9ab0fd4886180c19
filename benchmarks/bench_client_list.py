"""LIST 5,000 ConfigMaps: reconcilekit's raw-JSON client against kubernetes-asyncio's typed models.

Both run in the same process against the same envtest kube-apiserver, on fixture F1 of
performance-facts.md §3.3 (ConfigMaps of about 1.5 KB as stored: labels app=bench, one
annotation, a 28-line ``config.yaml`` value), one un-paginated LIST and a paginated one
(limit 500) each. Rounds alternate the order; the best of ``ROUNDS`` is reported, as wall
time and process CPU time, plus the memory the decoded result holds (tracemalloc, separate
run). It also times orjson against the standard library's json on the same response body,
which is why reconcilekit depends on orjson.

Run: ``KUBEBUILDER_ASSETS=... python -m benchmarks bench_client_list`` (or ``make bench``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from reconcilekit.client import GroupVersionKind, RestClient, new_client
from reconcilekit.config import load_rest_config
from reconcilekit.envtest import Environment

N_OBJECTS = int(os.environ.get("BENCH_LIST_OBJECTS", "5000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PAGE = 500
CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")

_CONFIG_YAML = "\n".join(f"key_{i:02d}: value-{i:02d}-abcdefghijklmnopqrstu" for i in range(28)) + "\n"


def _f1(namespace: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"bench-{i:05d}",
            "namespace": namespace,
            "labels": {"app": "bench"},
            "annotations": {"bench.reconcilekit.io/note": "fixture F1"},
        },
        "data": {"config.yaml": _CONFIG_YAML},
    }


async def _seed(client: RestClient, namespace: str) -> None:
    gate = asyncio.Semaphore(16)

    async def create(i: int) -> None:
        async with gate:
            await client.create(_f1(namespace, i))

    async with asyncio.TaskGroup() as tasks:
        for i in range(N_OBJECTS):
            tasks.create_task(create(i), name=f"bench-seed-{i}")


async def _timed(fn: Callable[[], Awaitable[int]]) -> tuple[float, float, int]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    n = await fn()
    return time.perf_counter() - wall, time.process_time() - cpu, n


async def _retained_bytes(fn: Callable[[], Awaitable[Any]]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = await fn()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del result
    return after - before


async def _run() -> None:
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio import config as k8s_config

    async with Environment() as env:
        rest_config = await load_rest_config(env.kubeconfig_path)
        namespace = await env.create_namespace(prefix="bench-")
        conf = k8s.Configuration()
        await k8s_config.load_kube_config(
            config_file=str(env.kubeconfig_path), client_configuration=conf, persist_config=False
        )
        async with new_client(rest_config, timeout=120.0) as ours, k8s.ApiClient(conf) as api_client:
            typed = k8s.CoreV1Api(api_client)
            seed_start = time.perf_counter()
            await _seed(ours, namespace)
            print(f"seeded {N_OBJECTS} ConfigMaps (F1) in {time.perf_counter() - seed_start:.1f} s", flush=True)

            async def ours_full() -> int:
                return len((await ours.list(CONFIGMAP, namespace=namespace)).items)

            async def ours_paged() -> int:
                return len((await ours.list_all(CONFIGMAP, namespace=namespace, page_size=PAGE)).items)

            async def typed_full() -> int:
                return len((await typed.list_namespaced_config_map(namespace, _request_timeout=120)).items)

            async def typed_paged() -> int:
                n, token = 0, None
                while True:
                    page = await typed.list_namespaced_config_map(
                        namespace, limit=PAGE, _continue=token, _request_timeout=120
                    )
                    n += len(page.items)
                    token = page.metadata._continue
                    if not token:
                        return n

            cases: dict[str, Callable[[], Awaitable[int]]] = {
                "reconcilekit full": ours_full,
                "kubernetes-asyncio full": typed_full,
                "reconcilekit paged": ours_paged,
                "kubernetes-asyncio paged": typed_paged,
            }
            await ours_full()  # warm discovery, connections and the server's caches
            await typed_full()
            best: dict[str, tuple[float, float]] = {}
            for r in range(ROUNDS):
                order = list(cases.items()) if r % 2 == 0 else list(reversed(cases.items()))
                for name, fn in order:
                    wall, cpu, n = await _timed(fn)
                    assert n == N_OBJECTS, (name, n)
                    prev = best.get(name, (float("inf"), float("inf")))
                    best[name] = (min(prev[0], wall), min(prev[1], cpu))

            async def ours_result() -> Any:
                return await ours.list(CONFIGMAP, namespace=namespace)

            async def typed_result() -> Any:
                return await typed.list_namespaced_config_map(namespace, _request_timeout=120)

            mem_ours = await _retained_bytes(ours_result)
            mem_typed = await _retained_bytes(typed_result)

            body = await ours._transport.request(  # the raw response, to time decoders on the same bytes
                "GET", f"/api/v1/namespaces/{namespace}/configmaps", verb="list", resource="configmaps"
            )
            decode: dict[str, float] = {}
            for name, loads in (("orjson", orjson.loads), ("json", json.loads)):
                times = []
                for _ in range(ROUNDS):
                    start = time.perf_counter()
                    loads(body)
                    times.append(time.perf_counter() - start)
                decode[name] = min(times)

    print(f"objects: {N_OBJECTS}, rounds: {ROUNDS} (best of), page size {PAGE} for 'paged'")
    print(f"{'case':28} {'wall s':>8} {'cpu s':>8}")
    for name, (wall, cpu) in best.items():
        print(f"{name:28} {wall:8.3f} {cpu:8.3f}")
    for mode in ("full", "paged"):
        o, t = best[f"reconcilekit {mode}"], best[f"kubernetes-asyncio {mode}"]
        print(
            f"ratio kubernetes-asyncio / reconcilekit ({mode}): wall {t[0] / o[0]:.1f}x, cpu {t[1] / o[1]:.1f}x"
        )
    print(
        f"retained by one full list: reconcilekit {mem_ours / 2**20:.1f} MiB, kubernetes-asyncio "
        f"{mem_typed / 2**20:.1f} MiB, ratio {mem_typed / mem_ours:.2f}x"
    )
    print(
        f"decode of the {len(body) / 2**20:.1f} MiB list body: orjson {decode['orjson'] * 1e3:.1f} ms, "
        f"json {decode['json'] * 1e3:.1f} ms, ratio {decode['json'] / decode['orjson']:.1f}x"
    )


def main() -> None:
    """Seed envtest with F1 ConfigMaps, list them both ways, print the ratios."""
    asyncio.run(_run())


if __name__ == "__main__":
    main()
