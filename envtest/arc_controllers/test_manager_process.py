"""arc-controller as a process on the session's kube-apiserver: probes, metrics, JSON logs, SIGTERM → 0.

The process runs as the controller chart's ServiceAccount (its ``KUBECONFIG`` holds a
TokenRequest token; only the chart's rules, `chart_rbac`) unless ``ARC_ENVTEST_CHART_RBAC=0``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from reconcilekit.client import RestClient

from .chart_rbac import (
    CONTROLLER_SERVICE_ACCOUNT,
    chart_rbac_enabled,
    install_controller_chart_rbac,
    service_account_kubeconfig,
    uninstall_chart_rbac,
)

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_manager_serves_probes_and_metrics_and_stops_cleanly(
    envtest_environment: Any, arc_crds: None, client: RestClient, tmp_path: Path
) -> None:
    probe, metrics = _free_port(), _free_port()
    restricted = chart_rbac_enabled()
    controller_namespace = "arc-systems"
    kubeconfig = envtest_environment.kubeconfig_path
    if restricted:
        controller_namespace = await envtest_environment.create_namespace(prefix="arc-system-")
        await install_controller_chart_rbac(client, controller_namespace=controller_namespace)
        kubeconfig = await service_account_kubeconfig(
            client,
            kubeconfig,
            tmp_path / "controller.kubeconfig",
            namespace=controller_namespace,
            name=CONTROLLER_SERVICE_ACCOUNT,
        )
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "CONTROLLER_MANAGER_POD_NAMESPACE": controller_namespace,
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
        if restricted:
            await uninstall_chart_rbac(client, controller_namespace=controller_namespace)
            await envtest_environment.delete_namespace(controller_namespace)
    assert proc.returncode == 0, err.decode()[-2000:]
    lines = [json.loads(line) for line in err.decode().splitlines() if line.startswith("{")]
    assert any(line.get("message") == "starting manager" for line in lines)
    assert all({"ts", "severity", "message"} <= line.keys() for line in lines)
    # every informer synced under the chart's rules, and nothing in the controller's own namespace
    # was refused. (Its cache is cluster-wide: other tests' leftover runners, in namespaces with
    # no scale-set chart, get 403s on their secrets, as in a real cluster; those are loud errors.)
    own_namespace = f'in the namespace "{controller_namespace}"'
    refused = [
        line
        for line in lines
        if line.get("message", "").startswith("list and watch forbidden")
        or ("forbidden" in str(line) and own_namespace in str(line))
    ]
    assert not refused, err.decode()[-2000:]
