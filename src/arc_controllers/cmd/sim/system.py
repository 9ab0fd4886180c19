"""The simulated system's moving parts: the controller in-process, the job board, one sample.

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Callable
from typing import Any

import structlog

from arc_controllers.actions.fake import FakeActionsService, FakeJob, FakeRunner
from arc_controllers.cmd.manager import build_manager, setup_all_controllers
from arc_controllers.cmd.options import ManagerOptions, parse_manager_options
from arc_controllers.cmd.sim.report import Sample, Timeline
from arc_controllers.cmd.sim.scenario import Scenario
from arc_controllers.controllers import Controllers
from reconcilekit.client import new_client
from reconcilekit.config import RestConfig
from reconcilekit.manager import run_until_signalled

__all__ = [
    "CONTROLLER_IMAGE",
    "InProcessController",
    "ServiceBoard",
    "conditions_of",
    "manager_args_for",
    "manager_options_for",
    "sample_system",
]

log = structlog.get_logger(__name__)

CONTROLLER_IMAGE = "arc-sim/gha-runner-scale-set-controller:dev"
"""What the simulated controller says its image is (listener pods get it; the kubelet ignores it)."""


class ServiceBoard:
    """The kubelet's `JobBoard` over the fake service, recording job starts and ends on the timeline.

    Python only: glue between the simulated runners and the fake Actions service.
    """

    def __init__(self, fake: FakeActionsService, timeline: Timeline, clock: Callable[[], float]) -> None:
        self._fake = fake
        self._timeline = timeline
        self._clock = clock
        self.durations: dict[int, float] = {}

    def register_runner(self, encoded_jit_config: str) -> FakeRunner:
        """Python only: see `JobBoard.register_runner`."""
        return self._fake.register_runner(encoded_jit_config)

    def take_job(self, runner_id: int) -> FakeJob | None:
        """Python only: see `JobBoard.take_job`; stamps the job's start."""
        job = self._fake.take_job(runner_id)
        if job is not None:
            self._timeline.job_started(job.request_id, self._clock())
        return job

    def job_duration(self, request_id: int) -> float:
        """Python only: the planned duration (1 s for a job the plan does not know)."""
        return self.durations.get(request_id, 1.0)

    def complete_job(self, request_id: int, result: str = "succeeded") -> None:
        """Python only: see `JobBoard.complete_job`; stamps the job's end."""
        job = self._fake.complete_job(request_id, result)
        self._timeline.job_done(request_id, self._clock(), job.result)


class InProcessController:
    """The controller manager in this process; can be stopped and started again (a restart).

    Each start builds a fresh client, manager and controllers, exactly as ``arc-controller``
    does (`build_manager`, `setup_all_controllers`); the clients' request counts add up in
    `request_counts`.

    Python only: ``arc-sim``'s handle on the controller.
    """

    def __init__(self, options: ManagerOptions, rest: RestConfig) -> None:
        self._options = options
        self._rest = dataclasses.replace(
            rest, qps=float(options.k8s_client_rate_limiter_qps), burst=options.k8s_client_rate_limiter_burst
        )
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._controllers: Controllers | None = None
        self._finished: collections.Counter[tuple[str, str]] = collections.Counter()
        self.starts = 0

    async def start(self) -> None:
        """Build and start a manager with the four controllers. Python only."""
        client = new_client(self._rest, register_prometheus=False)
        mgr = build_manager(self._options, self._rest, client=client)
        self._controllers = await setup_all_controllers(mgr, self._options, skip_name_validation=True)
        self._client, self._stop = client, asyncio.Event()
        self._task = asyncio.create_task(run_until_signalled(mgr, self._stop), name=f"manager-{self.starts}")
        self.starts += 1

    def failure(self) -> BaseException | None:
        """The error the running manager stopped with, if it stopped by itself."""
        if self._task is None or not self._task.done() or self._task.cancelled():
            return None
        return self._task.exception()

    def request_counts(self) -> dict[tuple[str, str], int]:
        """Kubernetes API requests of every manager run so far, by (verb, resource)."""
        tally = collections.Counter(self._finished)
        if self._client is not None:
            for key, n in self._client.counts.snapshot().items():
                tally[(key.verb, key.resource)] += n
        return dict(tally)

    async def stop(self) -> None:
        """Stop the running manager (as on SIGTERM) and close its controllers and client. Python only."""
        if self._task is None:
            return
        assert self._stop is not None
        self._stop.set()
        try:
            await self._task
        except Exception as err:
            log.warning("manager stopped with an error", error=repr(err))
        finally:
            for key, n in self._client.counts.snapshot().items():
                self._finished[(key.verb, key.resource)] += n
            if self._controllers is not None:
                await self._controllers.aclose()
            await self._client.close()
            self._task = self._client = self._stop = self._controllers = None


def manager_args_for(scenario: Scenario, log_level: str) -> tuple[list[str], dict[str, str]]:
    """The flags and environment the chart would give the controller, metrics off: (argv, environ).

    Python only: what `manager_options_for` parses, and what an ``arc-controller`` process is given.
    """
    argv = [
        "--auto-scaling-runner-set-only",
        f"--log-level={log_level}",
        "--log-format=text",
        "--metrics-addr=0",
        "--listener-metrics-addr=0",
        "--listener-metrics-endpoint=",
    ]
    if scenario.failed_runner_recycle_age is not None:
        argv.append(f"--failed-runner-recycle-age={scenario.failed_runner_recycle_age:g}s")
    environ = {
        "CONTROLLER_MANAGER_POD_NAMESPACE": scenario.scale_set.controller_namespace,
        "CONTROLLER_MANAGER_CONTAINER_IMAGE": CONTROLLER_IMAGE,
    }
    return argv, environ


def manager_options_for(scenario: Scenario, log_level: str) -> ManagerOptions:
    """The flags and environment the chart would give the controller, metrics off.

    Python only: ``arc-sim`` parses them with the manager's own parser.
    """
    argv, environ = manager_args_for(scenario, log_level)
    return parse_manager_options(argv, environ)


def sample_system(t: float, runners: list[dict[str, Any]], fake: FakeActionsService) -> Sample:
    """EphemeralRunners by phase (no phase yet: ``New``) and the fake service's jobs by state.

    Python only: one point of the timeline.
    """
    phases: dict[str, int] = {}
    for r in runners:
        phase = (r.get("status") or {}).get("phase") or "New"
        phases[phase] = phases.get(phase, 0) + 1
    jobs = list(fake.state.jobs.values())
    return Sample(
        t=t,
        runners=phases,
        jobs_queued=sum(1 for j in jobs if j.state in ("queued", "available", "acquired", "assigned")),
        jobs_running=sum(1 for j in jobs if j.state == "running"),
        jobs_done=sum(1 for j in jobs if j.state == "completed"),
        jobs_failed=sum(1 for j in jobs if j.state == "completed" and j.result != "succeeded"),
    )


def conditions_of(obj: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """The object's ``status.conditions``: (kind, name, type) → ``"<Kind> <type>=<status> <reason>"``.

    Read generically: any object whose status carries ``metav1.Condition`` entries, any
    type and reason. The key says which condition it is; the text is its state, so a change
    of status or reason is a new text under the same key.

    Python only: what the summary reports as the conditions seen.
    """
    kind = str(obj.get("kind") or "object")
    name = str((obj.get("metadata") or {}).get("name") or "")
    found = {}
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type"):
            reason = f" {c['reason']}" if c.get("reason") else ""
            found[(kind, name, str(c["type"]))] = f"{kind} {c['type']}={c.get('status', '?')}{reason}"
    return found
