"""The scenario file of ``arc-sim``: how jobs arrive, how long they run, what happens on the way.

A scenario is YAML (documented in the README)::

    name: default
    scaleSet: {name: arc-runner-set, minRunners: 0, maxRunners: 10}
    arrivals:
      - {at: 0, count: 12}                # a burst at t=0 s
      - {at: 10, count: 8, every: 1.5}    # a trickle: one job every 1.5 s from t=10 s
    jobDuration: {min: 2, max: 5}         # seconds each job runs (uniform)
    runnerStartup: {min: 0.3, max: 1.0}   # seconds from pod created to runner online
    events:
      - {at: 6, action: rolloutRunnerImage, image: ghcr.io/actions/actions-runner:2.322.0}
      - {at: 6, action: restartController, downFor: 2}
      - {at: 8, action: killListener, sessionExpiresAfter: 5}
      - {at: 9, action: forgetSession}
      - {at: 10, action: refuseRunnerPods, for: 12}
      - {at: 12, action: deleteRunnerPod}
    faults:
      - {at: 3, endpoint: generate_jit_config, status: 503, times: 2, retryAfter: "1"}
      - {at: 4, endpoint: get_message, kind: empty_body, times: 2}
    failedRunnerRecycleAge: 5
    timeout: 180

Times are seconds from the start of the scenario (after the AutoscalingRunnerSet is
created and its listener is up).

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "FAULT_ENDPOINTS",
    "RESTRICTED_LABEL",
    "Arrival",
    "DeleteRunnerPodEvent",
    "Fault",
    "ForgetSessionEvent",
    "KillListenerEvent",
    "PlannedJob",
    "Range",
    "RefuseRunnerPodsEvent",
    "RestartEvent",
    "RolloutEvent",
    "ScaleSetSpec",
    "Scenario",
    "ScenarioError",
    "SimEvent",
    "builtin_scenarios",
    "load_scenario",
    "plan_jobs",
]


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ScenarioError(ValueError):
    """The scenario cannot be read or is invalid; ``str()`` names the file and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Range(_Model):
    """A uniform range of seconds, ``min`` ≤ ``max``."""

    min: float = Field(ge=0)
    max: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self

    def draw(self, rng: random.Random) -> float:
        """One value in ``[min, max]``."""
        return rng.uniform(self.min, self.max)


class ScaleSetSpec(_Model):
    """The AutoscalingRunnerSet the scenario creates."""

    name: str = Field(default="arc-runner-set", pattern=r"^[a-z0-9]([-a-z0-9]{0,43}[a-z0-9])?$")
    namespace: str = "arc-runners"
    controller_namespace: str = Field(default="arc-systems", alias="controllerNamespace")
    min_runners: int = Field(default=0, ge=0, alias="minRunners")
    max_runners: int = Field(default=10, ge=1, alias="maxRunners")
    runner_image: str = Field(default="ghcr.io/actions/actions-runner:2.321.0", alias="runnerImage")
    listener_env: dict[str, str] = Field(default_factory=dict, alias="listenerEnv")
    """Environment added to the listener container through ``listenerTemplate`` (as a chart user would)."""

    @model_validator(mode="after")
    def _bounds(self) -> ScaleSetSpec:
        if self.max_runners < self.min_runners:
            raise ValueError(f"maxRunners ({self.max_runners}) is below minRunners ({self.min_runners})")
        for name in self.listener_env:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"listenerEnv: {name!r} is not an environment variable name")
        return self


MAX_JOBS = 10_000
"""Most jobs one scenario may queue: the simulation runs on one machine, with a real API server."""


class Arrival(_Model):
    """``count`` jobs from ``at`` seconds on: all at once (``every`` 0), or one each ``every`` seconds."""

    at: float = Field(default=0.0, ge=0)
    count: int = Field(ge=1, le=MAX_JOBS)
    every: float = Field(default=0.0, ge=0)


class RolloutEvent(_Model):
    """Change the runner image in the AutoscalingRunnerSet's template (a spec rollout)."""

    at: float = Field(ge=0)
    action: Literal["rolloutRunnerImage"]
    image: str


