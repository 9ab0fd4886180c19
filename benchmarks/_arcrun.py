"""One benchmark run of the whole system through arc-sim's machinery, for one or more scale sets.

The pieces are arc-sim's: a `Scenario` per scale set (its burst of jobs), the fake
Actions service, the simulated kubelet that runs every listener as an ``arc-listener``
process and every runner pod as a task, the AutoscalingRunnerSet as the chart renders it.
Beyond arc-sim, for measuring: the controller runs as an ``arc-controller`` process
(`ControllerProcess`) so its CPU and memory are its own, `ProcessSampler` reads the
controller's and the listeners' ``/proc`` every 0.25 s, the API server writes an audit log
(requests by user, verb and resource), and watches timestamp every runner pod's creation
and every EphemeralRunner's deletion (the drain) to the event, not to arc-sim's 1 s sample.

Python only: a benchmark helper.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import math
import os
import random
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks import _audit

ROOT = Path(__file__).resolve().parents[1]
CONTROLLER_NAMESPACE = "arc-systems"
SCALE_SET_LABEL = "actions.github.com/scale-set-name"
MIB = 1024 * 1024

CHART_FLAGS = ("--runner-max-concurrent-reconciles=2",)
"""What the chart (gha-runner-scale-set-controller 0.14.2) passes beyond arc-sim's flags that sets
a worker count: 2 EphemeralRunner workers (the manager's own default is 4; the other three
controllers keep their default of 2). Issue 20's anchor figures were taken with these."""


def chart_manager_args(scenario: Any, log_level: str) -> tuple[list[str], dict[str, str]]:
    """arc-sim's manager flags and environment plus `CHART_FLAGS`."""
    from arc_controllers.cmd.sim.system import manager_args_for

    argv, environ = manager_args_for(scenario, log_level)
    return [*argv, *CHART_FLAGS], environ


@dataclasses.dataclass(frozen=True, slots=True)
class ScaleSetPlan:
    """One scale set of a run: its name, namespace, burst of ``jobs`` at ``burst_at`` s, ``max_runners``."""

    name: str
    namespace: str
    jobs: int
    max_runners: int
    burst_at: float = 0.0

    @property
    def demand(self) -> int:
        """Runner pods the burst needs at once."""
        return min(self.jobs, self.max_runners)


@dataclasses.dataclass(slots=True)
class ScaleSetRecord:
    """What was observed of one scale set (seconds from the run's start)."""

    plan: ScaleSetPlan
    pods_seen: dict[str, float] = dataclasses.field(default_factory=dict)
    runners_created: dict[str, float] = dataclasses.field(default_factory=dict)
    runners_gone: dict[str, float] = dataclasses.field(default_factory=dict)
    job_ids: set[int] = dataclasses.field(default_factory=set)

    @property
    def live_runners(self) -> int:
        """EphemeralRunners created and not yet deleted."""
        return len(self.runners_created.keys() - self.runners_gone.keys())


@dataclasses.dataclass(slots=True)
class RunResult:
    """Everything a run measured; the figures are computed by `benchmarks._figures`."""

    records: list[ScaleSetRecord]
    jobs: dict[int, Any]
    """arc-sim's `JobTimes` by request id."""
    runners_with_job: set[str]
    requests: list[_audit.Request]
    actions_requests: dict[str, int]
    controller_cpu: float
    controller_peak_rss: int
    listener_processes: int
    listener_peak_rss: int
    listener_peak_total_rss: int
    listener_cpu: float
    listener_rss_by_scale_set: dict[str, int]
    duration: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    timed_out: bool


def _plan_of(records: Mapping[str, ScaleSetRecord], obj: Mapping[str, Any]) -> ScaleSetRecord | None:
    meta = obj.get("metadata") or {}
    label = str((meta.get("labels") or {}).get(SCALE_SET_LABEL, ""))
    if label in records:
        return records[label]
    name = str(meta.get("name", ""))
    return next((r for key, r in records.items() if name.startswith(key + "-")), None)


