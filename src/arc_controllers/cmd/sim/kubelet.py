"""The simulated kubelet: runs the pods the controllers create, and reports their status.

Listener pods (controlled by an AutoscalingListener) run as real ``arc-listener``
processes, with the pod's own config secret written to a file and the pod's environment.
Like a kubelet, it gives each listener the identity of its pod's ServiceAccount (a
TokenRequest token in the process's ``KUBECONFIG``, `podidentity`), never its own: the
listener holds only the Role and RoleBinding the AutoscalingListener controller made.
Runner pods (controlled by an EphemeralRunner) run as asyncio tasks: `SimulatedRunner`
registers with the pod's JIT config at the fake Actions service, takes a job, runs it for
its planned duration and exits 0. Every status change goes through ``pods/status``:
Pending → Running → Succeeded (or Failed).

Pods are never bound to a node, so the API server deletes them at once; a deleted pod's
process or task is stopped.

Python only: stands in for the kubelet and the runner binary.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import random
import shutil
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import structlog

from arc_controllers.api.v1alpha1 import POD, SECRET
from arc_controllers.cmd.sim.podidentity import ServiceAccountMissingError, pod_kubeconfig
from arc_controllers.cmd.sim.processes import base_environ, terminate
from arc_controllers.constants import (
    ENV_ACTIONS_RUNNER_INPUT_JITCONFIG,
    ENV_LISTENER_CONFIG_PATH,
    LISTENER_CONFIG_SECRET_KEY,
)
from reconcilekit.client.interfaces import ObjectKey, WithWatch
from reconcilekit.client.patch import raw_patch
from reconcilekit.errors import is_not_found

__all__ = ["POD", "SECRET", "JobBoard", "Kubelet", "PodKind", "SimulatedRunner", "classify_pod"]

log = structlog.get_logger(__name__)


PodKind = Literal["listener", "runner", "other"]
"""What a pod is to the simulator."""

_POLL = 0.2
"""Seconds an idle runner waits between two asks for a job."""

_TOKEN_RETRY = 2.0
"""Seconds between two attempts to mint a listener pod's ServiceAccount token."""


def _die_with_parent() -> list[str]:
    """``setpriv --pdeathsig TERM --`` on Linux when setpriv exists, else nothing.

    A listener runs in its own session (so a terminal's Ctrl-C reaches only arc-sim,
    which stops it cleanly); without a parent-death signal a SIGKILLed arc-sim would
    leave it polling the fake service forever. The control plane's processes get the
    same treatment from reconcilekit's envtest.

    Python only: process hygiene of the simulator.
    """
    if not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


class JobBoard(Protocol):
    """**Protocol:** what a simulated runner needs from the fake Actions service and the recorder."""

    def register_runner(self, encoded_jit_config: str) -> Any:
        """Bring the runner of this JIT config online; returns an object with ``id`` and ``name``."""
        ...

    def take_job(self, runner_id: int) -> Any:
        """The next job assigned to the runner's scale set (with ``request_id``), or None."""
        ...

    def job_duration(self, request_id: int) -> float:
        """Seconds the job runs."""
        ...

    def complete_job(self, request_id: int, result: str = "succeeded") -> None:
        """Report the job's end: ``succeeded``, or ``failed`` when its runner died under it."""
        ...


def classify_pod(pod: Mapping[str, Any]) -> PodKind:
    """``listener`` for a pod an AutoscalingListener controls, ``runner`` for an EphemeralRunner's."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and str(ref.get("apiVersion", "")).startswith("actions.github.com/"):
            if ref.get("kind") == "AutoscalingListener":
                return "listener"
            if ref.get("kind") == "EphemeralRunner":
                return "runner"
    return "other"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _container_name(pod: Mapping[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str(containers[0].get("name") or "main")


def pending_status(pod: Mapping[str, Any]) -> dict[str, Any]:
    """Scheduled, container being created."""
    now = _now()
    return {
        "phase": "Pending",
        "startTime": now,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "lastTransitionTime": now, "reason": "ContainersNotReady"},
        ],
        "containerStatuses": [
            {
                "name": c.get("name", ""),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
            for c in (pod.get("spec") or {}).get("containers") or []
        ],
    }


def waiting_status(pod: Mapping[str, Any], reason: str, message: str) -> dict[str, Any]:
    """Pending: the containers cannot be created, for ``reason`` (e.g. ``CreateContainerConfigError``)."""
    status = pending_status(pod)
    for container in status["containerStatuses"]:
        container["state"] = {"waiting": {"reason": reason, "message": message}}
    return status


def running_status(pod: Mapping[str, Any]) -> dict[str, Any]:
    """Every container running and ready."""
    now = _now()
    return {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "True", "lastTransitionTime": now},
        ],
        "containerStatuses": [
            {
                "name": c.get("name", ""),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": now}},
            }
            for c in (pod.get("spec") or {}).get("containers") or []
        ],
    }


def terminated_status(pod: Mapping[str, Any], exit_code: int) -> dict[str, Any]:
    """Every container terminated with ``exit_code``; Succeeded on 0, else Failed."""
    now = _now()
    reason = "Completed" if exit_code == 0 else "Error"
    return {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "lastTransitionTime": now, "reason": "PodCompleted"},
        ],
        "containerStatuses": [
            {
                "name": c.get("name", ""),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": now}},
            }
            for c in (pod.get("spec") or {}).get("containers") or []
        ],
    }


@dataclass(slots=True)
class _PodWork:
    kind: PodKind
    task: asyncio.Task[None]


@dataclass(slots=True)
class KubeletCounters:
    """What the kubelet has seen: runner pods started, listener processes started, by name."""

    runner_pods: set[str] = field(default_factory=set)
    listener_starts: int = 0
    live_runner_pods: int = 0
    runners_with_job: set[str] = field(default_factory=set)
    runner_images: dict[str, int] = field(default_factory=dict)
    """Runner pods started, by the image of their first container (shows a rollout)."""
    jobs_cut: dict[int, str] = field(default_factory=dict)
    """Jobs whose runner pod went away while they ran (the job failed), by request id: the pod's name."""


