"""What ``arc-sim`` measures: the per-second timeline, the per-job times, the summary and the plot.

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["JobTimes", "Sample", "Summary", "Timeline", "percentile", "render_summary", "summarize", "write_plot"]

RUNNER_PHASES = ("New", "Pending", "Running", "Succeeded", "Failed", "Outdated")
"""EphemeralRunner phases in display order; ``New`` is an object with no phase yet."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """The system at one instant (``t`` seconds from the scenario start)."""

    t: float
    runners: Mapping[str, int]
    """EphemeralRunners by phase (`RUNNER_PHASES`)."""
    jobs_queued: int
    jobs_running: int
    jobs_done: int
    """Jobs that reached a result, whatever it is (``jobs_failed`` of them did not succeed)."""
    jobs_failed: int = 0

    @property
    def runners_total(self) -> int:
        """Every EphemeralRunner that exists, whatever its phase."""
        return sum(self.runners.values())


@dataclass(slots=True)
class JobTimes:
    """One job's moments, in seconds from the scenario start (``None``: not yet)."""

    queued: float
    started: float | None = None
    done: float | None = None
    result: str = ""
    name: str = ""
    """The job's display name (``job-<n>``); empty when not known."""
    reason: str = ""
    """Why the job did not succeed (empty for a success)."""
    expected: bool = False
    """The scenario caused its failure on purpose (it deleted the job's runner pod)."""


@dataclass(slots=True)
class Timeline:
    """Everything recorded during a run."""

    samples: list[Sample] = field(default_factory=list)
    jobs: dict[int, JobTimes] = field(default_factory=dict)
    """By request id."""
    events: list[tuple[float, str]] = field(default_factory=list)
    """Scenario events and faults as they happened: (t, label)."""

    def job_queued(self, request_id: int, t: float, name: str = "") -> None:
        """Record a job entering the queue."""
        self.jobs[request_id] = JobTimes(queued=t, name=name)

    def job_started(self, request_id: int, t: float) -> None:
        """Record a runner taking the job."""
        job = self.jobs.get(request_id)
        if job is not None and job.started is None:
            job.started = t

    def job_done(self, request_id: int, t: float, result: str = "succeeded") -> None:
        """Record the job's end."""
        job = self.jobs.get(request_id)
        if job is not None:
            job.done, job.result = t, result


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) by linear interpolation; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """The numbers printed at the end of a run."""

    scenario: str
    jobs_total: int
    jobs_done: int
    duration: float
    peak_runners: int
    wait_p50: float
    wait_p95: float
    runners_created: int
    runners_with_job: int
    runners_beyond_demand: int
    controller_requests: int
    actions_requests: int
    listener_starts: int
    runner_images: Mapping[str, int] = field(default_factory=dict)
    """Runner pods started per image."""
    controller_requests_by_kind: Mapping[str, int] = field(default_factory=dict)
    """The controller's Kubernetes requests by ``"<verb> <resource>"``."""
    failed_jobs: Mapping[str, str] = field(default_factory=dict)
    """Jobs done without success: job name → why."""
    unexpected_failures: int = 0
    """Failed jobs the scenario did not cause on purpose (a run with any is a failed run)."""
    failed_runners: Mapping[str, int] = field(default_factory=dict)
    """EphemeralRunners seen in phase Failed, by ``status.reason``."""
    failed_runners_recycled: int = 0
    """Of those, runners that held no job and were gone by the end (the recycling policy at work)."""
    runners_replaced_by_rollout: int = 0
    """Runners without a job that the set's revision cleanup deleted for a newer runner spec
    (`arc_controllers.cmd.sim.rollouts`): a rollout's replacement, not over-provisioning."""
    condition_changes: Sequence[tuple[float, str]] = ()
    """Status condition transitions on the scale set's objects, in order: (t, ``"<Kind> <type>=<status> <reason>"``)
    each time a condition appears or changes status or reason (a return to Ready=True included)."""
    actions_faults: Mapping[str, int] = field(default_factory=dict)
    """Failure answers of the Actions service (``"<endpoint> <status>"``, empty 200s included) → count."""
    faults_not_fired: Sequence[str] = ()
    """Scenario events and faults whose effect was never seen, one line each (a run with any failed)."""
    faults_armed: int = 0
    """Scenario events and faults in all."""

    @property
    def all_done(self) -> bool:
        """Every job planned reached a result (`failed_jobs` lists those that did not succeed)."""
        return self.jobs_done == self.jobs_total

    @property
    def passed(self) -> bool:
        """Every job done and none failed except on the scenario's purpose."""
        return self.all_done and self.unexpected_failures == 0

    @property
    def listener_restarts(self) -> int:
        """Listener processes started after the first one."""
        return max(0, self.listener_starts - 1)

    @property
    def requests_per_runner(self) -> float:
        """Kubernetes API requests of the controller per runner created."""
        return self.controller_requests / self.runners_created if self.runners_created else math.nan

    @property
    def actions_per_runner(self) -> float:
        """Actions service requests (controller and listener) per runner created."""
        return self.actions_requests / self.runners_created if self.runners_created else math.nan