class _Observer:
    """Watches runner pods and EphemeralRunners in the runner namespaces; stamps creations and deletions."""

    def __init__(self, client: Any, records: dict[str, ScaleSetRecord], clock: Any) -> None:
        self._client = client
        self._records = records
        self._clock = clock
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        from arc_controllers.cmd.sim.kubelet import POD
        from arc_controllers.cmd.sim.objects import ER

        for ns in sorted({r.plan.namespace for r in self._records.values()}):
            self._tasks.append(asyncio.create_task(self._watch(ER, ns, self._runner), name=f"observe-er-{ns}"))
            self._tasks.append(asyncio.create_task(self._watch(POD, ns, self._pod), name=f"observe-pod-{ns}"))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _runner(self, kind: str, obj: Mapping[str, Any]) -> None:
        rec = _plan_of(self._records, obj)
        if rec is None:
            return
        name = str(obj["metadata"]["name"])
        rec.runners_created.setdefault(name, self._clock())
        if kind == "DELETED":
            rec.runners_gone.setdefault(name, self._clock())

    def _pod(self, kind: str, obj: Mapping[str, Any]) -> None:
        from arc_controllers.cmd.sim.kubelet import classify_pod

        if kind == "DELETED" or classify_pod(obj) != "runner":
            return
        rec = _plan_of(self._records, obj)
        if rec is not None:
            rec.pods_seen.setdefault(str(obj["metadata"]["name"]), self._clock())

    async def _watch(self, gvk: Any, namespace: str, handle: Any) -> None:
        while True:
            try:
                listed = await self._client.list(gvk, namespace=namespace)
                present = {str(o["metadata"]["name"]) for o in listed.items}
                for obj in listed.items:
                    handle("ADDED", obj)
                if handle == self._runner:  # deletions missed while the watch was down
                    for rec in self._records.values():
                        if rec.plan.namespace == namespace:
                            for name in rec.runners_created.keys() - rec.runners_gone.keys() - present:
                                rec.runners_gone[name] = self._clock()
                stream = self._client.watch(
                    gvk, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=300
                )
                async with contextlib.aclosing(stream):
                    async for event in stream:
                        handle(str(event.type), event.object)
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(0.5)


