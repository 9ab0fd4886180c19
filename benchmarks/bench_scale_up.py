"""Scale-up, drain and request economy of one scale set under a burst (issue 20, figure 1).

One AutoscalingRunnerSet (minRunners 0, maxRunners 200) gets a burst of 200 jobs of 30 s,
at Actions latency 0 and 100 ms (the fake service's latency fault on every route), with
the chart's default worker counts. Driven through arc-sim's machinery (`benchmarks._arcrun`):
the listener runs as an ``arc-listener`` process, the controller as an ``arc-controller``
process, requests are counted from the API server's audit log by user. Prints time to all
runner pods, job wait p50/p95, runners beyond demand, K8s requests per runner by user and by
verb and resource, Actions requests per runner, controller CPU per lifecycle, peak RSS, the
drain, and each target of the issue as MET or MISSED.

Run: ``KUBEBUILDER_ASSETS=... python -m benchmarks bench_scale_up``. Knobs (environment):
``BENCH_JOBS`` (200), ``BENCH_MAX_RUNNERS`` (200), ``BENCH_JOB_SECONDS`` (30),
``BENCH_LATENCIES_MS`` (``0,100``), ``BENCH_OUT`` (output folder, default a temporary one).

Python only: a benchmark.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import _arcrun, _figures
from benchmarks._figures import Target


def _int_env(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def targets_for(totals: dict[str, Any], *, latency_ms: int, jobs: int) -> list[Target]:
    """The issue's targets that figure 1 measures, at this latency (drain and time to all pods are for 50 jobs)."""
    t = totals
    size = "issue: 50 runners" if jobs == 50 else f"issue: 50 runners; NOT COMPARABLE at {jobs}"
    out = [
        Target("controller + listener K8s requests per runner", float(t["total_per_runner"]), 12.0, "",
               f"Go {_figures.GO_REQUESTS_PER_RUNNER_TOTAL}, ours before 17.5"),
        Target("listener requests per runner <= Go's", float(t["listener_per_runner"]),
               _figures.GO_LISTENER_REQUESTS_PER_RUNNER, "", "ours before 4.0"),
        Target("EphemeralRunner deletes per finished runner", float(t["deletes_per_runner"]),
               _figures.GO_DELETES_PER_RUNNER, "", "ours before 1.9"),
    ]  # fmt: skip
    if latency_ms == 0:
        out.append(Target(f"drain ({size})", float(t["drain_s"]), _figures.GO_DRAIN_S, " s",
                          "Go 1.2 s, ours before 4.3 s"))  # fmt: skip
    if latency_ms >= 100:
        out.append(Target(f"time to all pods <= 0.5x Go's at 100 ms ({size})", float(t["all_pods_s"]),
                          0.5 * _figures.GO_ALL_PODS_S_LATENCY_100MS, " s", "Go 7.6 s, ours before 6.0 s"))  # fmt: skip
        out.append(Target("runners beyond demand at 100 ms", float(t["beyond_demand"]), 0.0, "",
                          "Go 3 of 50, ours before 2 of 50"))  # fmt: skip
    out.append(Target("listener process RSS", _figures.mib(t["listener_peak_rss"]), 40.0, " MiB",
                      f"Go {_figures.GO_LISTENER_RSS_MIB:g} MiB, ours before 68 MiB"))  # fmt: skip
    return out


def main() -> None:
    """Run the burst at each latency and print figure 1 with its targets."""
    jobs = _int_env("BENCH_JOBS", 200)
    max_runners = _int_env("BENCH_MAX_RUNNERS", 200)
    job_seconds = float(os.environ.get("BENCH_JOB_SECONDS", 30))
    latencies = [int(x) for x in os.environ.get("BENCH_LATENCIES_MS", "0,100").split(",") if x.strip()]
    out_root = Path(os.environ.get("BENCH_OUT") or tempfile.mkdtemp(prefix="bench-scale-up-"))
    print(f"one scale set, minRunners 0, maxRunners {max_runners}, a burst of {jobs} jobs of {job_seconds:g} s; "
          f"the chart's default workers; {_figures.load_line()}")  # fmt: skip
    print(f"  chart flags beyond arc-sim's: {' '.join(_arcrun.CHART_FLAGS)}")
    print(f"  ({_figures.GO_ANCHORS_NOTE})")
    for latency_ms in latencies:
        plan = _arcrun.ScaleSetPlan(name="bench-set", namespace="arc-runners", jobs=jobs, max_runners=max_runners)
        result = asyncio.run(
            _arcrun.run(
                [plan], job_seconds=job_seconds, latency=latency_ms / 1000.0, out_dir=out_root / f"latency-{latency_ms}"
            )
        )
        totals = _figures.print_run(result, label=f"Actions latency {latency_ms} ms")
        totals["listener_peak_rss"] = result.listener_peak_rss
        _figures.print_targets(targets_for(totals, latency_ms=latency_ms, jobs=jobs))
    print(f"  output (controller.log, listener logs, audit log): {out_root}")


if __name__ == "__main__":
    main()