def summarize(
    timeline: Timeline,
    *,
    scenario: str,
    jobs_total: int,
    duration: float,
    runners_created: int,
    runners_with_job: int,
    idle_allowance: int,
    controller_requests: int,
    actions_requests: int,
    listener_starts: int,
    runner_images: Mapping[str, int] | None = None,
    controller_requests_by_kind: Mapping[str, int] | None = None,
    failed_runners: Mapping[str, int] | None = None,
    failed_runners_recycled: int = 0,
    runners_replaced_by_rollout: int = 0,
    condition_changes: Sequence[tuple[float, str]] = (),
    actions_faults: Mapping[str, int] | None = None,
    faults_not_fired: Sequence[str] = (),
    faults_armed: int = 0,
) -> Summary:
    """The run's summary.

    A job is done once it has a result; one that did not succeed is listed with its
    reason (`JobTimes.reason`), and counted as unexpected unless the scenario caused it.

    Args:
        runners_created: runners registered with the service (one JIT config each).
        runners_with_job: runners that took a job (one whose pod was deleted mid-job included).
        idle_allowance: idle runners the scale set is meant to keep (``minRunners``); those
            are not "beyond demand".
        failed_runners: runners seen Failed, by reason.
        failed_runners_recycled: Failed runners without a job that were deleted by the end:
            the policy replaces them, so they are not "beyond demand" (they are printed).
        runners_replaced_by_rollout: runners without a job, created on the set's revision and
            deleted by its revision cleanup once the spec moved on: the rollout replaced them,
            so they are not "beyond demand" (they are printed on a line of their own).
    """
    waits = [j.started - j.queued for j in timeline.jobs.values() if j.started is not None]
    done = sum(1 for j in timeline.jobs.values() if j.done is not None)
    failed = {
        (j.name or f"request {rid}"): (j.reason or j.result)
        for rid, j in sorted(timeline.jobs.items())
        if j.done is not None and j.result != "succeeded"
    }
    unexpected = sum(
        1 for j in timeline.jobs.values() if j.done is not None and j.result != "succeeded" and not j.expected
    )
    peak = max((s.runners_total for s in timeline.samples), default=0)
    return Summary(
        scenario=scenario,
        jobs_total=jobs_total,
        jobs_done=done,
        duration=duration,
        peak_runners=peak,
        wait_p50=percentile(waits, 50),
        wait_p95=percentile(waits, 95),
        runners_created=runners_created,
        runners_with_job=runners_with_job,
        runners_beyond_demand=max(
            0,
            runners_created - runners_with_job - idle_allowance - failed_runners_recycled - runners_replaced_by_rollout,
        ),
        controller_requests=controller_requests,
        actions_requests=actions_requests,
        listener_starts=listener_starts,
        runner_images=dict(runner_images or {}),
        controller_requests_by_kind=dict(controller_requests_by_kind or {}),
        failed_jobs=failed,
        unexpected_failures=unexpected,
        failed_runners=dict(failed_runners or {}),
        failed_runners_recycled=failed_runners_recycled,
        runners_replaced_by_rollout=runners_replaced_by_rollout,
        condition_changes=list(condition_changes),
        actions_faults=dict(actions_faults or {}),
        faults_not_fired=list(faults_not_fired),
        faults_armed=faults_armed,
    )


