"""``arc-sim``: the whole system on one machine — API server, fake Actions service, controller, kubelet.

``arc-sim [SCENARIO] [--use-existing-cluster] [--out DIR]`` starts the envtest control
plane (or uses ``KUBECONFIG``), installs the CRDs, starts the fake Actions service and the
controller manager in this process, creates the GitHub config secret and an
AutoscalingRunnerSet, and plays the kubelet (`arc_controllers.cmd.sim.kubelet`). Jobs
arrive as the scenario says; a progress line is printed each second; at the end a summary
is printed and a PNG plot written. Exit status: 0 when every job was done, 1 when jobs
were left undone, a scenario fault did not fire (`arc_controllers.cmd.sim.checks`) or the
system could not start, 2 for a bad scenario or flag.

Python only: ARC has no simulator.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import math
import random
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TextIO

import structlog

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.actions.fake import Fault as FakeFault
from arc_controllers.api.v1alpha1 import AUTOSCALING_LISTENER
from arc_controllers.cmd._logging import configure_manager_logging
from arc_controllers.cmd.sim.checks import Armed, Seen, unfired
from arc_controllers.cmd.sim.kubelet import Kubelet
from arc_controllers.cmd.sim.objects import (
    ARS,
    ER,
    SCHEDULER_NAME,
    autoscaling_runner_set,
    crd_folder,
    create_if_absent,
    delete_pod,
    delete_scale_set,
    label_namespace,
    rollout_runner_image,
)
from arc_controllers.cmd.sim.progress import Progress
from arc_controllers.cmd.sim.report import Sample, Summary, Timeline, render_summary, summarize, write_plot
from arc_controllers.cmd.sim.rollouts import RevisionLedger, watch_revisions
from arc_controllers.cmd.sim.scenario import (
    RESTRICTED_LABEL,
    DeleteRunnerPodEvent,
    Fault,
    ForgetSessionEvent,
    KillListenerEvent,
    RefuseRunnerPodsEvent,
    RestartEvent,
    RolloutEvent,
    Scenario,
    ScenarioError,
    builtin_scenarios,
    load_scenario,
    plan_jobs,
)
from arc_controllers.cmd.sim.system import (
    InProcessController,
    ServiceBoard,
    conditions_of,
    manager_options_for,
    sample_system,
)
from reconcilekit.client import new_client
from reconcilekit.client.interfaces import ObjectKey, WithWatch
from reconcilekit.config import RestConfig, load_rest_config
from reconcilekit.errors import is_not_found

__all__ = ["ARS", "SimResult", "SimulationError", "main", "plot_if_possible", "run_simulation"]

log = structlog.get_logger("arc_controllers.cmd.sim.main")

LISTENER_READY_TIMEOUT = 90.0
"""Seconds the AutoscalingRunnerSet has to get a listener with a message session."""

DRAIN_TIMEOUT = 30.0
"""Seconds after the last job for the runners to go back to ``minRunners``."""

_POLL = 0.2
"""Seconds between two looks while an event waits for the state it acts on."""


@dataclasses.dataclass(frozen=True, slots=True)
class SimResult:
    """What a run produced."""

    summary: Summary
    timeline: Timeline
    plot: Path | None
    """The PNG written, or ``None`` when matplotlib (the ``sim`` extra) is not installed."""


def plot_if_possible(timeline: Timeline, path: Path, *, title: str) -> Path | None:
    """Write the run's PNG to ``path``; ``None`` when matplotlib (the ``sim`` extra) is missing.

    Blocking (matplotlib renders in the calling thread): call it through ``asyncio.to_thread``.

    Raises:
        OSError: ``path`` cannot be written.

    Python only: the controller image installs no plotting library, so arc-sim degrades
    to its text and JSON outputs there instead of failing after a finished run.
    """
    try:
        return write_plot(timeline, path, title=title)
    except ModuleNotFoundError as err:
        if err.name is None or not err.name.startswith("matplotlib"):
            raise
        return None


class SimulationError(Exception):
    """The simulated system could not be brought up; ``str()`` is the one line to print."""


# -- the run -----------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _Run:
    scenario: Scenario
    client: WithWatch
    fake: FakeActionsService
    kubelet: Kubelet
    controller: InProcessController
    timeline: Timeline
    progress: Progress
    board: ServiceBoard
    t0: float = 0.0
    runner_names: set[str] = dataclasses.field(default_factory=set)
    runners_now: set[str] = dataclasses.field(default_factory=set)
    """EphemeralRunners of the last sample."""
    failed_runners: dict[str, str] = dataclasses.field(default_factory=dict)
    """EphemeralRunners seen Failed: name → ``status.reason``."""
    deleted_pods: set[str] = dataclasses.field(default_factory=set)
    """Runner pods the scenario deleted mid-job (their jobs' failures are its purpose)."""
    conditions: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    """Condition changes seen on the scale set and its listener: (t, ``"<Kind> <type>=<status> <reason>"``)."""
    condition_states: dict[tuple[str, str, str], str] = dataclasses.field(default_factory=dict)
    """The last state seen of each condition, by (kind, name, type)."""
    refusing: bool = False
    """The runner namespace carries the PodSecurity label of `RefuseRunnerPodsEvent`."""
    conflicts_at_kill: int = 0
    """Session creates answered 409 before the last `KillListenerEvent`."""
    revisions: RevisionLedger = dataclasses.field(default_factory=RevisionLedger)
    """EphemeralRunner and EphemeralRunnerSet writes: which runners a rollout replaced."""
    listeners_killed: int = 0
    """Listener processes killed by `KillListenerEvent`."""
    armed: list[Armed] = dataclasses.field(default_factory=list)
    """The scenario's events and faults as they were applied (`arc_controllers.cmd.sim.checks`)."""

    def clock(self) -> float:
        return time.monotonic() - self.t0

    async def arrivals(self) -> None:
        labels = [self.scenario.scale_set.name]
        for job in plan_jobs(self.scenario):
            delay = job.at - self.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            name = f"job-{job.index}"
            queued = self.fake.queue_job(labels=labels, jobDisplayName=name)
            self.board.durations[queued.request_id] = job.duration
            self.timeline.job_queued(queued.request_id, self.clock(), name)

    async def events(self) -> None:
        """Each event and fault at its time; one that lasts (a window, a wait) does not hold back the others."""
        plan: list[tuple[float, Callable[[], Awaitable[str]]]] = []
        for index, item in enumerate(self.items()):
            (first_at, first), *rest = self._steps(item)
            plan += [(first_at, functools.partial(self._arm, index, first)), *rest]
        await asyncio.gather(*(self._at(at, step) for at, step in plan))

    def items(self) -> list[Any]:
        """The scenario's events then its faults (`Armed.index` counts in this list)."""
        return [*self.scenario.events, *self.scenario.faults]

    async def _arm(self, index: int, step: Callable[[], Awaitable[str]]) -> str:
        """Record the item's arming with the service's answers so far, then take its first step."""
        armed = Armed(index=index, at=self.clock(), answers_before=dict(self.fake.faults.answers))
        self.armed.append(armed)
        item = self.items()[index]
        if isinstance(item, Fault):
            label, armed.fault = self._inject(item)
            return label
        return await step()

    async def _at(self, at: float, step: Callable[[], Awaitable[str]]) -> None:
        delay = at - self.clock()
        if delay > 0:
            await asyncio.sleep(delay)
        began = self.clock()
        label = await step()
        self.timeline.events.append((began, label))
        self.progress.note(f"t={self.clock():5.0f}s  >> {label}")

    def _steps(self, item: Any) -> list[tuple[float, Callable[[], Awaitable[str]]]]:
        """What the scenario item does, as (time, step) pairs."""
        if isinstance(item, KillListenerEvent):
            orphaned: list[int] = []
            return [
                (item.at, lambda: self._kill_listeners(orphaned)),
                (item.at + item.session_expires_after, lambda: self._expire_sessions(orphaned, item)),
            ]
        if isinstance(item, RefuseRunnerPodsEvent):
            return [(item.at, lambda: self._refuse_runner_pods(True)), (item.at + item.duration, self._admit)]
        return [(item.at, lambda: self._apply(item))]

    async def _kill_listeners(self, orphaned: list[int]) -> str:
        self.conflicts_at_kill = self._conflicts()
        orphaned.extend(self.fake.state.sessions)
        n = await self.kubelet.kill_listeners()
        self.listeners_killed += n
        return f"killed {n} listener process(es) with a live session"

    def _conflicts(self) -> int:
        """Session creates the fake has answered 409 so far."""
        return self.fake.faults.answers[("create_session", 409)]

    async def _expire_sessions(self, orphaned: list[int], kill: KillListenerEvent) -> str:
        wanted = self.conflicts_at_kill + kill.conflicts_before_expiry
        await self._wait_for(
            f"{kill.conflicts_before_expiry} session conflicts of the next listener",
            LISTENER_READY_TIMEOUT,
            lambda: self._conflicts() >= wanted,
        )
        met = self._conflicts() - self.conflicts_at_kill
        expired = sum(self.fake.expire_session(scale_set_id) for scale_set_id in orphaned)
        return f"the service dropped {expired} orphaned session(s); the next listener met {met} conflict(s)"

    async def _refuse_runner_pods(self, refuse: bool) -> str:
        ns = self.scenario.scale_set.namespace
        await label_namespace(self.client, ns, RESTRICTED_LABEL, "restricted" if refuse else None)
        self.refusing = refuse
        if refuse:
            return f"namespace {ns}: {RESTRICTED_LABEL}=restricted (runner pods refused at admission)"
        return f"namespace {ns}: PodSecurity label removed (runner pods admitted)"

    async def _admit(self) -> str:
        return await self._refuse_runner_pods(False)

    async def _wait_for(self, what: str, within: float, found: Callable[[], Any]) -> Any:
        """``found()`` once it is truthy, looked at every `_POLL` seconds for ``within`` seconds."""
        deadline = time.monotonic() + within
        while not (value := found()):
            if time.monotonic() > deadline:
                raise SimulationError(f"no {what} within {within:g} s")
            await asyncio.sleep(_POLL)
        return value

    async def _apply(self, item: Any) -> str:
        if isinstance(item, RolloutEvent):
            await rollout_runner_image(self.client, self.scenario, item.image)
            return f"runner image -> {item.image}"
        if isinstance(item, RestartEvent):
            self.progress.note(f"t={self.clock():5.0f}s  >> stopping the controller for {item.down_for:g} s")
            await self.controller.stop()
            await asyncio.sleep(item.down_for)
            await self.controller.start()
            return f"controller restarted ({item.down_for:g} s down)"
        if isinstance(item, ForgetSessionEvent):
            sessions = await self._wait_for(
                "live message session", LISTENER_READY_TIMEOUT, lambda: self.fake.state.sessions
            )
            for scale_set_id in list(sessions):
                self.fake.expire_session(scale_set_id)
            return "the service forgot the live session (next poll 401, refresh 404)"
        if isinstance(item, DeleteRunnerPodEvent):
            busy = await self._wait_for("runner with a job running", item.within, self.kubelet.busy_runner_pods)
            name = min(busy)
            namespace, request_id = busy[name]
            self.deleted_pods.add(name)
            await delete_pod(self.client, namespace, name)
            return f"runner pod {name} deleted mid-job (request {request_id})"
        label, _ = self._inject(item)
        return label

    def _inject(self, item: Fault) -> tuple[str, FakeFault]:
        """Arm ``item`` on the fake service: (the timeline's label, the fake's record of it)."""
        if item.kind == "latency":
            armed = self.fake.inject_latency(item.endpoint, item.seconds, times=item.times)
            return f"fault: {item.endpoint} +{item.seconds:g} s", armed
        if item.kind == "drop":
            armed = self.fake.inject_drop(item.endpoint, times=item.times)
            return f"fault: {item.endpoint} dropped", armed
        if item.kind == "empty_body":
            armed = self.fake.inject_empty_body(item.endpoint, times=item.times)
            return f"fault: {item.endpoint} -> 200 with an empty body", armed
        armed = self.fake.inject_status(item.endpoint, item.status, times=item.times, retry_after=item.retry_after)
        return f"fault: {item.endpoint} -> {item.status}", armed

    async def take_sample(self) -> Sample:
        listed = await self.client.list(ER, namespace=self.scenario.scale_set.namespace)
        self.runners_now = {r["metadata"]["name"] for r in listed.items}
        self.runner_names.update(self.runners_now)
        for r in listed.items:
            status = r.get("status") or {}
            if status.get("phase") == "Failed":
                self.failed_runners.setdefault(r["metadata"]["name"], str(status.get("reason") or "no reason"))
        await self._look_at_conditions()
        sample = sample_system(self.clock(), listed.items, self.fake)
        self.timeline.samples.append(sample)
        self.progress.show(sample)
        return sample

    async def _look_at_conditions(self) -> None:
        """Record the conditions of the AutoscalingRunnerSet and its AutoscalingListener, if they carry any."""
        ss = self.scenario.scale_set
        objs: list[dict[str, Any]] = []
        try:
            objs.append(await self.client.get(ARS, ObjectKey(ss.namespace, ss.name)))
        except Exception as err:
            if not is_not_found(err):
                raise
        listeners = await self.client.list(AUTOSCALING_LISTENER, namespace=ss.controller_namespace)
        objs += [
            item for item in listeners.items if (item.get("spec") or {}).get("autoscalingRunnerSetName") == ss.name
        ]
        for obj in objs:
            for key, state in conditions_of(obj).items():
                if self.condition_states.get(key) != state:
                    self.condition_states[key] = state
                    self.conditions.append((self.clock(), state))

    def all_jobs_finished(self) -> bool:
        planned = self.scenario.total_jobs
        jobs = self.timeline.jobs
        return len(jobs) == planned and all(j.done is not None for j in jobs.values())


async def _wait_for_listener(fake: FakeActionsService, controller: InProcessController, within: float) -> None:
    deadline = time.monotonic() + within
    while not fake.state.sessions:
        failure = controller.failure()
        if failure is not None:
            raise SimulationError(f"the controller manager stopped: {failure!r}")
        if time.monotonic() > deadline:
            raise SimulationError(
                f"no listener opened a message session within {within:.0f} s "
                "(see controller.log and listeners/*.log in the output folder)"
            )
        await asyncio.sleep(0.2)


async def run_simulation(
    scenario: Scenario,
    *,
    out_dir: Path,
    use_existing_cluster: bool = False,
    stream: TextIO | None = None,
    log_level: str = "info",
    environment: Any | None = None,
    controller_config: Callable[[WithWatch, RestConfig], Awaitable[RestConfig]] | None = None,
) -> SimResult:
    """Run ``scenario`` end to end; write ``summary.json``, ``controller.log`` and the plot in ``out_dir``.

    Raises:
        SimulationError: the control plane, the controller or the listener did not come up.
        OSError: the output folder cannot be written.

    Args:
        scenario: what to run.
        out_dir: where ``controller.log``, ``work/listeners/*.log``, ``summary.json`` and the plot go.
        use_existing_cluster: use ``KUBECONFIG``'s cluster instead of starting envtest.
        stream: the progress output (stdout when ``None``).
        log_level: the controller's log level (its log goes to ``controller.log``).
        environment: an already started ``reconcilekit.envtest.Environment`` to use (tests); it
            gets the CRDs and is left running.
        controller_config: called with the admin client and REST config once the namespaces
            exist; returns the REST config the controller manager runs with (tests: a
            ServiceAccount holding only the Helm charts' RBAC). ``None``: the admin config.
    """
    out = stream if stream is not None else sys.stdout
    workdir = out_dir / "work"
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    crds = await asyncio.to_thread(crd_folder, workdir)
    timeline = Timeline()
    progress = Progress(out, jobs_total=scenario.total_jobs)
    started = time.monotonic()
    controller_log = await asyncio.to_thread(open, out_dir / "controller.log", "w", encoding="utf-8")
    logging_before = structlog.get_config()
    with controller_log:
        configure_manager_logging(log_level, "text", stream=controller_log)
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(lambda: structlog.configure(**logging_before))
            env = await _control_plane(stack, environment, crds, use_existing_cluster, progress)
            rest = await load_rest_config(env.kubeconfig_path)
            client = new_client(rest, field_owner="arc-sim", register_prometheus=False)
            stack.push_async_callback(client.close)
            fake = FakeActionsService(poll_hold=3.0)
            await fake.start()
            stack.push_async_callback(fake.stop)
            secret = await _seed_namespaces(client, scenario, fake)
            board = ServiceBoard(fake, timeline, lambda: time.monotonic() - run.t0)
            kubelet = await _start_kubelet(
                stack, client, scenario, board, kubeconfig=env.kubeconfig_path, workdir=workdir
            )
            controller_rest = rest if controller_config is None else await controller_config(client, rest)
            controller = InProcessController(manager_options_for(scenario, log_level), controller_rest)
            await controller.start()
            stack.push_async_callback(controller.stop)  # stopped before the kubelet and the fake
            run = _Run(scenario, client, fake, kubelet, controller, timeline, progress, board)
            revisions = asyncio.create_task(
                watch_revisions(client, scenario.scale_set.namespace, run.revisions), name="sim-revisions"
            )
            stack.push_async_callback(_cancel, revisions)
            await _create_scale_set(
                stack,
                run,
                secret,
                shared=environment is not None or use_existing_cluster,
                existing=use_existing_cluster,
            )
            await _wait_until_up(run, controller, started)
            await _drive(run)
            progress.finish()
            requests_by_kind = {f"{verb} {resource}": n for (verb, resource), n in controller.request_counts().items()}
            # before the teardown stops the runner pods (a job cut short there is not the run's)
            summary = _summary_of(run, run.clock(), requests_by_kind)
    await asyncio.to_thread(_write_summary, out_dir / "summary.json", summary)
    await asyncio.to_thread(_write_revisions, out_dir / "revisions.json", run.revisions)
    plot = await asyncio.to_thread(
        plot_if_possible, timeline, out_dir / f"{scenario.name}.png", title=f"arc-sim: {scenario.name}"
    )
    return SimResult(summary=summary, timeline=timeline, plot=plot)


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _start_kubelet(
    stack: contextlib.AsyncExitStack,
    client: WithWatch,
    scenario: Scenario,
    board: ServiceBoard,
    *,
    kubeconfig: Path,
    workdir: Path,
) -> Kubelet:
    """The simulated kubelet over the scale set's namespaces, started (and stopped by ``stack``)."""
    ss = scenario.scale_set
    rng = random.Random(scenario.seed + 1)
    kubelet = Kubelet(
        client,
        namespaces=tuple(dict.fromkeys((ss.controller_namespace, ss.namespace))),
        board=board,
        kubeconfig=kubeconfig,
        workdir=workdir,
        startup=lambda: scenario.runner_startup.draw(rng),
    )
    await kubelet.start()
    stack.push_async_callback(kubelet.stop)
    return kubelet


def _summary_of(run: _Run, duration: float, requests_by_kind: dict[str, int]) -> Summary:
    """The run's figures: jobs, runners, waits and requests (``duration`` in seconds from the first job).

    A failed job gets its reason: its runner pod deleted mid-job, by the scenario (expected)
    or not. A Failed runner that held no job and is gone by the end was recycled.
    """
    counters = run.kubelet.counters
    for request_id, job in run.timeline.jobs.items():
        if job.done is None or job.result == "succeeded":
            continue
        pod = counters.jobs_cut.get(request_id)
        if pod is None:
            job.reason = f"{job.result} (no runner pod deletion seen)"
        elif pod in run.deleted_pods:
            job.reason, job.expected = f"runner pod {pod} deleted mid-job by the scenario (ARC #4588)", True
        else:
            job.reason = f"runner pod {pod} deleted mid-job, not by the scenario"
    failed_by_reason: dict[str, int] = {}
    for reason in run.failed_runners.values():
        failed_by_reason[reason] = failed_by_reason.get(reason, 0) + 1
    recycled = [
        name for name in run.failed_runners if name not in run.runners_now and name not in counters.runners_with_job
    ]
    replaced = run.revisions.replaced_by_rollout(counters.runners_with_job)
    faults = {f"{endpoint} {status}": n for (endpoint, status), n in run.fake.faults.answers.items() if status >= 400}
    for fault in run.fake.faults.faults:
        if fault.kind == "empty_body" and fault.fired:
            key = f"{fault.endpoint} 200 empty"
            faults[key] = faults.get(key, 0) + fault.fired
    return summarize(
        run.timeline,
        scenario=run.scenario.name,
        jobs_total=run.scenario.total_jobs,
        duration=duration,
        runners_created=max(len(run.runner_names), len(counters.runner_pods)),
        runners_with_job=len(counters.runners_with_job),
        idle_allowance=run.scenario.scale_set.min_runners,
        controller_requests=sum(requests_by_kind.values()),
        actions_requests=sum(run.fake.faults.requests.values()),
        listener_starts=counters.listener_starts,
        runner_images=counters.runner_images,
        controller_requests_by_kind=requests_by_kind,
        failed_runners=failed_by_reason,
        failed_runners_recycled=len(recycled),
        runners_replaced_by_rollout=len(replaced),
        condition_changes=run.conditions,
        actions_faults=faults,
        faults_not_fired=unfired(
            run.items(),
            run.armed,
            Seen(
                answers=dict(run.fake.faults.answers),
                failed_runner_reasons=set(run.failed_runners.values()),
                jobs_cut_by_scenario=sum(1 for pod in counters.jobs_cut.values() if pod in run.deleted_pods),
                listeners_killed=run.listeners_killed,
            ),
        ),
        faults_armed=len(run.items()),
    )


async def _create_scale_set(
    stack: contextlib.AsyncExitStack, run: _Run, secret: str, *, shared: bool, existing: bool
) -> None:
    """Create the scenario's AutoscalingRunnerSet; on a ``shared`` cluster ``stack`` deletes it at the end."""
    scheduler = SCHEDULER_NAME if existing else ""
    ars = autoscaling_runner_set(run.scenario, run.fake.config_url(), secret, scheduler_name=scheduler)
    await create_if_absent(run.client, ars)
    if shared:  # leave a shared cluster as found: ARC's own deletion path removes everything
        stack.push_async_callback(delete_scale_set, run.client, run.scenario, run.progress)


async def _wait_until_up(run: _Run, controller: InProcessController, started: float) -> None:
    """Wait for the listener's message session, then start the run's clock (``started``: monotonic s)."""
    ss = run.scenario.scale_set
    run.progress.note(
        f"arc-sim: scenario {run.scenario.name!r}: {run.scenario.total_jobs} jobs, "
        f"runners {ss.min_runners}..{ss.max_runners}; waiting for the listener"
    )
    await _wait_for_listener(run.fake, controller, LISTENER_READY_TIMEOUT)
    run.t0 = time.monotonic()
    run.progress.note(f"arc-sim: system up after {run.t0 - started:.1f} s (listener session open); jobs start arriving")


async def _control_plane(
    stack: contextlib.AsyncExitStack,
    environment: Any | None,
    crds: Path,
    use_existing_cluster: bool,
    progress: Progress,
) -> Any:
    """The control plane with the CRDs: ``environment`` when given, else one started and stopped by ``stack``."""
    from reconcilekit.envtest import Environment

    if environment is not None:
        await environment.install_crds([crds])
        return environment
    env = Environment(crd_paths=[crds], use_existing_cluster=use_existing_cluster)
    where = " (existing cluster)" if use_existing_cluster else ""
    progress.note(f"arc-sim: starting the control plane{where}")
    try:
        await env.start()
    except Exception as err:
        raise SimulationError(f"the control plane did not start: {err}") from err
    stack.push_async_callback(env.stop)
    return env


async def _seed_namespaces(client: WithWatch, scenario: Scenario, fake: FakeActionsService) -> str:
    """Create the scale set's namespaces and its GitHub config secret (the fake's token); the secret's name."""
    ss = scenario.scale_set
    for ns in dict.fromkeys((ss.controller_namespace, ss.namespace)):
        await create_if_absent(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    secret = f"{ss.name}-gha-rs-github-secret"
    await create_if_absent(
        client,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": ss.namespace},
            "stringData": {"github_token": fake.pat.token},
        },
    )
    return secret


def _write_summary(path: Path, summary: Any) -> None:
    """``summary.json``: the summary's fields and its per-runner ratios (NaN written as null)."""
    body = {
        **dataclasses.asdict(summary),
        "requests_per_runner": summary.requests_per_runner,
        "actions_per_runner": summary.actions_per_runner,
    }
    text = json.dumps(body, indent=2, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v)
    path.write_text(text + "\n", "utf-8")


def _write_revisions(path: Path, ledger: RevisionLedger) -> None:
    """``revisions.json``: the set's revisions and each runner's stamp by resourceVersion (the rollout accounting)."""
    path.write_text(json.dumps(dataclasses.asdict(ledger), indent=1) + "\n", "utf-8")


async def _drive(run: _Run) -> None:
    """Queue jobs, apply events, sample each second; return when the jobs are done and runners drained."""
    scenario = run.scenario
    background = [
        asyncio.create_task(run.arrivals(), name="sim-arrivals"),
        asyncio.create_task(run.events(), name="sim-events"),
    ]
    try:
        drained_since: float | None = None
        while True:
            tick = time.monotonic()
            sample = await run.take_sample()
            for task in background:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise SimulationError(f"{task.get_name()} failed: {task.exception()!r}")
            failure = run.controller.failure()
            if failure is not None:
                raise SimulationError(f"the controller manager stopped: {failure!r}")
            if run.all_jobs_finished():
                drained_since = drained_since if drained_since is not None else run.clock()
                if sample.runners_total <= scenario.scale_set.min_runners:
                    return
                if run.clock() - drained_since > DRAIN_TIMEOUT:
                    run.progress.note("arc-sim: runners did not drain back to minRunners in time")
                    return
            if run.clock() > scenario.timeout:
                run.progress.note(f"arc-sim: scenario timed out after {scenario.timeout:g} s")
                return
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    finally:
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        if run.refusing:  # the run ended inside a refusal window: leave the namespace admitting pods
            with contextlib.suppress(Exception):
                await run._admit()


# -- the command -------------------------------------------------------------------------------


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="arc-sim",
        description="Run ARC's scale-set controllers against a local API server, a fake Actions service "
        "and simulated runners, as a scenario says.",
    )
    parser.add_argument("scenario", nargs="?", default="default", help="shipped scenario name or YAML path")
    parser.add_argument("--out", type=Path, default=Path("arc-sim-out"), help="folder for logs, summary and plot")
    parser.add_argument(
        "--use-existing-cluster", action="store_true", help="use the cluster of KUBECONFIG instead of envtest"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warn", "error"])
    parser.add_argument("--list", action="store_true", help="list the shipped scenarios and exit")
    return parser.parse_args(argv)


async def _until_terminated(run: Coroutine[Any, Any, SimResult]) -> SimResult:
    """Run ``run``; SIGTERM cancels it like Ctrl-C does, so the control plane and listeners are stopped.

    Python only: part of the ``arc-sim`` command.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await run
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``arc-sim``; returns the exit status.

    Python only: see the module docstring.
    """
    args = _parse_args(argv)
    if args.list:
        for name in sorted(builtin_scenarios()):
            print(name)
        return 0
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as err:
        print(f"arc-sim: {err}", file=sys.stderr)
        return 2
    try:
        result = asyncio.run(
            _until_terminated(
                run_simulation(
                    scenario, out_dir=args.out, use_existing_cluster=args.use_existing_cluster, log_level=args.log_level
                )
            )
        )
    except SimulationError as err:
        print(f"arc-sim: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"arc-sim: cannot write the output: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("arc-sim: interrupted; everything it started is stopped", file=sys.stderr)
        return 130
    print("arc-sim: summary")
    print(render_summary(result.summary))
    if result.plot is None:
        print("arc-sim: plot skipped: matplotlib is not installed (pip install 'reconcilekit-arc[sim]')")
    else:
        print(f"arc-sim: plot {result.plot}")
    if not result.summary.all_done:
        print("arc-sim: jobs were left undone", file=sys.stderr)
        return 1
    if not result.summary.passed:
        print("arc-sim: jobs failed that the scenario did not make fail", file=sys.stderr)
        return 1
    if result.summary.faults_not_fired:
        print(f"arc-sim: scenario faults did not fire: {'; '.join(result.summary.faults_not_fired)}", file=sys.stderr)
        return 1
    return 0