async def admin_client(stack: contextlib.AsyncExitStack, env: Any, namespaces: tuple[str, ...]) -> Any:
    """The benchmark's own client (admin, no client-side limit, `_audit.SIM_USER_AGENT`), closed by
    ``stack``; ``namespaces`` are created with it."""
    from arc_controllers.cmd.sim.objects import create_if_absent
    from reconcilekit.client import new_client
    from reconcilekit.config import load_rest_config

    rest = await load_rest_config(env.kubeconfig_path)
    own = dataclasses.replace(rest, user_agent=_audit.SIM_USER_AGENT, qps=-1.0)
    client = new_client(own, register_prometheus=False)
    stack.push_async_callback(client.close)
    for ns in namespaces:
        await create_if_absent(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return client


def quiet_logging() -> None:
    """Keep the benchmark process's own structlog output (envtest, kubelet, fake service) to warnings."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def _progress(msg: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def run(
    plans: list[ScaleSetPlan],
    *,
    job_seconds: float,
    latency: float,
    out_dir: Path,
    log_level: str = "info",
    time_limit: float | None = None,
) -> RunResult:
    """Bring the system up, queue every plan's burst, wait for jobs done and runners gone; measure."""
    from arc_controllers.actions.fake import FakeActionsService
    from arc_controllers.cmd.sim.kubelet import Kubelet
    from arc_controllers.cmd.sim.objects import autoscaling_runner_set, create_if_absent
    from arc_controllers.cmd.sim.processes import ControllerProcess, ProcessSampler
    from arc_controllers.cmd.sim.report import Timeline
    from arc_controllers.cmd.sim.scenario import Arrival, Range, ScaleSetSpec, Scenario, plan_jobs
    from arc_controllers.cmd.sim.system import ServiceBoard
    from reconcilekit.envtest import Environment

    quiet_logging()
    workdir = out_dir / "work"
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    scenarios = {
        p.name: Scenario(
            name=p.name,
            scale_set=ScaleSetSpec(
                name=p.name, namespace=p.namespace, controller_namespace=CONTROLLER_NAMESPACE, max_runners=p.max_runners
            ),
            arrivals=[Arrival(at=p.burst_at, count=p.jobs)],
            job_duration=Range(min=job_seconds, max=job_seconds),
        )
        for p in plans
    }
    records = {p.name: ScaleSetRecord(p) for p in plans}
    limit = time_limit if time_limit is not None else max(p.burst_at for p in plans) + job_seconds + 400.0
    audit = _audit.AuditLog(workdir / "audit" / "audit.log")
    env = Environment(crd_paths=[ROOT / "config" / "crd"], apiserver_args=_audit.apiserver_args(audit.path.parent))
    load_before = os.getloadavg()
    t0 = time.monotonic()

    def clock() -> float:
        return time.monotonic() - t0

    async with contextlib.AsyncExitStack() as stack:
        _progress("starting the control plane")
        await env.start()
        stack.push_async_callback(env.stop)
        namespaces = tuple(dict.fromkeys([CONTROLLER_NAMESPACE, *(p.namespace for p in plans)]))
        client = await admin_client(stack, env, namespaces)
        fake = FakeActionsService(poll_hold=3.0)
        await fake.start()
        stack.push_async_callback(fake.stop)
        timeline = Timeline()
        board = ServiceBoard(fake, timeline, clock)
        rng = random.Random(2)
        kubelet = Kubelet(
            client,
            namespaces=namespaces,
            board=board,
            kubeconfig=env.kubeconfig_path,
            workdir=workdir,
            startup=lambda: Range(min=0.3, max=1.0).draw(rng),
        )
        await kubelet.start()
        stack.push_async_callback(kubelet.stop)
        argv, environ = chart_manager_args(next(iter(scenarios.values())), log_level)
        controller = ControllerProcess(
            argv, environ, kubeconfig=env.kubeconfig_path, log_path=out_dir / "controller.log"
        )
        await controller.start()
        stack.push_async_callback(controller.stop)  # stopped first: before the kubelet and the fake
        listener_pods: dict[int, str] = {}

        def pids() -> dict[str, list[int]]:
            current = kubelet.listener_pids()
            for pod, pid in current.items():
                listener_pods[pid] = pod
            return {"controller": [controller.pid] if controller.pid else [], "listener": list(current.values())}

        sampler = ProcessSampler(pids)
        sampler.start()
        stack.push_async_callback(sampler.stop)
        for p in plans:
            secret = f"{p.name}-gha-rs-github-secret"
            await create_if_absent(
                client,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret, "namespace": p.namespace},
                    "stringData": {"github_token": fake.pat.token},
                },
            )
            await create_if_absent(client, autoscaling_runner_set(scenarios[p.name], fake.config_url(), secret))
        _progress(f"{len(plans)} scale set(s) created; waiting for their listeners")
        deadline = time.monotonic() + 120.0 + 10.0 * len(plans)
        while len(fake.state.sessions) < len(plans):
            if controller.failure() is not None:
                raise RuntimeError(str(controller.failure()))
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(fake.state.sessions)} of {len(plans)} listeners opened a session")
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)  # the listeners' first idle patch
        if latency > 0:
            fake.inject_latency("*", latency, times=None)
        observer = _Observer(client, records, clock)
        observer.start()
        stack.push_async_callback(observer.stop)
        audit.mark()
        sampler.mark()
        actions_before = collections.Counter(fake.faults.requests)
        t0 = time.monotonic()
        _progress(f"listeners up; bursts start (Actions latency {latency * 1000:.0f} ms)")

        async def arrivals() -> None:
            planned = sorted(
                ((job.at, p.name, job) for p in plans for job in plan_jobs(scenarios[p.name])), key=lambda x: x[0]
            )
            for at, name, job in planned:
                delay = at - clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                queued = fake.queue_job(labels=[name], jobDisplayName=f"{name}-job-{job.index}")
                board.durations[queued.request_id] = job.duration
                timeline.job_queued(queued.request_id, clock())
                records[name].job_ids.add(queued.request_id)

        feeder = asyncio.create_task(arrivals(), name="bench-arrivals")
        total_jobs = sum(p.jobs for p in plans)
        timed_out = False
        last_note = 0.0
        try:
            while True:
                if controller.failure() is not None:
                    raise RuntimeError(str(controller.failure()))
                done = sum(1 for j in timeline.jobs.values() if j.done is not None)
                live = sum(r.live_runners for r in records.values())
                if done == total_jobs and live == 0:
                    break
                if clock() > limit:
                    timed_out = True
                    _progress(f"timed out after {limit:.0f} s")
                    break
                if clock() - last_note >= 10.0:
                    last_note = clock()
                    pods = sum(len(r.pods_seen) for r in records.values())
                    _progress(f"t={clock():5.0f}s runner pods {pods}, live runners {live}, jobs {done}/{total_jobs}")
                await asyncio.sleep(0.1)
        finally:
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await feeder
        duration = clock()
        await asyncio.sleep(1.0)  # the last requests reach the audit log
        await sampler.stop()
        requests = audit.read()
        actions = collections.Counter(fake.faults.requests)
        actions.subtract(actions_before)
        load_after = os.getloadavg()
        ctl = sampler.roles.get("controller")
        lis = sampler.roles.get("listener")
        by_scale_set: dict[str, int] = {}
        if lis is not None:
            for pid, peak in lis.peak_rss_bytes.items():
                rec = next((r for key, r in records.items() if listener_pods.get(pid, "").startswith(key + "-")), None)
                if rec is not None:
                    by_scale_set[rec.plan.name] = max(by_scale_set.get(rec.plan.name, 0), peak)
        result = RunResult(
            records=list(records.values()),
            jobs=dict(timeline.jobs),
            runners_with_job=set(kubelet.counters.runners_with_job),
            requests=requests,
            actions_requests={k: v for k, v in actions.items() if v},
            controller_cpu=ctl.cpu_since_mark if ctl else math.nan,
            controller_peak_rss=ctl.peak_rss if ctl else 0,
            listener_processes=lis.processes if lis else 0,
            listener_peak_rss=lis.peak_rss if lis else 0,
            listener_peak_total_rss=lis.peak_total_rss_bytes if lis else 0,
            listener_cpu=lis.cpu_since_mark if lis else math.nan,
            listener_rss_by_scale_set=by_scale_set,
            duration=duration,
            load_before=load_before,
            load_after=load_after,
            timed_out=timed_out,
        )
        _progress("measured; stopping the system")
    return result
