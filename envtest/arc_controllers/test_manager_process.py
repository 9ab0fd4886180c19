"""arc-controller as a process on the session's kube-apiserver: probes, metrics, JSON logs, SIGTERM → 0."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from typing import Any

import aiohttp
import pytest

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_manager_serves_probes_and_metrics_and_stops_cleanly(envtest_environment: Any) -> None:
    probe, metrics = _free_port(), _free_port()
    env = {
        **os.environ,
        "KUBECONFIG": str(envtest_environment.kubeconfig_path),
        "CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems",
        "CONTROLLER_MANAGER_CONTAINER_IMAGE": "arc:dev",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "arc_controllers",
        "--auto-scaling-runner-set-only",
        "--log-level=info",
        "--log-format=json",
        f"--metrics-addr=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{probe}",
        "--runner-max-concurrent-reconciles=2",
        "--listener-metrics-addr=0",
        "--listener-metrics-endpoint=",
        "--update-strategy=immediate",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(150):
                try:
                    async with http.get(f"http://127.0.0.1:{probe}/readyz") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)
            else:
                pytest.fail("the probe server never answered")
            async with http.get(f"http://127.0.0.1:{probe}/healthz") as r:
                assert r.status == 200
            for _ in range(50):
                async with http.get(f"http://127.0.0.1:{metrics}/metrics") as r:
                    body = await r.text()
                if "controller_runtime" in body or "workqueue" in body:
                    break
                await asyncio.sleep(0.2)
            assert r.status == 200
            for phase in ("pending", "running", "succeeded", "failed", "outdated"):
                assert f"# TYPE gha_controller_{phase}_ephemeral_runners gauge" in body
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 40)
    assert proc.returncode == 0, err.decode()[-2000:]
    lines = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    assert any(line.get("message") == "starting manager" for line in lines)
    assert all({"ts", "severity", "message"} <= line.keys() for line in lines)
