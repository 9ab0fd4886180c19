"""The runner phase gauges (spec §3.8) on a real API server, the runner controller reconciled by hand.

Upstream: controllers/actions.github.com/ephemeralrunnerset_controller_test.go @86169456,
Describe "EphemeralRunner phase metrics". No kubelet runs: pod status is written through
pods/status, and the Running phase is written as the listener writes it (a status patch
with the job), not by the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from arc_controllers.actions.config import parse_github_config_url
from arc_controllers.controllers.actions_seam import SecretActionsClientFactory
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.metrics import RunnerPhaseMetrics
from reconcilekit.cache import Options as CacheOptions
from reconcilekit.client import new_client
from reconcilekit.config import load_rest_config
from reconcilekit.manager import Options, new_manager
from reconcilekit.metrics import REGISTRY
from reconcilekit.reconcile import Request

from .conftest import ER, POD, SECRET, Harness, eventually
from .test_ephemeralrunner import container, gone, pod_of, pod_status, runner_status

SCALE_SET = "test-scale-set"


@pytest_asyncio.fixture(loop_scope="session")
async def controller(harness: Harness) -> AsyncIterator[EphemeralRunnerReconciler]:
    """The runner reconciler with PublishMetrics on and its own bookkeeping (upstream resets the
    package map in BeforeEach), on a direct client with the chart's identity (`Harness.controller_config`:
    chart RBAC unless opted out); the test's set-up steps stay on the admin ``harness.client``."""
    client = new_client(await harness.controller_config())
    harness.clients.append(client)  # closed by the harness
    actions = SecretActionsClientFactory(client)
    try:
        yield EphemeralRunnerReconciler(
            client=client,
            actions=actions,
            unregistration_queue=None,
            publish_metrics=True,
            phase_metrics=RunnerPhaseMetrics(),
        )
    finally:
        await actions.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def metrics_url(harness: Harness) -> AsyncIterator[str]:
    """A manager serving /metrics on a loopback port (no controllers): the endpoint arc-controller serves."""
    config = await load_rest_config(harness.env.kubeconfig_path)
    mgr = new_manager(
        config,
        Options(
            metrics_bind_address="127.0.0.1:0",
            uncached=[SECRET],
            cache=CacheOptions(default_namespaces=[harness.namespace]),
        ),
    )
    task = asyncio.create_task(mgr.start(), name=f"metrics-manager-{harness.namespace}")
    try:
        address = await eventually(lambda: _address(mgr))
        yield f"http://{address[0]}:{address[1]}/metrics"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _address(mgr: Any) -> Any:
    return mgr.metrics_address


def runner_object(h: Harness) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": h.namespace,
            "namespace": h.namespace,
            "labels": {
                "actions.github.com/scale-set-name": SCALE_SET,
                "actions.github.com/scale-set-namespace": h.namespace,
            },
        },
        "spec": {
            "githubConfigUrl": h.service.config_url(),
            "githubConfigSecret": "github-config",
            "runnerScaleSetId": h.scale_set_id,
            "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}]},
        },
    }


def phase_labels(h: Harness) -> dict[str, str]:
    config = parse_github_config_url(h.service.config_url())
    return {
        "name": SCALE_SET,
        "namespace": h.namespace,
        "repository": config.repository,
        "organization": config.organization,
        "enterprise": config.enterprise,
    }


def phase_metric(h: Harness, phase: str) -> float:
    """Upstream's expectEphemeralRunnerPhaseMetric reads a missing series as 0."""
    value = REGISTRY.get_sample_value(f"gha_controller_{phase.lower()}_ephemeral_runners", phase_labels(h))
    return value if value is not None else 0.0


async def expect_phase(h: Harness, phase: str) -> None:
    assert (await runner_status(h)).get("phase") == phase


def served(h: Harness, body: str, phase: str) -> float | None:
    """One phase gauge's value for this runner's scale set in a /metrics exposition; None when absent."""
    wanted = phase_labels(h)
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == f"gha_controller_{phase.lower()}_ephemeral_runners" and sample.labels == wanted:
                return float(sample.value)
    return None


async def scrape(url: str) -> str:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        assert response.status == 200
        return await response.text()


# Upstream: Describe "EphemeralRunner phase metrics"
#   It "publishes pending, running, and succeeded phase transitions"
async def test_publishes_pending_running_and_succeeded_phase_transitions(
    harness: Harness, controller: EphemeralRunnerReconciler, metrics_url: str
) -> None:
    h = harness
    request = Request(h.namespace, h.namespace)
    await h.client.create(runner_object(h))

    await controller.reconcile(request)
    await eventually(lambda: pod_of(h))

    await pod_status(h, {"phase": "Pending", "containerStatuses": [container({})]})
    await controller.reconcile(request)
    await expect_phase(h, "Pending")
    assert (phase_metric(h, "Pending"), phase_metric(h, "Running")) == (1.0, 0.0)

    # The listener, not the controller, writes Running (with the job) once a job is assigned.
    await pod_status(h, {"phase": "Running", "containerStatuses": [container({"running": {}}, ready=True)]})
    await h.patch_status(ER, h.namespace, {"phase": "Running", "jobId": "job-1", "jobRepositoryName": "org/repo"})
    await controller.reconcile(request)
    await expect_phase(h, "Running")
    assert (phase_metric(h, "Pending"), phase_metric(h, "Running")) == (0.0, 1.0)

    published: list[str] = []
    publish = controller.phase_metrics.publish
    controller.phase_metrics.publish = lambda obj, phase: (published.append(phase), publish(obj, phase))[1]  # type: ignore[method-assign]
    await pod_status(h, {"phase": "Succeeded", "containerStatuses": [container({"terminated": {"exitCode": 0}})]})
    await controller.reconcile(request)
    # One reconcile ends a Succeeded runner (issue 20, finding 2): it publishes Succeeded, deletes
    # the runner with its pod and JIT secret, finalizes it with the DELETE's answer, and (Python
    # addition, spec §8.2 step 2.1) takes it out of the gauges.
    assert published[-2:] == ["Succeeded", ""]
    assert (phase_metric(h, "Running"), phase_metric(h, "Succeeded")) == (0.0, 0.0)
    await eventually(lambda: gone(h, POD))
    await eventually(lambda: gone(h, ER))
    body = await scrape(metrics_url)
    assert [served(h, body, phase) for phase in ("Pending", "Running", "Succeeded")] == [0.0, 0.0, 0.0]
