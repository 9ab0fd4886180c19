"""The controller's memory and CPU with 5,000 EphemeralRunners and 5,000 runner pods cached (issue 20, figure 2).

Creates 5,000 EphemeralRunners and their 5,000 runner pods (concurrent creates with the
admin client) before ``arc-controller`` starts. The runners name a GitHub config secret
that does not exist, so each one reconciles and backs off. Then the controller runs as a
process with the chart's flags for the window (300 s by default): prints its RSS at the
end of the window and its peak, its CPU seconds and its Kubernetes requests in the window
(from the API server's audit log), with the targets of the issue as MET or MISSED.

Run: ``KUBEBUILDER_ASSETS=... python -m benchmarks bench_rss_at_rest``. Knobs (environment):
``BENCH_RUNNERS`` (5000), ``BENCH_REST_SECONDS`` (300), ``BENCH_OUT`` (output folder),
``BENCH_CONTROLLER_PROFILE`` (a file: run the controller under cProfile and write its profile
there; the CPU figure then includes the profiler's overhead and is not comparable),
``BENCH_CONTROLLER_PROFILE_CLOCK`` (``wall``, the default, or ``cpu``: time the profile by the
process's CPU time, `benchmarks._cpu_profile`, so that time spent preempted is not charged).

Python only: a benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _arcrun, _audit, _figures
from benchmarks._figures import Target

NAMESPACE = "arc-runners"
SCALE_SET = "rest-set"
CREATE_CONCURRENCY = 48


def _runner_container(env: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "runner",
        "image": "ghcr.io/actions/actions-runner:2.321.0",
        "command": ["/home/runner/run.sh"],
        "env": env,
    }


def ephemeral_runner(index: int) -> dict[str, Any]:
    """An EphemeralRunner as the EphemeralRunnerSet creates it, naming a config secret that does not exist."""
    from arc_controllers.constants import EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME, EPHEMERAL_RUNNER_FINALIZER_NAME

    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": f"{SCALE_SET}-runner-{index:05d}",
            "namespace": NAMESPACE,
            "labels": {
                "actions.github.com/scale-set-name": SCALE_SET,
                "actions.github.com/scale-set-namespace": NAMESPACE,
                "app.kubernetes.io/component": "runner",
                "app.kubernetes.io/part-of": "gha-runner-scale-set",
                "app.kubernetes.io/version": "0.14.2",
            },
            "annotations": {"actions.github.com/patch-id": "1", "actions.github.com/runner-spec-hash": "abc123"},
            "finalizers": [EPHEMERAL_RUNNER_FINALIZER_NAME, EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME],
        },
        "spec": {
            "githubConfigUrl": "https://github.com/bench-org",
            "githubConfigSecret": "no-such-config-secret",
            "runnerScaleSetId": 1,
            "spec": {
                "restartPolicy": "Never",
                "containers": [_runner_container([{"name": "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS", "value": "120"}])],
            },
        },
    }


def runner_pod(er: dict[str, Any]) -> dict[str, Any]:
    """The runner pod of ``er`` (created by ``er``'s controller reference), never scheduled."""
    meta = er["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta["name"],
            "namespace": NAMESPACE,
            "labels": {**meta["labels"], "actions-ephemeral-runner": "True"},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunner",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                _runner_container(
                    [
                        {
                            "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
                            "valueFrom": {"secretKeyRef": {"name": meta["name"], "key": "jitToken"}},
                        },
                        {"name": "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", "value": "actions-runner-controller/0.14.2"},
                    ]
                )
            ],
        },
    }


async def _create_all(client: Any, n: int) -> float:
    sem = asyncio.Semaphore(CREATE_CONCURRENCY)
    started = time.monotonic()

    async def one(i: int) -> None:
        async with sem:
            created = await client.create(ephemeral_runner(i))
            await client.create(runner_pod(created))

    await asyncio.gather(*(one(i) for i in range(n)))
    return time.monotonic() - started


@dataclasses.dataclass(slots=True)
class RestResult:
    """What the window measured."""

    runners: int
    create_seconds: float
    window: float
    rss_end: int
    peak_rss: int
    cpu: float
    requests: list[_audit.Request]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def _profile_command(out: str, argv: list[str]) -> list[str]:
    """The controller's command under cProfile, writing to ``out``, timed as ``BENCH_CONTROLLER_PROFILE_CLOCK`` says."""
    clock = os.environ.get("BENCH_CONTROLLER_PROFILE_CLOCK", "wall")
    if clock == "wall":
        return [sys.executable, "-m", "cProfile", "-o", out, *argv]
    if clock != "cpu":
        raise ValueError(f"BENCH_CONTROLLER_PROFILE_CLOCK must be wall or cpu, not {clock!r}")
    if argv[0] == sys.executable:  # no arc-controller script: profile the ``-c`` program through a file
        raise ValueError("BENCH_CONTROLLER_PROFILE_CLOCK=cpu needs the arc-controller script next to the interpreter")
    return [sys.executable, str(Path(__file__).with_name("_cpu_profile.py")), out, *argv]


