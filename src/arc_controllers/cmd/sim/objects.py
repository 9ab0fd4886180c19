"""The Kubernetes objects ``arc-sim`` creates and changes: CRDs, the scale set, its rollout and deletion.

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from arc_controllers.api.v1alpha1 import AUTOSCALING_RUNNER_SET, EPHEMERAL_RUNNER, POD
from arc_controllers.cmd.sim.progress import Progress
from arc_controllers.cmd.sim.scenario import Scenario
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey, WithWatch
from reconcilekit.client.patch import raw_patch
from reconcilekit.errors import is_already_exists, is_conflict, is_not_found

__all__ = [
    "ARS",
    "ER",
    "SCHEDULER_NAME",
    "autoscaling_runner_set",
    "crd_folder",
    "create_if_absent",
    "delete_pod",
    "delete_scale_set",
    "label_namespace",
    "rollout_runner_image",
]

ARS = AUTOSCALING_RUNNER_SET
ER = EPHEMERAL_RUNNER
NAMESPACE = GroupVersionKind("", "v1", "Namespace")

SCHEDULER_NAME = "arc-sim"
"""Scheduler named in the pod templates on an existing cluster, so real nodes never run the pods."""


def crd_folder(workdir: Path) -> Path:
    """The repository's config/crd when running from a checkout, else CRDs generated from the models.

    Blocking (file system): call it through ``asyncio.to_thread``.

    Python only: ``arc-sim`` installs the CRDs itself.
    """
    checkout = Path(__file__).resolve().parents[4] / "config" / "crd"
    if checkout.is_dir() and any(checkout.glob("*.yaml")):
        return checkout
    from arc_controllers.api.v1alpha1 import KINDS
    from arc_controllers.api.v1alpha1.crdgen import crd_file_name, generate, render

    out = workdir / "crd"
    out.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        (out / crd_file_name(kind)).write_text(render(generate(kind)), encoding="utf-8")
    return out


def autoscaling_runner_set(
    scenario: Scenario, config_url: str, secret: str, *, scheduler_name: str = ""
) -> dict[str, Any]:
    """The AutoscalingRunnerSet as ARC's chart would render it for the scenario (Python only).

    ``scheduler_name`` (existing clusters) goes into the runner and listener pod templates so
    that no real scheduler, hence no real kubelet, picks the pods up: the simulator runs them.
    The scale set's ``listenerEnv`` goes into the listener template's ``listener`` container.
    """
    ss = scenario.scale_set
    runner_pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "runner", "image": ss.runner_image, "command": ["/home/runner/run.sh"]}],
    }
    extra: dict[str, Any] = {}
    if scheduler_name or ss.listener_env:
        listener: dict[str, Any] = {"name": "listener"}
        if ss.listener_env:
            listener["env"] = [{"name": k, "value": v} for k, v in ss.listener_env.items()]
        listener_pod: dict[str, Any] = {"terminationGracePeriodSeconds": 60, "containers": [listener]}
        if scheduler_name:
            runner_pod["schedulerName"] = listener_pod["schedulerName"] = scheduler_name
        extra["listenerTemplate"] = {"spec": listener_pod}
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": ss.name,
            "namespace": ss.namespace,
            "labels": {"app.kubernetes.io/version": "0.14.2", "app.kubernetes.io/part-of": "gha-rs"},
        },
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": secret,
            "minRunners": ss.min_runners,
            "maxRunners": ss.max_runners,
            "template": {"spec": runner_pod},
            **extra,
        },
    }


async def create_if_absent(client: WithWatch, obj: dict[str, Any]) -> None:
    """Create ``obj``; one that already exists is left as it is. Python only."""
    try:
        await client.create(obj)
    except Exception as err:
        if not is_already_exists(err):
            raise


async def delete_scale_set(client: WithWatch, scenario: Scenario, progress: Progress) -> None:
    """Delete the AutoscalingRunnerSet and wait until the controller has released it (≤ 60 s).

    Python only: leaves a shared cluster as ``arc-sim`` found it.
    """
    key = ObjectKey(scenario.scale_set.namespace, scenario.scale_set.name)
    try:
        await client.delete(await client.get(ARS, key))
    except Exception as err:
        if is_not_found(err):
            return
        raise
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        try:
            await client.get(ARS, key)
        except Exception as err:
            if is_not_found(err):
                return
            raise
        await asyncio.sleep(0.5)
    progress.note("arc-sim: the AutoscalingRunnerSet was not released within 60 s; left behind")


async def rollout_runner_image(client: WithWatch, scenario: Scenario, image: str) -> None:
    """Change the runner image of the AutoscalingRunnerSet's template (retrying conflicts). Python only."""
    key = ObjectKey(scenario.scale_set.namespace, scenario.scale_set.name)
    for _ in range(10):
        ars = await client.get(ARS, key)
        ars["spec"]["template"]["spec"]["containers"][0]["image"] = image
        try:
            await client.update(ars)
            return
        except Exception as err:
            if not is_conflict(err):
                raise


async def label_namespace(client: WithWatch, namespace: str, key: str, value: str | None) -> None:
    """Set the namespace's label ``key`` to ``value`` (``None``: remove it). Python only."""
    ns = await client.get(NAMESPACE, ObjectKey("", namespace))
    body = json.dumps({"metadata": {"labels": {key: value}}})
    await client.patch(ns, raw_patch("application/merge-patch+json", body))


async def delete_pod(client: WithWatch, namespace: str, name: str) -> bool:
    """Delete the pod; ``False`` when it was already gone. Python only."""
    try:
        await client.delete(await client.get(POD, ObjectKey(namespace, name)))
    except Exception as err:
        if is_not_found(err):
            return False
        raise
    return True
