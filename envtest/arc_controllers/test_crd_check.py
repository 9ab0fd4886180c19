"""arc-controller as a process on an API server serving CRDs that are not ours: exit 1, one line, no write.

Each case runs on a control plane of its own (the session's serves our CRDs, which other
tests need): our CRDs with the EphemeralRunnerSet altered as Go ARC 0.14.x has it, once
without ``spec.actionableRevision`` and once requiring ``status.currentReplicas``. An
AutoscalingRunnerSet waits in a namespace, so controllers that started would write at
once (a finalizer, the EphemeralRunnerSet, events). The manager runs as the controller
chart's ServiceAccount, which holds no rights on CRD objects: the check reads the
OpenAPI v3 document every authenticated identity may read.
"""

from __future__ import annotations

import asyncio
import copy
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_rbac import CONTROLLER_SERVICE_ACCOUNT, install_controller_chart_rbac, service_account_kubeconfig

from arc_controllers.api.v1alpha1 import AutoscalingListener, AutoscalingRunnerSet, EphemeralRunnerSet
from arc_controllers.api.v1alpha1.crdcompat import compare_served, served_schemas
from reconcilekit.client import GroupVersionKind, ObjectKey, new_client
from reconcilekit.client.openapi import new_openapi_v3_client
from reconcilekit.config import RestConfig, load_rest_config
from reconcilekit.envtest import Environment
from reconcilekit.testing import eventually

pytestmark = [pytest.mark.envtest_only, pytest.mark.slow]

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"
ARS, ERS, AL = AutoscalingRunnerSet.GVK, EphemeralRunnerSet.GVK, AutoscalingListener.GVK
EVENT, SECRET = GroupVersionKind("", "v1", "Event"), GroupVersionKind("", "v1", "Secret")


def altered_crds(dest: Path, *, without: str = "", require: str = "") -> Path:
    """Our four CRDs in ``dest``, the EphemeralRunnerSet's schema changed the way Go ARC 0.14.x's differs."""
    dest.mkdir(parents=True, exist_ok=True)
    for source in CRD_DIR.glob("*.yaml"):
        crd = yaml.safe_load(source.read_text())
        if crd["spec"]["names"]["kind"] == "EphemeralRunnerSet":
            crd = copy.deepcopy(crd)
            schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
            if without:
                del schema["spec"]["properties"][without]
            if require:
                schema["status"]["properties"][require] = {"type": "integer"}
                schema["status"]["required"] = [require]
        (dest / source.name).write_text(yaml.safe_dump(crd))
    return dest


def autoscaling_runner_set(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": "arc-runner-set",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/version": "0.14.2"},
        },
        "spec": {
            "githubConfigUrl": "https://github.com/my-org",
            "githubConfigSecret": "github-secret",
            "template": {"spec": {"containers": [{"name": "runner", "image": "runner:1"}]}},
        },
    }


async def served_gap(admin: RestConfig) -> Any:
    async with new_openapi_v3_client(admin) as openapi:
        document = await openapi.schema("apis/actions.github.com/v1alpha1")
    return compare_served(EphemeralRunnerSet, served_schemas(document).get("EphemeralRunnerSet"))


async def run_manager(kubeconfig: Path, controller_namespace: str) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "CONTROLLER_MANAGER_POD_NAMESPACE": controller_namespace,
        "CONTROLLER_MANAGER_CONTAINER_IMAGE": "ghcr.io/example/arc:0.14.2",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "arc_controllers",
        "--auto-scaling-runner-set-only",
        "--log-level=debug",
        "--log-format=text",
        "--metrics-addr=0",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        pytest.fail("arc-controller did not exit: it started despite the CRDs")
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize(
    ("alteration", "expected"),
    [
        ({"without": "actionableRevision"}, "EphemeralRunnerSet lacks spec.actionableRevision;"),
        ({"require": "currentReplicas"}, "EphemeralRunnerSet requires status.currentReplicas;"),
    ],
    ids=["without-actionableRevision", "requiring-currentReplicas"],
)
async def test_manager_exits_1_with_one_line_before_any_write_arc_4638(
    tmp_path: Path, alteration: dict[str, str], expected: str
) -> None:
    async with Environment() as cluster:
        admin = await load_rest_config(cluster.kubeconfig_path)
        await cluster.install_crds([altered_crds(tmp_path / "crds", **alteration)])
        # The aggregated OpenAPI document follows a CRD change asynchronously.
        gap = await eventually(lambda: served_gap(admin), timeout=60, message="the altered CRD is published")
        assert expected.rstrip(";").split(" ", 1)[1] in gap.describe()

        namespace = await cluster.create_namespace(prefix="arc-runners-")
        controller_namespace = await cluster.create_namespace(prefix="arc-systems-")
        async with new_client(admin, field_owner="test-setup") as client:
            await install_controller_chart_rbac(client, controller_namespace=controller_namespace)
            kubeconfig = await service_account_kubeconfig(
                client,
                cluster.kubeconfig_path,
                tmp_path / "controller.kubeconfig",
                namespace=controller_namespace,
                name=CONTROLLER_SERVICE_ACCOUNT,
            )
            created = await client.create(autoscaling_runner_set(namespace))
            events_before = len((await client.list(EVENT)).items)

            code, out, err = await run_manager(kubeconfig, controller_namespace)

            assert code == 1, err[-2000:]
            lines = err.strip().splitlines()
            assert len(lines) == 1, err[-2000:]
            (line,) = lines
            assert line.startswith("CRD check: the installed CRDs are not ours: ")
            assert expected in line
            assert "docker run --rm ghcr.io/example/arc:0.14.2 crds | kubectl apply --server-side" in line
            assert out == ""
            # Nothing was written: the set is as created, no child object, no event, no secret.
            ars = await client.get(ARS, ObjectKey(namespace, "arc-runner-set"))
            assert ars["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
            assert "finalizers" not in ars["metadata"]
            assert {m["manager"] for m in ars["metadata"]["managedFields"]} == {"test-setup"}
            assert (await client.list(ERS)).items == []
            assert (await client.list(AL)).items == []
            assert len((await client.list(EVENT)).items) == events_before
            assert (await client.list(SECRET, namespace=controller_namespace)).items == []
