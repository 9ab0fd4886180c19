"""How long the envtest control plane takes to start: ``python -m benchmarks bench_envtest_start``.

Five starts of a fresh etcd + kube-apiserver (PKI, etcd /health, kube-apiserver
/readyz and the default Namespace), timed from ``start()`` to its return, and
the stop after each. The baseline, measured in the same runs, is etcd's own
start: the ratio says how much of the wait is kube-apiserver.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from reconcilekit.envtest import Environment

RUNS = 5


async def _one() -> tuple[float, float, dict[str, float]]:
    env = Environment()
    began = time.monotonic()
    await env.start()
    started = time.monotonic() - began
    phases = dict(env.start_durations)
    began = time.monotonic()
    await env.stop()
    return started, time.monotonic() - began, phases


async def _measure() -> list[tuple[float, float, dict[str, float]]]:
    return [await _one() for _ in range(RUNS)]


def _row(label: str, values: list[float]) -> str:
    return (
        f"{label:<28} median {statistics.median(values):7.3f} s   "
        f"min {min(values):7.3f} s   max {max(values):7.3f} s"
    )


def main() -> None:
    runs = asyncio.run(_measure())
    starts = [r[0] for r in runs]
    stops = [r[1] for r in runs]
    etcd = [r[2].get("etcd", 0.0) for r in runs]
    apiserver = [r[2].get("kube-apiserver", 0.0) for r in runs]
    pki = [r[2].get("pki", 0.0) for r in runs]
    print(f"envtest control-plane start, {RUNS} runs (start() call to ready)")
    print(_row("start to ready", starts))
    print(_row("  pki generation", pki))
    print(_row("  etcd to /health (baseline)", etcd))
    print(_row("  kube-apiserver to ready", apiserver))
    print(_row("stop (apiserver, etcd, rm)", stops))
    print(f"ratio start / etcd baseline: {statistics.median(starts) / statistics.median(etcd):.1f}x")


if __name__ == "__main__":
    main()