class RestartEvent(_Model):
    """Stop the controller manager, wait ``downFor`` seconds, start a fresh one."""

    at: float = Field(ge=0)
    action: Literal["restartController"]
    down_for: float = Field(default=1.0, ge=0, alias="downFor")


class KillListenerEvent(_Model):
    """SIGKILL the listener process: its pod fails and the controller must replace it.

    A killed listener cannot delete its message session; the service expires it after
    ``sessionExpiresAfter`` seconds (new listeners get 409 until then, as upstream's do).
    With ``conflictsBeforeExpiry`` the session also lives until its next listener has met
    that many 409s, however long the listener takes to come back (a slow machine).
    """

    at: float = Field(ge=0)
    action: Literal["killListener"]
    session_expires_after: float = Field(default=5.0, ge=0, alias="sessionExpiresAfter")
    conflicts_before_expiry: int = Field(default=0, ge=0, alias="conflictsBeforeExpiry")


class ForgetSessionEvent(_Model):
    """The Actions service forgets the listener's live message session, as after an outage of its own.

    The listener's next poll is refused (401) and its session refresh answers 404, the
    failure of ARC #4356; the listener must open a new session and keep its message cursor.
    """

    at: float = Field(ge=0)
    action: Literal["forgetSession"]


RESTRICTED_LABEL = "pod-security.kubernetes.io/enforce"
"""The namespace label `RefuseRunnerPodsEvent` sets to ``restricted``."""


class RefuseRunnerPodsEvent(_Model):
    """Label the runners' namespace ``pod-security.kubernetes.io/enforce=restricted`` for ``for`` seconds.

    kube-apiserver's PodSecurity admission then refuses every runner pod with 403 (the
    runner template sets no security context), the case of ARC #3014, #3685, #4258: the
    runners go Failed and are recycled (``failedRunnerRecycleAge``). The label is removed
    afterwards and runner pods are admitted again.
    """

    at: float = Field(ge=0)
    action: Literal["refuseRunnerPods"]
    duration: float = Field(default=10.0, gt=0, alias="for")
    """Seconds the namespace refuses runner pods."""


class DeleteRunnerPodEvent(_Model):
    """Delete the pod of a runner in the middle of its job, as a node drain or an eviction would.

    The job fails on the service (as on GitHub); the runner's JIT config is spent, so the
    controller must delete the EphemeralRunner and never relaunch the pod (ARC #4588).
    Waits up to ``within`` seconds for a runner that is running a job.
    """

    at: float = Field(ge=0)
    action: Literal["deleteRunnerPod"]
    within: float = Field(default=60.0, gt=0)
    """Seconds to wait for a runner with a job running; none by then ends the run with an error."""


SimEvent = Annotated[
    RolloutEvent | RestartEvent | KillListenerEvent | ForgetSessionEvent | RefuseRunnerPodsEvent | DeleteRunnerPodEvent,
    Field(discriminator="action"),
]
"""Something the simulator does to the system at a given time."""


FAULT_ENDPOINTS = frozenset(
    {
        "*",
        "access_tokens",
        "registration_token.orgs",
        "registration_token.repos",
        "registration_token.enterprises",
        "runner_registration",
        "get_runner_groups",
        "list_scale_sets",
        "create_scale_set",
        "get_scale_set",
        "update_scale_set",
        "delete_scale_set",
        "generate_jit_config",
        "create_session",
        "refresh_session",
        "delete_session",
        "get_message",
        "delete_message",
        "acquire_jobs",
        "list_runners",
        "get_runner",
        "remove_runner",
    }
)
"""Route names of the fake Actions service a fault can target (``*``: every route)."""


