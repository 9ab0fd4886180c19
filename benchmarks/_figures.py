"""The printed figures of the ARC benchmarks (issue 20): per scale set and for the manager, with targets.

Pure functions over what `benchmarks._arcrun` measured, so that the aggregation is unit
tested (tests/benchmarks) without a cluster.

Python only: a benchmark helper.
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arc_controllers.cmd.sim.report import percentile
from benchmarks._audit import FINISH_STEPS, Request, finish_gaps, tally

MIB = 1024 * 1024

GO_ANCHORS_NOTE = (
    "Go ARC figures: June 2026 master, built and measured outside the project on the same API server, "
    "fake Actions service and kubelet driver (issue 20; medians of 3 runs of a 50-job burst of 20 s jobs)"
)
GO_REQUESTS_PER_RUNNER_CONTROLLER = 20.2
GO_REQUESTS_PER_RUNNER_TOTAL = 23.2
GO_LISTENER_REQUESTS_PER_RUNNER = 3.0
GO_ALL_PODS_S_LATENCY_0 = 7.6
GO_ALL_PODS_S_LATENCY_100MS = 7.6
GO_DRAIN_S = 1.2
GO_BEYOND_DEMAND_100MS = 3
GO_RSS_5000_MIB = 190.0
GO_CPU_5000_S = 13.7
"""Median of Go's 15.0 and 12.4 CPU-seconds in 5 minutes at 5,000 runners."""
GO_LISTENER_RSS_MIB = 26.0
GO_DELETES_PER_RUNNER = 1.0



def load_line() -> str:
    """The machine's load averages (1, 5, 15 minutes) and its CPU count."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def time_to_all_pods(pod_times: Iterable[float], *, demand: int, burst_at: float) -> float:
    """Seconds from the burst to the ``demand``-th runner pod; NaN when fewer pods appeared."""
    ordered = sorted(pod_times)
    if demand <= 0 or len(ordered) < demand:
        return math.nan
    return ordered[demand - 1] - burst_at


def drain_seconds(job_done_times: Iterable[float], runner_gone_times: Iterable[float]) -> float:
    """Seconds from the last job done to the last runner gone; NaN when either is missing."""
    done, gone = list(job_done_times), list(runner_gone_times)
    if not done or not gone:
        return math.nan
    return max(gone) - max(done)


def per_runner(n: float, runners: int) -> float:
    """``n`` divided by ``runners``; NaN for no runners."""
    return n / runners if runners else math.nan


@dataclass(frozen=True, slots=True)
class Target:
    """One target of the issue: the measured figure against its limit (``at most`` unless ``at_least``)."""

    name: str
    measured: float
    limit: float
    unit: str = ""
    anchor: str = ""
    """Go's figure (or ours before), for context."""

    @property
    def met(self) -> bool:
        """Whether the figure is within the limit (a NaN is missed)."""
        return not math.isnan(self.measured) and self.measured <= self.limit + 1e-9

    def line(self) -> str:
        """``MET``/``MISSED``, the target and the figure, as one printed line."""
        verdict = "MET   " if self.met else "MISSED"
        anchor = f"  [{self.anchor}]" if self.anchor else ""
        return f"  {verdict} {self.name}: {self.measured:.2f}{self.unit} (target <= {self.limit:g}{self.unit}){anchor}"


def requests_by_role(requests: Iterable[Request]) -> dict[str, list[Request]]:
    """Requests grouped by role (``controller``, ``listener``, ``sim``, ``apiserver``), watches left out."""
    out: dict[str, list[Request]] = collections.defaultdict(list)
    for r in requests:
        if r.verb != "watch":
            out[r.role].append(r)
    return dict(out)


def deletes_per_finished_runner(requests: Iterable[Request], runners: int) -> float:
    """The controller's EphemeralRunner DELETE requests per runner created (1.0: one delete each)."""
    n = sum(1 for r in requests if r.role == "controller" and r.verb == "delete" and r.resource == "ephemeralrunners")
    return per_runner(n, runners)


def print_by_kind(title: str, requests: Sequence[Request], runners: int, *, indent: str = "    ") -> None:
    """``title`` then each ``verb resource`` with its count and per-runner rate."""
    print(f"{indent}{title}: {len(requests)} ({per_runner(len(requests), runners):.2f} per runner)")
    for kind, n in tally(requests).items():
        print(f"{indent}  {n:6d}  {per_runner(n, runners):6.2f}/runner  {kind}")


def mib(n: float) -> float:
    """Bytes in MiB."""
    return n / MIB


def scale_set_rows(result: Any) -> list[dict[str, Any]]:
    """Figure 1's numbers for each scale set of a `RunResult` (``_arcrun.RunResult``)."""
    rows = []
    listener_reqs = requests_by_role(result.requests).get("listener", [])
    for rec in result.records:
        p = rec.plan
        jobs = [result.jobs[i] for i in rec.job_ids if i in result.jobs]
        waits = [j.started - j.queued for j in jobs if j.started is not None]
        runners = len(rec.runners_created)
        with_job = len(set(rec.runners_created) & result.runners_with_job)
        mine = [r for r in listener_reqs if f":{p.name}-" in r.user]
        ns_controller = [
            r for r in result.requests if r.role == "controller" and r.verb != "watch" and r.namespace == p.namespace
        ]
        rows.append(
            {
                "name": p.name,
                "namespace": p.namespace,
                "jobs": p.jobs,
                "jobs_done": sum(1 for j in jobs if j.done is not None and j.result == "succeeded"),
                "runners": runners,
                "all_pods_s": time_to_all_pods(rec.pods_seen.values(), demand=p.demand, burst_at=p.burst_at),
                "wait_p50": percentile(waits, 50),
                "wait_p95": percentile(waits, 95),
                "beyond_demand": max(0, runners - with_job),
                "drain_s": drain_seconds([j.done for j in jobs if j.done is not None], rec.runners_gone.values()),
                "listener_per_runner": per_runner(len(mine), runners),
                "controller_ns_requests": len(ns_controller),
                "listener_rss_mib": mib(result.listener_rss_by_scale_set.get(p.name, 0)),
            }
        )
    return rows


