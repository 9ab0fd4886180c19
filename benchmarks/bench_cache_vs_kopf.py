"""reconcilekit against kopf: 10,000 ConfigMaps (fixture F1), one trivial controller each.

Both run in the same session against one kube-apiserver + etcd (envtest), one after the
other in alternating blocks (reconcilekit, kopf, reconcilekit, kopf, ...), each in its own
subprocess, so memory is the process's own. For each run:

* events/s: objects handled once ÷ (process start → the 10,000th object handled);
* sync events/s: the same, counted from the end of imports;
* peak RSS during the initial sync: VmHWM when the last object was handled;
* RSS at rest: VmRSS after ``BENCH_REST_SECONDS`` (5) of idling after that;
* CPU seconds (utime + stime) until synced.

Both handlers are trivial: reconcilekit's reconciler does one cached get; kopf's is an
``async def`` event handler (kopf's idiomatic form; a plain ``def`` would go through its
thread-pool executor). Ratios are medians of reconcilekit ÷ medians of kopf. Targets (issue 4): events/s ≥ 5×,
peak RSS ≤ 0.5×, RSS at rest ≤ 1.0×.

Environment: ``BENCH_OBJECTS`` (10000), ``BENCH_REPS`` (3 per implementation),
``BENCH_REST_SECONDS`` (5); ``KUBEBUILDER_ASSETS`` as for envtest.

Python only.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OBJECTS = int(os.environ.get("BENCH_OBJECTS", "10000"))
REPS = int(os.environ.get("BENCH_REPS", "3"))
REST_SECONDS = float(os.environ.get("BENCH_REST_SECONDS", "5"))
SYNC_LIMIT = 600.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
REPO_ROOT = str(Path(__file__).resolve().parent.parent)


def f1_configmap(i: int, namespace: str) -> dict[str, Any]:
    """Fixture F1: ~1.5 KB as stored: labels app=bench, one annotation, a 28-line config.yaml."""
    lines = [f"# generated configuration for bench object {i}", f"name: cm-{i:05d}"]
    lines += [f"setting_{n:02d}: value-{(i * 31 + n) % 997:03d}-abcdefgh" for n in range(26)]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:05d}",
            "namespace": namespace,
            "labels": {"app": "bench"},
            "annotations": {"bench.reconcilekit.io/owner": "bench"},
        },
        "data": {"config.yaml": "\n".join(lines) + "\n"},
    }


@dataclass(slots=True)
class Run:
    impl: str
    end_to_end: float
    sync: float
    peak_rss_mib: float
    rest_rss_mib: float
    cpu_s: float

    @property
    def events_per_s(self) -> float:
        return OBJECTS / self.end_to_end

    @property
    def sync_events_per_s(self) -> float:
        return OBJECTS / self.sync


def _status_kib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    return 0.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


async def _one_run(impl: str, args: list[str], env: dict[str, str]) -> Run:
    spawned = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks._cache_vs_kopf_worker",
        impl,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    started = synced = 0.0
    try:
        async with asyncio.timeout(SYNC_LIMIT):
            while not synced:
                line = (await proc.stdout.readline()).decode()
                if not line:
                    raise RuntimeError(f"{impl} worker exited before it synced")
                word, _, value = line.strip().partition(" ")
                if word == "STARTED":
                    started = float(value)
                elif word == "SYNCED":
                    synced = float(value)
        peak = _status_kib(proc.pid, "VmHWM") / 1024
        cpu = _cpu_seconds(proc.pid)
        await asyncio.sleep(REST_SECONDS)
        rest = _status_kib(proc.pid, "VmRSS") / 1024
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                async with asyncio.timeout(10):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
    return Run(impl, synced - spawned, synced - started, peak, rest, cpu)


async def _create_fixture(client: Any, namespace: str) -> None:
    sem = asyncio.Semaphore(32)

    async def create(i: int) -> None:
        async with sem:
            await client.create(f1_configmap(i, namespace))

    await asyncio.gather(*(create(i) for i in range(OBJECTS)))


def _median(runs: list[Run], attr: str) -> float:
    return statistics.median(getattr(r, attr) for r in runs)


async def _main() -> None:
    from reconcilekit.client import new_client
    from reconcilekit.config import RestConfig
    from reconcilekit.envtest import Environment

    async with Environment() as env:
        with tempfile.TemporaryDirectory(prefix="bench-kopf-") as tmp:
            pem = {}
            for name, data in (("ca", env.ca_data), ("cert", env.admin_cert_data), ("key", env.admin_key_data)):
                path = Path(tmp) / f"{name}.pem"
                path.write_bytes(data)
                path.chmod(0o600)
                pem[name] = str(path)
            config = RestConfig(host=env.server, ca_file=pem["ca"], cert_file=pem["cert"], key_file=pem["key"])
            client = new_client(config, register_prometheus=False)
            namespace = await env.create_namespace(prefix="bench-")
            t0 = time.monotonic()
            await _create_fixture(client, namespace)
            await client.close()
            print(f"fixture F1: {OBJECTS} ConfigMaps created in {time.monotonic() - t0:.1f} s", flush=True)
            worker_env = dict(os.environ, KUBECONFIG=str(env.kubeconfig_path))
            worker_env["PYTHONPATH"] = os.pathsep.join([REPO_ROOT, worker_env.get("PYTHONPATH", "")])
            args = {
                "reconcilekit": [namespace, str(OBJECTS), env.server, pem["ca"], pem["cert"], pem["key"]],
                "kopf": [namespace, str(OBJECTS)],
            }
            runs: dict[str, list[Run]] = {"reconcilekit": [], "kopf": []}
            for rep in range(REPS):
                for impl in ("reconcilekit", "kopf") if rep % 2 == 0 else ("kopf", "reconcilekit"):
                    run = await _one_run(impl, args[impl], worker_env)
                    runs[impl].append(run)
                    print(
                        f"  {impl:12s} rep {rep + 1}: end-to-end {run.end_to_end:6.2f} s "
                        f"({run.events_per_s:7.0f} ev/s; sync {run.sync:6.2f} s), "
                        f"peak RSS {run.peak_rss_mib:6.1f} MiB, "
                        f"RSS at rest {run.rest_rss_mib:6.1f} MiB, CPU {run.cpu_s:5.2f} s",
                        flush=True,
                    )
    ours, kopf = runs["reconcilekit"], runs["kopf"]
    rows = [
        ("events/s (end-to-end)", "events_per_s", ">= 5.0", lambda r: r >= 5.0),
        ("events/s (after imports)", "sync_events_per_s", "", None),
        ("peak RSS during initial sync", "peak_rss_mib", "<= 0.5", lambda r: r <= 0.5),
        ("RSS at rest", "rest_rss_mib", "<= 1.0", lambda r: r <= 1.0),
        ("CPU seconds to sync", "cpu_s", "", None),
    ]
    print(f"\nF1, {OBJECTS} ConfigMaps, medians of {REPS} runs each (ratio = reconcilekit / kopf)")
    print(f"{'metric':32s} {'reconcilekit':>13s} {'kopf':>10s} {'ratio':>8s}  target")
    verdicts: list[str] = []
    for label, attr, target, ok in rows:
        a, b = _median(ours, attr), _median(kopf, attr)
        ratio = a / b if b else float("nan")
        verdict = "" if ok is None else ("MET" if ok(ratio) else "MISSED")
        print(f"{label:32s} {a:13.2f} {b:10.2f} {ratio:8.3f}  {target} {verdict}")
        if ok is not None:
            verdicts.append(f"  {verdict:6s} {label}: ratio {ratio:.3f}, target {target}")
    print("\ntargets (issue 4):")
    print("\n".join(verdicts))


def main() -> None:
    """Run the benchmark and print the ratios."""
    asyncio.run(_main())


if __name__ == "__main__":
    main()
