"""Twenty scale sets under one manager (issue 20, figure 3).

20 AutoscalingRunnerSets in 10 namespaces (two each), 25 runners each (maxRunners 25, a
burst of 25 jobs), bursts staggered (``BENCH_STAGGER_SECONDS`` apart, default 2 s), jobs of
30 s, the chart's default workers, one ``arc-listener`` process per scale set, the controller
as an ``arc-controller`` process. Prints figure 1's numbers per scale set and for the manager
as a whole, the listener processes counted and their RSS summed, with the issue's targets.

Run: ``KUBEBUILDER_ASSETS=... python -m benchmarks bench_many_scale_sets``. Knobs (environment):
``BENCH_SCALE_SETS`` (20), ``BENCH_NAMESPACES`` (10), ``BENCH_RUNNERS_EACH`` (25),
``BENCH_JOB_SECONDS`` (30), ``BENCH_STAGGER_SECONDS`` (2), ``BENCH_LATENCY_MS`` (0), ``BENCH_OUT``.

Python only: a benchmark.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from benchmarks import _arcrun, _figures
from benchmarks._figures import Target


def plans(*, scale_sets: int, namespaces: int, runners_each: int, stagger: float) -> list[_arcrun.ScaleSetPlan]:
    """The scale sets: ``ss-NN`` in ``runners-MM``, round robin over the namespaces, bursts ``stagger`` s apart."""
    return [
        _arcrun.ScaleSetPlan(
            name=f"ss-{i:02d}",
            namespace=f"runners-{i % namespaces:02d}",
            jobs=runners_each,
            max_runners=runners_each,
            burst_at=i * stagger,
        )
        for i in range(scale_sets)
    ]


def main() -> None:
    """Run the staggered bursts; print per scale set, for the manager, and the targets."""
    n = int(os.environ.get("BENCH_SCALE_SETS", 20))
    namespaces = int(os.environ.get("BENCH_NAMESPACES", 10))
    each = int(os.environ.get("BENCH_RUNNERS_EACH", 25))
    job_seconds = float(os.environ.get("BENCH_JOB_SECONDS", 30))
    stagger = float(os.environ.get("BENCH_STAGGER_SECONDS", 2))
    latency_ms = int(os.environ.get("BENCH_LATENCY_MS", 0))
    out_dir = Path(os.environ.get("BENCH_OUT") or tempfile.mkdtemp(prefix="bench-many-scale-sets-"))
    print(f"{n} scale sets in {namespaces} namespaces, {each} runners each, bursts {stagger:g} s apart, jobs of "
          f"{job_seconds:g} s, Actions latency {latency_ms} ms; {_figures.load_line()}")  # fmt: skip
    print(f"  chart flags beyond arc-sim's: {' '.join(_arcrun.CHART_FLAGS)}")
    print(f"  ({_figures.GO_ANCHORS_NOTE})")
    result = asyncio.run(
        _arcrun.run(
            plans(scale_sets=n, namespaces=namespaces, runners_each=each, stagger=stagger),
            job_seconds=job_seconds,
            latency=latency_ms / 1000.0,
            out_dir=out_dir,
        )
    )
    print("  per scale set (time to all pods counts from its own burst):")
    rows = _figures.scale_set_rows(result)
    for row in rows:
        print(_figures.fmt_row(row))
    totals = _figures.print_run(result, label="the manager as a whole")
    rss = [row["listener_rss_mib"] for row in rows]
    print(f"  listener processes counted {result.listener_processes}; their peak RSS summed "
          f"{_figures.mib(result.listener_peak_total_rss):.1f} MiB (Go's 26 MiB each would be "
          f"{_figures.GO_LISTENER_RSS_MIB * n:.0f} MiB)")  # fmt: skip
    _figures.print_targets(
        [
            Target("controller + listener K8s requests per runner", totals["total_per_runner"], 12.0, "",
                   f"Go {_figures.GO_REQUESTS_PER_RUNNER_TOTAL} (one scale set)"),
            Target("listener requests per runner <= Go's", totals["listener_per_runner"],
                   _figures.GO_LISTENER_REQUESTS_PER_RUNNER),
            Target("EphemeralRunner deletes per finished runner", totals["deletes_per_runner"],
                   _figures.GO_DELETES_PER_RUNNER),
            Target("slowest scale set's drain", totals["drain_s"], _figures.GO_DRAIN_S, " s",
                   "Go 1.2 s for 50 runners"),
            Target("largest listener process RSS", max(rss, default=float("nan")), 40.0, " MiB",
                   f"Go {_figures.GO_LISTENER_RSS_MIB:g} MiB"),
            Target(f"{n} listeners' RSS summed (40 MiB each)", _figures.mib(result.listener_peak_total_rss),
                   40.0 * n, " MiB", f"Go {_figures.GO_LISTENER_RSS_MIB * n:.0f} MiB"),
        ]
    )  # fmt: skip
    print(f"  output (controller.log, listener logs, audit log): {out_dir}")


if __name__ == "__main__":
    main()