async def _measure(n: int, window: float, out_dir: Path) -> RestResult:
    from arc_controllers.cmd.sim.processes import ControllerProcess, ProcessSampler, controller_argv, read_process
    from arc_controllers.cmd.sim.scenario import Arrival, Scenario
    from reconcilekit.envtest import Environment

    _arcrun.quiet_logging()
    audit = _audit.AuditLog(out_dir / "audit" / "audit.log")
    args = await asyncio.to_thread(_audit.apiserver_args, audit.path.parent)
    env = Environment(crd_paths=[_arcrun.ROOT / "config" / "crd"], apiserver_args=args)
    async with contextlib.AsyncExitStack() as stack:
        await env.start()
        stack.push_async_callback(env.stop)
        client = await _arcrun.admin_client(stack, env, (_arcrun.CONTROLLER_NAMESPACE, NAMESPACE))
        print(f"  creating {n} EphemeralRunners and {n} runner pods ({CREATE_CONCURRENCY} at a time)", flush=True)
        create_seconds = await _create_all(client, n)
        print(f"  created in {create_seconds:.1f} s; {_figures.load_line()}", flush=True)
        scenario = Scenario(name="rest", arrivals=[Arrival(count=1)])
        argv, environ = _arcrun.chart_manager_args(scenario, "info")
        log_path = out_dir / "controller.log"
        profile = os.environ.get("BENCH_CONTROLLER_PROFILE")
        command = _profile_command(profile, controller_argv()) if profile else None
        controller = ControllerProcess(
            argv, environ, kubeconfig=env.kubeconfig_path, log_path=log_path, command=command
        )
        sampler = ProcessSampler(lambda: {"controller": [controller.pid] if controller.pid else []})
        sampler.mark()  # CPU from the process's start
        audit.mark()
        load_before = os.getloadavg()
        await controller.start()
        stack.push_async_callback(controller.stop)
        sampler.start()
        started = time.monotonic()
        next_note = 60.0
        while (elapsed := time.monotonic() - started) < window:
            if controller.failure() is not None:
                raise RuntimeError(str(controller.failure()))
            if elapsed >= next_note:
                pid = controller.pid
                reading = read_process(pid) if pid else None
                if reading is not None:
                    print(f"  t={elapsed:4.0f}s RSS {_figures.mib(reading.rss_bytes):.1f} MiB, "
                          f"CPU {reading.cpu_seconds:.1f} s", flush=True)  # fmt: skip
                next_note += 60.0
            await asyncio.sleep(0.5)
        await sampler.stop()
        figures = sampler.roles["controller"]
        rss_end = sum(figures.rss_bytes.values())
        requests = [r for r in audit.read() if r.role == "controller"]
        return RestResult(
            runners=n,
            create_seconds=create_seconds,
            window=time.monotonic() - started,
            rss_end=rss_end,
            peak_rss=figures.peak_rss,
            cpu=figures.cpu_since_mark,
            requests=requests,
            load_before=load_before,
            load_after=os.getloadavg(),
        )


def main() -> None:
    """Create the runners, run the controller for the window, print its memory, CPU and requests."""
    n = int(os.environ.get("BENCH_RUNNERS", 5000))
    window = float(os.environ.get("BENCH_REST_SECONDS", 300))
    out_dir = Path(os.environ.get("BENCH_OUT") or tempfile.mkdtemp(prefix="bench-rss-at-rest-"))
    print(f"{n} EphemeralRunners + {n} runner pods before arc-controller starts; window {window:g} s; "
          f"{_figures.load_line()}")  # fmt: skip
    print(f"  chart flags beyond arc-sim's: {' '.join(_arcrun.CHART_FLAGS)}")
    print(f"  ({_figures.GO_ANCHORS_NOTE})")
    r = asyncio.run(_measure(n, window, out_dir))
    print(f"  load before {_figures.fmt_load(r.load_before)}; after {_figures.fmt_load(r.load_after)}")
    print(f"  RSS at {r.window:.0f} s              {_figures.mib(r.rss_end):.1f} MiB")
    print(f"  peak RSS                  {_figures.mib(r.peak_rss):.1f} MiB")
    print(f"  CPU in the window         {r.cpu:.2f} s")
    non_watch = [q for q in r.requests if q.verb != "watch"]
    print(f"  K8s requests in the window: {len(non_watch)} (+{len(r.requests) - len(non_watch)} watches)")
    for kind, count in _audit.tally(r.requests).items():
        print(f"    {count:6d}  {kind}")
    codes: dict[int, int] = {}
    for q in non_watch:
        codes[q.code] = codes.get(q.code, 0) + 1
    print("    by status code: " + ", ".join(f"{c}: {k}" for c, k in sorted(codes.items())))
    scale = 300.0 / r.window if r.window else float("nan")
    _figures.print_targets(
        [
            Target(f"RSS at rest with {n} runners", _figures.mib(r.rss_end), 144.0, " MiB",
                   f"Go {_figures.GO_RSS_5000_MIB:g} MiB, ours before 163 MiB"),
            Target("CPU per 5 minutes <= Go's", r.cpu * scale, _figures.GO_CPU_5000_S, " s",
                   "Go 15.0 and 12.4 s, ours before 22.0 and 24.7 s"),
        ]
    )  # fmt: skip
    print(f"  output (controller.log, audit log): {out_dir}")


if __name__ == "__main__":
    main()