def manager_totals(result: Any) -> dict[str, Any]:
    """Figure 1's numbers for the whole manager of a `RunResult`."""
    rows = scale_set_rows(result)
    runners = sum(r["runners"] for r in rows)
    roles = requests_by_role(result.requests)
    controller = roles.get("controller", [])
    listener = roles.get("listener", [])
    waits = [j.started - j.queued for j in result.jobs.values() if j.started is not None]
    all_pods = [r["all_pods_s"] for r in rows]
    drains = [r["drain_s"] for r in rows]
    return {
        "runners": runners,
        "jobs": sum(r["jobs"] for r in rows),
        "jobs_done": sum(r["jobs_done"] for r in rows),
        "all_pods_s": max(all_pods) if all(not math.isnan(x) for x in all_pods) else math.nan,
        "wait_p50": percentile(waits, 50),
        "wait_p95": percentile(waits, 95),
        "beyond_demand": sum(r["beyond_demand"] for r in rows),
        "drain_s": max(drains) if drains and all(not math.isnan(x) for x in drains) else math.nan,
        "controller_per_runner": per_runner(len(controller), runners),
        "listener_per_runner": per_runner(len(listener), runners),
        "total_per_runner": per_runner(len(controller) + len(listener), runners),
        "actions_per_runner": per_runner(sum(result.actions_requests.values()), runners),
        "controller_cpu_per_runner": per_runner(result.controller_cpu, runners),
        "deletes_per_runner": deletes_per_finished_runner(result.requests, runners),
        "controller": controller,
        "listener": listener,
    }


def print_run(result: Any, *, label: str) -> dict[str, Any]:
    """Print a run's manager-wide figures (figure 1); returns `manager_totals`."""
    t = manager_totals(result)
    runners = t["runners"]
    print(f"-- {label}")
    print(f"  load before {fmt_load(result.load_before)}; after {fmt_load(result.load_after)}")
    if result.timed_out:
        print("  RUN TIMED OUT: figures below are partial")
    print(f"  jobs done {t['jobs_done']}/{t['jobs']}; runners created {runners}; run {result.duration:.1f} s")
    print(f"  time to all runner pods      {t['all_pods_s']:.2f} s")
    print(f"  job wait p50 / p95           {t['wait_p50']:.2f} s / {t['wait_p95']:.2f} s")
    print(f"  runners beyond demand        {t['beyond_demand']}")
    print(f"  drain (last job done -> last runner gone) {t['drain_s']:.2f} s")
    print(f"  K8s requests per runner      controller {t['controller_per_runner']:.2f}, listener "
          f"{t['listener_per_runner']:.2f}, both {t['total_per_runner']:.2f}")  # fmt: skip
    print_by_kind("controller by verb and resource", t["controller"], runners)
    print_by_kind("listener by verb and resource", t["listener"], runners)
    print(f"  EphemeralRunner deletes per runner {t['deletes_per_runner']:.2f}")
    gaps = finish_gaps(result.requests)
    print("  a finished runner's end, seconds from its pod's terminated status (p50 / p95 / max):")
    for step in FINISH_STEPS:
        values = gaps[step]
        top = max(values, default=math.nan)
        print(f"      {step:20s} {percentile(values, 50):6.2f} / {percentile(values, 95):6.2f} / {top:6.2f}")
    print(f"  Actions requests per runner  {t['actions_per_runner']:.2f}")
    for route, n in sorted(result.actions_requests.items(), key=lambda kv: -kv[1]):
        print(f"      {n:6d}  {per_runner(n, runners):6.2f}/runner  {route}")
    per_lifecycle_ms = 1000 * t["controller_cpu_per_runner"]
    print(f"  controller CPU               {result.controller_cpu:.2f} s ({per_lifecycle_ms:.1f} ms per lifecycle)")
    print(f"  controller peak RSS          {mib(result.controller_peak_rss):.1f} MiB")
    print(f"  listener processes {result.listener_processes}: peak RSS {mib(result.listener_peak_rss):.1f} MiB each "
          f"(max), {mib(result.listener_peak_total_rss):.1f} MiB summed; CPU {result.listener_cpu:.2f} s")  # fmt: skip
    return t


def fmt_load(load: Sequence[float]) -> str:
    """Load averages as ``1m 5m 15m``."""
    return " ".join(f"{x:.2f}" for x in load)


def print_targets(targets: Iterable[Target]) -> None:
    """Every target as a MET/MISSED line."""
    print("  targets (issue 20):")
    for t in targets:
        print(t.line())


def fmt_row(row: Mapping[str, Any]) -> str:
    """One scale set's figures on one line."""
    return (
        f"  {row['name']:10s} {row['namespace']:8s} jobs {row['jobs_done']:3d}/{row['jobs']:<3d} runners "
        f"{row['runners']:3d}  all pods {row['all_pods_s']:6.2f} s  wait p50/p95 {row['wait_p50']:5.2f}/"
        f"{row['wait_p95']:5.2f} s  beyond {row['beyond_demand']}  drain {row['drain_s']:5.2f} s  listener "
        f"{row['listener_per_runner']:.2f} req/runner, {row['listener_rss_mib']:.1f} MiB"
    )