class Kubelet:
    """Watches pods in ``namespaces`` and runs them until they end or are deleted.

    Args:
        client: a client with watch, used for pod status and secret reads.
        namespaces: where to watch pods (the controller's and the runners').
        board: the fake service side of simulated runners.
        kubeconfig: the kubeconfig whose cluster (server URL, CA) listener processes reach; its
            user is replaced by a token of the listener pod's ServiceAccount.
        workdir: folder for listener config files and logs.
        startup: seconds from pod seen to container running (drawn per pod).
        listener_command: argv of the listener process (default: ``arc-listener``).

    Python only: see the module docstring.
    """

    def __init__(
        self,
        client: WithWatch,
        *,
        namespaces: tuple[str, ...],
        board: JobBoard,
        kubeconfig: Path,
        workdir: Path,
        startup: Callable[[], float] | None = None,
        listener_command: list[str] | None = None,
    ) -> None:
        self._client = client
        self._namespaces = namespaces
        self._board = board
        self._kubeconfig = kubeconfig
        self._workdir = workdir
        self._startup: Callable[[], float] = startup or (lambda: random.uniform(0.3, 1.0))
        self._listener_command = listener_command or listener_argv()
        self._pods: dict[str, _PodWork] = {}
        self._handled: set[str] = set()
        self._watchers: list[asyncio.Task[None]] = []
        self._listeners: dict[str, asyncio.subprocess.Process] = {}
        self._busy: dict[str, tuple[str, int]] = {}
        self.counters = KubeletCounters()
        """Pods and processes seen so far."""

    # -- lifetime ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Start one pod watch per namespace."""
        for ns in self._namespaces:
            self._watchers.append(asyncio.create_task(self._watch(ns), name=f"kubelet-watch-{ns}"))

    async def stop(self) -> None:
        """Stop the watches, every runner task and every listener process (SIGTERM, then SIGKILL)."""
        for t in self._watchers:
            t.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        self._watchers.clear()
        work = list(self._pods.values())
        for w in work:
            w.task.cancel()
        await asyncio.gather(*(w.task for w in work), return_exceptions=True)
        self._pods.clear()

    async def kill_listeners(self) -> int:
        """SIGKILL every listener process (a crash); returns how many were killed."""
        killed = 0
        for proc in list(self._listeners.values()):
            if proc.returncode is None:
                proc.kill()
                killed += 1
        return killed

    def busy_runner_pods(self) -> dict[str, tuple[str, int]]:
        """Runner pods in the middle of a job: pod name → (namespace, the job's request id)."""
        return dict(self._busy)

    def listener_pids(self) -> dict[str, int]:
        """The running listener processes' ids, by pod name (for RSS and CPU sampling)."""
        return {name: proc.pid for name, proc in self._listeners.items() if proc.returncode is None}

    # -- the watch ----------------------------------------------------------------------------

    async def _watch(self, namespace: str) -> None:
        while True:
            try:
                listed = await self._client.list(POD, namespace=namespace)
                for pod in listed.items:
                    self._observe("ADDED", pod)
                stream = self._client.watch(
                    POD, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=300
                )
                async with contextlib.aclosing(stream):  # type: ignore[type-var]
                    async for event in stream:
                        self._observe(str(event.type), event.object)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a broken watch: list again
                log.debug("pod watch ended, relisting", namespace=namespace, error=repr(err))
                await asyncio.sleep(0.5)

    def _observe(self, event_type: str, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if not uid:
            return
        if event_type == "DELETED" or meta.get("deletionTimestamp"):
            work = self._pods.pop(uid, None)
            if work is not None:
                work.task.cancel()
            return
        if uid in self._handled:
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            self._handled.add(uid)
            return
        kind = classify_pod(pod)
        if kind == "other":
            return
        self._handled.add(uid)
        run = self._run_listener if kind == "listener" else self._run_runner
        task = asyncio.create_task(run(dict(pod)), name=f"kubelet-{kind}-{meta.get('name')}")
        self._pods[uid] = _PodWork(kind, task)
        task.add_done_callback(functools.partial(self._done, uid))

    def _done(self, uid: str, task: asyncio.Task[None]) -> None:
        work = self._pods.get(uid)
        if work is not None and work.task is task:
            del self._pods[uid]
        if not task.cancelled() and task.exception() is not None:
            log.warning("pod simulation failed", task=task.get_name(), error=repr(task.exception()))

    # -- status -------------------------------------------------------------------------------

    async def _set_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> bool:
        """Write ``status`` through pods/status; False when the pod is gone."""
        body = json.dumps({"status": status})
        try:
            await self._client.status().patch(dict(pod), raw_patch("application/merge-patch+json", body))
        except Exception as err:
            if is_not_found(err):
                return False
            raise
        return True

    async def _secret_value(self, namespace: str, name: str, key: str) -> str:
        secret = await self._client.get(SECRET, ObjectKey(namespace, name))
        data = secret.get("data") or {}
        if key not in data:
            raise KeyError(f"secret {namespace}/{name} has no key {key!r}")
        return base64.b64decode(data[key]).decode()

    async def _env_value(self, namespace: str, item: Mapping[str, Any]) -> str | None:
        if "value" in item:
            return str(item["value"])
        ref = (item.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            try:
                return await self._secret_value(namespace, str(ref["name"]), str(ref["key"]))
            except Exception:
                if ref.get("optional"):
                    return None
                raise
        return None

    # -- runner pods ------------------------------------------------------------------------

    async def _run_runner(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        namespace = pod["metadata"]["namespace"]
        self.counters.runner_pods.add(name)
        image = str(((pod.get("spec") or {}).get("containers") or [{}])[0].get("image", ""))
        self.counters.runner_images[image] = self.counters.runner_images.get(image, 0) + 1
        self.counters.live_runner_pods += 1
        try:
            if not await self._set_status(pod, pending_status(pod)):
                return
            await asyncio.sleep(self._startup())
            jit_config = await self._jit_config(pod)
            if not jit_config:
                log.warning("runner pod has no JIT config", pod=name)
                await self._set_status(pod, terminated_status(pod, 1))
                return
            runner = SimulatedRunner(
                name=name, jit_config=jit_config, board=self._board, on_job=functools.partial(self._job_taken, pod)
            )
            try:
                exit_code = await runner.run(online=functools.partial(self._set_status, pod, running_status(pod)))
            except asyncio.CancelledError:  # the pod was deleted (or the kubelet stopped)
                if name in self._busy:
                    self.counters.jobs_cut[self._busy[name][1]] = name
                raise
            self._busy.pop(name, None)
            await self._set_status(pod, terminated_status(pod, exit_code))
        finally:
            self._busy.pop(name, None)
            self.counters.live_runner_pods -= 1
            log.debug("runner pod ended", pod=f"{namespace}/{name}")

    def _job_taken(self, pod: Mapping[str, Any], request_id: int) -> None:
        """The runner of ``pod`` took the job ``request_id``."""
        name = pod["metadata"]["name"]
        self.counters.runners_with_job.add(name)
        self._busy[name] = (pod["metadata"]["namespace"], request_id)

    async def _jit_config(self, pod: Mapping[str, Any]) -> str | None:
        """The runner container's ``ACTIONS_RUNNER_INPUT_JITCONFIG``, resolved from its secret."""
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        for item in container.get("env") or []:
            if item.get("name") == ENV_ACTIONS_RUNNER_INPUT_JITCONFIG:
                return await self._env_value(pod["metadata"]["namespace"], item)
        return None

    # -- listener pods ----------------------------------------------------------------------

    async def _run_listener(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        if not await self._set_status(pod, pending_status(pod)):
            return
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        env: dict[str, str] = {}
        for item in container.get("env") or []:
            value = await self._env_value(namespace, item)
            if value is not None:
                env[str(item["name"])] = value
        kubeconfig = await self._service_account_kubeconfig(pod)
        if kubeconfig is None:
            return
        secret_name = _config_secret_name(pod, env.get(ENV_LISTENER_CONFIG_PATH, ""))
        config = await self._secret_value(namespace, secret_name, LISTENER_CONFIG_SECRET_KEY)
        config_path = self._workdir / "listeners" / name / "config.json"
        await asyncio.to_thread(_write_private, config_path, config)
        child_env = {
            **base_environ(),
            **env,
            ENV_LISTENER_CONFIG_PATH: str(config_path),
            "KUBECONFIG": str(kubeconfig),
            "HOSTNAME": name,
        }
        log_path = self._workdir / "listeners" / f"{name}.log"
        self.counters.listener_starts += 1
        logfile = await asyncio.to_thread(open, log_path, "ab")
        try:
            proc = await asyncio.create_subprocess_exec(
                *_die_with_parent(),
                *self._listener_command,
                env=child_env,
                stdout=logfile,
                stderr=logfile,
                start_new_session=True,
            )
        finally:
            logfile.close()  # the child holds its own descriptor
        self._listeners[name] = proc
        try:
            await asyncio.sleep(min(self._startup(), 0.5))
            if proc.returncode is None:
                await self._set_status(pod, running_status(pod))
            code = await proc.wait()
            log.info("listener process exited", pod=name, exit_code=code)
            await self._set_status(pod, terminated_status(pod, code if code >= 0 else 128 - code))
        except asyncio.CancelledError:
            await terminate(proc)
            raise
        finally:
            self._listeners.pop(name, None)

    async def _service_account_kubeconfig(self, pod: dict[str, Any]) -> Path | None:
        """The listener's kubeconfig as its pod's ServiceAccount; None when the pod is gone.

        While the ServiceAccount is missing the pod stays Pending, its container waiting
        with reason ``CreateContainerConfigError`` and the cause, and the kubelet tries again
        (every ``_TOKEN_RETRY`` seconds) until the account appears or the pod is deleted.
        """
        name = pod["metadata"]["name"]
        dest = self._workdir / "listeners" / name / "kubeconfig"
        while True:
            try:
                return await pod_kubeconfig(self._client, pod, base=self._kubeconfig, dest=dest)
            except ServiceAccountMissingError as err:
                log.warning("listener pod cannot start", pod=name, reason="CreateContainerConfigError", error=str(err))
                if not await self._set_status(pod, waiting_status(pod, "CreateContainerConfigError", str(err))):
                    return None
            await asyncio.sleep(_TOKEN_RETRY)


class SimulatedRunner:
    """One runner pod's process: register with the JIT config, take one job, run it, exit.

    Python only: stands in for the Actions runner binary (``run.sh`` with a JIT config).
    """

    def __init__(
        self, *, name: str, jit_config: str, board: JobBoard, on_job: Callable[[int], None] | None = None
    ) -> None:
        self.name = name
        self._jit_config = jit_config
        self._board = board
        self._on_job = on_job
        self.took_job = False
        """Whether this runner took a job (it may have been cut short)."""

    async def run(self, *, online: Callable[[], Awaitable[bool]]) -> int:
        """Register, report ``online()`` (False: the pod is gone, stop), run one job; return the exit code.

        0 after a job or when the registration was removed while idle; 1 when the JIT config is refused.
        """
        try:
            runner = self._board.register_runner(self._jit_config)
        except Exception as err:
            log.warning("runner registration refused", pod=self.name, error=str(err))
            return 1
        if not await online():
            return 0
        while True:
            try:
                job = self._board.take_job(int(runner.id))
            except Exception as err:  # the registration was removed: the runner exits
                log.info("runner registration gone, exiting", pod=self.name, error=str(err))
                return 0
            if job is not None:
                break
            await asyncio.sleep(_POLL)
        self.took_job = True
        if self._on_job is not None:
            self._on_job(int(job.request_id))
        try:
            await asyncio.sleep(self._board.job_duration(int(job.request_id)))
        except asyncio.CancelledError:  # the pod went away mid-job: the service fails the job
            self._board.complete_job(int(job.request_id), "failed")
            raise
        self._board.complete_job(int(job.request_id))
        return 0


def _config_secret_name(pod: Mapping[str, Any], config_path: str) -> str:
    """The secret mounted where the listener config lives; ``<pod>-config`` otherwise."""
    spec = pod.get("spec") or {}
    folder = os.path.dirname(config_path) if config_path else ""
    mounts = ((spec.get("containers") or [{}])[0]).get("volumeMounts") or []
    wanted = next((m.get("name") for m in mounts if folder and m.get("mountPath", "").rstrip("/") == folder), None)
    for volume in spec.get("volumes") or []:
        secret = volume.get("secret")
        if secret and (wanted is None or volume.get("name") == wanted):
            return str(secret.get("secretName"))
    return f"{pod['metadata']['name']}-config"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only (a config with credentials)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def listener_argv() -> list[str]:
    """``arc-listener`` next to this interpreter, else ``python -m arc_controllers.listener``."""
    script = Path(sys.executable).parent / "arc-listener"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "arc_controllers.listener"]