class Fault(_Model):
    """A fault the fake Actions service injects from ``at`` seconds on.

    ``status`` answers ``endpoint`` with that HTTP status; ``latency`` delays it; ``drop``
    closes the connection; ``empty_body`` answers 200 with no body (a message poll's quirk,
    ARC #4285). ``times`` is how many requests are affected (``null``: all).
    """

    at: float = Field(default=0.0, ge=0)
    endpoint: str
    kind: Literal["status", "latency", "drop", "empty_body"] = "status"
    status: int = Field(default=503, ge=400, le=599)
    seconds: float = Field(default=0.5, ge=0)
    times: int | None = Field(default=1, ge=1)
    retry_after: str = Field(default="", alias="retryAfter")

    @model_validator(mode="after")
    def _known_endpoint(self) -> Fault:
        if self.endpoint not in FAULT_ENDPOINTS:
            raise ValueError(f"unknown endpoint {self.endpoint!r}; want one of {', '.join(sorted(FAULT_ENDPOINTS))}")
        return self


class Scenario(_Model):
    """One run of the simulator."""

    name: str
    description: str = ""
    seed: int = 1
    scale_set: ScaleSetSpec = Field(default_factory=ScaleSetSpec, alias="scaleSet")
    arrivals: list[Arrival] = Field(min_length=1)
    job_duration: Range = Field(default_factory=lambda: Range(min=2.0, max=5.0), alias="jobDuration")
    runner_startup: Range = Field(default_factory=lambda: Range(min=0.3, max=1.0), alias="runnerStartup")
    events: list[SimEvent] = Field(default_factory=list)
    faults: list[Fault] = Field(default_factory=list)
    timeout: float = Field(default=300.0, gt=0)
    """Seconds the whole scenario may take before the run is declared failed."""
    failed_runner_recycle_age: float | None = Field(default=None, gt=0, alias="failedRunnerRecycleAge")
    """The controller's ``--failed-runner-recycle-age`` in seconds (``None``: its default, 300 s)."""

    @model_validator(mode="after")
    def _bounded(self) -> Scenario:
        if self.total_jobs > MAX_JOBS:
            raise ValueError(f"the arrivals queue {self.total_jobs} jobs; at most {MAX_JOBS} fit one machine")
        return self

    @property
    def total_jobs(self) -> int:
        """How many jobs the arrivals queue."""
        return sum(a.count for a in self.arrivals)


def _format_error(source: str, err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        where = ".".join(str(x) for x in e["loc"]) or "(top)"
        parts.append(f"{where}: {e['msg']}")
    return f"{source}: invalid scenario: " + "; ".join(parts)


def parse_scenario(text: str, *, source: str = "<scenario>") -> Scenario:
    """A `Scenario` from YAML text.

    Raises:
        ScenarioError: not YAML, not a mapping, or a field is missing or wrong.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ScenarioError(f"{source}: not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping, got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(_format_error(source, err)) from None


def builtin_scenarios() -> dict[str, str]:
    """The scenarios shipped in the package, by name (file stem) → YAML text."""
    folder = resources.files("arc_controllers.cmd").joinpath("scenarios")
    return {
        entry.name.removesuffix(".yaml"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".yaml")
    }


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name (``default``, ``rollout``, ``restart``…) or a YAML file by path.

    Raises:
        ScenarioError: unknown name, unreadable file, or invalid content.
    """
    shipped = builtin_scenarios()
    if name_or_path in shipped:
        return parse_scenario(shipped[name_or_path], source=f"scenario {name_or_path!r}")
    path = Path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        names = ", ".join(sorted(shipped))
        raise ScenarioError(
            f"{name_or_path}: not a shipped scenario ({names}) and not a readable file: {err.strerror}"
        ) from None
    return parse_scenario(text, source=str(path))


@dataclass(frozen=True, slots=True)
class PlannedJob:
    """One job of the plan: when it is queued and how long it runs (seconds)."""

    index: int
    at: float
    duration: float


def plan_jobs(scenario: Scenario) -> list[PlannedJob]:
    """Every job of the scenario in queueing order, durations drawn from its seeded generator."""
    rng = random.Random(scenario.seed)
    times = [a.at + i * a.every for a in scenario.arrivals for i in range(a.count)]
    times.sort()
    return [PlannedJob(index=i, at=t, duration=scenario.job_duration.draw(rng)) for i, t in enumerate(times)]