def _per_runner_by_verb(s: Summary) -> str:
    verbs: dict[str, int] = {}
    for kind, n in s.controller_requests_by_kind.items():
        verb = kind.split(" ", 1)[0]
        verbs[verb] = verbs.get(verb, 0) + n
    if not verbs or not s.runners_created:
        return "-"
    ordered = sorted(verbs.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{verb} {n / s.runners_created:.1f}" for verb, n in ordered)


def _failed_runners(s: Summary) -> str:
    total = sum(s.failed_runners.values())
    if not total:
        return "0"
    return f"{total} ({_counts(s.failed_runners)}); {s.failed_runners_recycled} recycled without a job"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{key} x{n}" for key, n in sorted(counts.items())) or "none"


def _conditions(changes: Sequence[tuple[float, str]]) -> list[tuple[str, str]]:
    """A header row, then one row per transition: ``t=12s``, the condition's new state."""
    if not changes:
        return [("conditions seen", "none seen")]
    return [
        ("conditions seen", f"{len(changes)} transition(s)"),
        *((f"  t={t:.0f}s", state) for t, state in changes),
    ]


def _faults_fired(s: Summary) -> list[tuple[str, str]]:
    fired = s.faults_armed - len(s.faults_not_fired)
    note = "  (SOME DID NOT FIRE)" if s.faults_not_fired else ""
    return [
        ("scenario faults fired", f"{fired}/{s.faults_armed}{note}"),
        *(("  did not fire", line) for line in s.faults_not_fired),
    ]


def render_summary(summary: Summary) -> str:
    """The summary as aligned text lines."""
    s = summary
    failed = len(s.failed_jobs)
    done = f"{s.jobs_done}/{s.jobs_total}" + (f" ({s.jobs_done - failed} succeeded, {failed} failed)" if failed else "")
    rows = [
        ("scenario", s.scenario),
        ("jobs done", done + ("" if s.all_done else "  (JOBS LEFT UNDONE)")),
        *((f"  failed: {name}", reason) for name, reason in s.failed_jobs.items()),
        ("duration", f"{s.duration:.1f} s"),
        ("peak runners", str(s.peak_runners)),
        ("job wait p50 / p95", f"{s.wait_p50:.2f} s / {s.wait_p95:.2f} s"),
        ("runners created", f"{s.runners_created} ({s.runners_with_job} ran a job)"),
        ("runners beyond demand", str(s.runners_beyond_demand)),
        ("runners replaced by a rollout", str(s.runners_replaced_by_rollout)),
        ("Failed runners seen", _failed_runners(s)),
        ("controller API requests per runner", f"{s.requests_per_runner:.1f} ({s.controller_requests} in all)"),
        ("  by verb, per runner", _per_runner_by_verb(s)),
        ("Actions requests per runner", f"{s.actions_per_runner:.1f} ({s.actions_requests} in all)"),
        ("listener processes started", f"{s.listener_starts} ({s.listener_restarts} restarts)"),
        ("Actions failures answered", _counts(s.actions_faults)),
        *_faults_fired(s),
        *_conditions(s.condition_changes),
    ]
    if len(s.runner_images) > 1:
        images = ", ".join(f"{image} x{n}" for image, n in s.runner_images.items())
        rows.append(("runner pods by image", images))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)


def write_plot(timeline: Timeline, path: Path, *, title: str) -> Path:
    """Write a PNG: runners by phase (stacked) above jobs queued/running/done, events marked.

    Raises:
        OSError: the file cannot be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t for s in timeline.samples]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6.5), constrained_layout=True)
    phases = [p for p in RUNNER_PHASES if any(s.runners.get(p, 0) for s in timeline.samples)]
    if phases:
        top.stackplot(t, *[[s.runners.get(p, 0) for s in timeline.samples] for p in phases], labels=phases, alpha=0.8)
    top.set_ylabel("EphemeralRunners")
    top.set_title(title)
    top.legend(loc="upper right", fontsize="small")
    bottom.plot(t, [s.jobs_queued for s in timeline.samples], label="queued")
    bottom.plot(t, [s.jobs_running for s in timeline.samples], label="running")
    bottom.plot(t, [s.jobs_done for s in timeline.samples], label="done")
    bottom.set_ylabel("jobs")
    bottom.set_xlabel("seconds")
    bottom.legend(loc="upper left", fontsize="small")
    for when, label in timeline.events:
        for ax in (top, bottom):
            ax.axvline(when, color="grey", linestyle="--", linewidth=0.8)
        top.annotate(label, (when, top.get_ylim()[1]), fontsize="x-small", rotation=90, va="top", ha="right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
