"""The controller image under the contract ARC's controller chart renders (``make image-test``).

What runs: ``/manager`` from the image built by ``make image`` (``ARC_IMAGE``), read-only, as
65532:65532, every capability dropped, ``/tmp`` a tmpfs, host network, authenticated in-cluster
style (a ServiceAccount token, the CA and the namespace at the standard path, plus
``KUBERNETES_SERVICE_HOST/PORT``) as the chart's ServiceAccount holding only the charts' rules
(`chart_rbac`), with the args and env the ``gha-runner-scale-set-controller`` chart renders for
``deploy/values.yaml`` (`chart_args`, `chart_env`). The fake Actions service runs on the host.
The test then plays the kubelet for the listener pod the manager creates: the pod's container
runs from the same image with the pod's command, env, config secret mount and a token bound to
the pod, and turns queued jobs into EphemeralRunners with JIT secrets and runner pods. Both
containers stop on SIGTERM within their pod's grace period and leave nothing behind.

Selected by the ``image`` marker; skipped when ``ARC_IMAGE`` is unset (``make integration``),
so CI runs it once, through ``make image-test``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.cmd.sim.kubelet import running_status, terminated_status
from arc_controllers.cmd.sim.podidentity import pod_service_account, request_token
from reconcilekit.client import RestClient
from reconcilekit.client.patch import raw_patch
from reconcilekit.envtest import Environment
from reconcilekit.testing import eventually

from .chart_rbac import CONTROLLER_SERVICE_ACCOUNT, install_chart_rbac, service_account_token, uninstall_chart_rbac
from .podman_kubelet import (
    Container,
    container_exists,
    in_cluster_env,
    pod_container_args,
    podman,
    service_account_mount,
)
from .scaleset_world import ARS, ER, LISTENER, POD, SECRET

IMAGE = os.environ.get("ARC_IMAGE", "")
pytestmark = [
    pytest.mark.image,
    pytest.mark.slow,
    pytest.mark.envtest_only,
    pytest.mark.skipif(not IMAGE, reason="ARC_IMAGE is unset: `make image-test` builds the image and sets it"),
]

ROOT = Path(__file__).resolve().parents[2]
CHART = "gha-runner-scale-set-controller"
CHART_VERSION = "0.14.2"
"""The chart release the args below are rendered from (templates/deployment.yaml at tag gha-runner-scale-set-0.14.2)."""
CHART_REPOSITORY, CHART_TAG = "ghcr.io/example/arc-controllers-python", "0.14.2"
"""``image.repository`` and ``image.tag`` of deploy/values.yaml: the manager's image and so every listener's."""
GRACE_SECONDS = 10
"""``terminationGracePeriodSeconds`` of the chart's Deployment."""
LISTENER_GRACE_SECONDS = 60
"""``terminationGracePeriodSeconds`` of the listener pod the manager builds."""
USER = "65532:65532"
SET_NAME = "image-set"


def chart_args(*, metrics: int, listener_metrics: int, probe: int) -> list[str]:
    """The manager's args as chart 0.14.2 renders them for deploy/values.yaml, in the template's order.

    Only the ports differ: the chart renders ``:8080`` (both metrics) and ``:8081`` (probes);
    on the host network the manager and the listener share one port space (in a cluster each
    pod has its own), so each gets a free port instead.
    """
    return [
        "--auto-scaling-runner-set-only",
        "--log-level=info",
        "--log-format=json",
        "--runner-max-concurrent-reconciles=2",
        "--update-strategy=immediate",  # the 0.14.2 chart's default flags.updateStrategy
        f"--listener-metrics-addr=:{listener_metrics}",
        "--listener-metrics-endpoint=/metrics",
        f"--metrics-addr=:{metrics}",
        f"--health-probe-bind-address=:{probe}",
    ]


def chart_image(tag: str = CHART_TAG) -> str:
    """``image.repository:image.tag`` as the chart renders it, for values.yaml's tag or an override."""
    return f"{CHART_REPOSITORY}:{tag}"


def chart_env(controller_namespace: str, *, image: str) -> dict[str, str]:
    """The manager's env as the chart renders it (the namespace comes from the downward API).

    ``image`` is `chart_image`'s rendering: listener pods run the manager's image.
    """
    return {"CONTROLLER_MANAGER_CONTAINER_IMAGE": image, "CONTROLLER_MANAGER_POD_NAMESPACE": controller_namespace}


def chart_security() -> list[str]:
    """deploy/values.yaml's securityContext as podman options, and the chart's ``/tmp`` emptyDir.

    ``--read-only-tmpfs=false``: podman would otherwise mount tmpfs on /run and /var/tmp too,
    hiding a write outside /tmp that the chart's pod would refuse.
    """
    return [
        "--read-only",
        "--read-only-tmpfs=false",
        "--tmpfs=/tmp:rw,mode=1777,size=64m",
        f"--user={USER}",
        "--cap-drop=ALL",
        "--security-opt=no-new-privileges",
        "--network=host",
    ]


def test_chart_values_are_the_ones_the_args_are_rendered_from() -> None:
    """deploy/values.yaml still says what `chart_args` renders (edit both together)."""
    values = yaml.safe_load((ROOT / "deploy" / "values.yaml").read_text())
    assert (values["image"]["repository"], values["image"]["tag"]) == (CHART_REPOSITORY, CHART_TAG)
    assert values["replicaCount"] == 1
    flags = values["flags"]
    assert (flags["logLevel"], flags["logFormat"], flags["watchSingleNamespace"]) == ("info", "json", "")
    assert (flags["runnerMaxConcurrentReconciles"], flags["healthProbeBindAddress"]) == (2, ":8081")
    assert values["metrics"] == {
        "controllerManagerAddr": ":8080",
        "listenerAddr": ":8080",
        "listenerEndpoint": "/metrics",
    }
    context = values["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"], context["readOnlyRootFilesystem"]) == (65532, 65532, True)
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["allowPrivilegeEscalation"] is False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest_asyncio.fixture(loop_scope="session")
async def image() -> AsyncIterator[str]:
    """The image under test, also tagged as the chart renders deploy/values.yaml (so listener pods find it).

    The tag is values.yaml's plus a suffix of this run's own (``--set image.tag=0.14.2-run…``):
    podman's image names are machine-wide, and two runs sharing one name would untag it under
    each other.
    """
    await podman("image", "exists", IMAGE)
    tagged = chart_image(f"{CHART_TAG}-run{os.getpid()}-{uuid.uuid4().hex[:8]}")
    await podman("tag", IMAGE, tagged)
    try:
        yield tagged
    finally:
        await podman("untag", IMAGE, tagged, check=False)


async def get_json(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url) as response:
        return response.status, await response.text()


def json_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Every line as one JSON object (a line that is not one fails the test)."""
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON log line: {line!r}")
    return parsed


async def test_image_runs_under_the_charts_contract(
    envtest_environment: Environment,
    arc_crds: None,
    client: RestClient,
    namespace: str,
    actions_service: FakeActionsService,
    image: str,
    tmp_path: Path,
) -> None:
    """Manager and listener from the image, as the chart and the manager deploy them: jobs become runners."""
    config = await podman("image", "inspect", "--format", "{{json .Config}}", IMAGE)
    contract = json.loads(config)
    assert contract.get("User") == USER, "the image's USER is the chart's 65532:65532 (pods without runAsUser)"
    assert contract.get("Entrypoint") == ["/manager"]
    assert contract.get("WorkingDir") == "/"

    controller_namespace = await envtest_environment.create_namespace(prefix="arc-systems-")
    await install_chart_rbac(
        client, controller_namespace=controller_namespace, namespace=namespace, scale_set_name=SET_NAME
    )
    token = await service_account_token(client, namespace=controller_namespace, name=CONTROLLER_SERVICE_ACCOUNT)
    metrics, listener_metrics, probe = _free_port(), _free_port(), _free_port()
    suffix = uuid.uuid4().hex[:8]
    containers: list[Container] = []
    try:
        manager = await Container.run(
            f"arc-manager-{suffix}",
            *chart_security(),
            *service_account_mount(
                tmp_path / "manager-sa", token=token, ca=envtest_environment.ca_data, namespace=controller_namespace
            ),
            *in_cluster_env(envtest_environment),
            *(f"--env={k}={v}" for k, v in chart_env(controller_namespace, image=image).items()),
            "--entrypoint=/manager",  # the chart's command
            image,
            *chart_args(metrics=metrics, listener_metrics=listener_metrics, probe=probe),
        )
        containers.append(manager)
        assert await manager.host_identity(await manager.pid()) == (("65532", "65532"), 0)

        async with aiohttp.ClientSession() as http:

            async def serving() -> str:
                """The /metrics body once /readyz, /healthz and /metrics all answer 200 (each binds on its own)."""
                if manager.proc.returncode is not None:
                    pytest.fail(f"the manager exited {manager.proc.returncode}:\n{manager.output()}")
                with contextlib.suppress(aiohttp.ClientError):
                    ready = await get_json(http, f"http://127.0.0.1:{probe}/readyz")
                    healthy = await get_json(http, f"http://127.0.0.1:{probe}/healthz")
                    status, body = await get_json(http, f"http://127.0.0.1:{metrics}/metrics")
                    return body if ready[0] == healthy[0] == status == 200 else ""
                return ""

            body = await eventually(serving, timeout=120)
            assert "# TYPE gha_controller_running_listeners gauge" in body

            await client.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "github-config-secret", "namespace": namespace},
                    "data": {"github_token": base64.b64encode(actions_service.github.pat.encode()).decode()},
                }
            )
            await client.create(
                {
                    "apiVersion": ARS.api_version,
                    "kind": ARS.kind,
                    "metadata": {"name": SET_NAME, "namespace": namespace},
                    "spec": {
                        "githubConfigUrl": actions_service.config_url(),
                        "githubConfigSecret": "github-config-secret",
                        "maxRunners": 5,
                        "minRunners": 0,
                        "template": {"spec": {"containers": [{"name": "runner", "image": "runner:test"}]}},
                    },
                }
            )

            async def listener_pod() -> dict[str, Any]:
                for pod in (await client.list(POD, namespace=controller_namespace)).items:
                    owners = pod["metadata"].get("ownerReferences") or []
                    if any(o["kind"] == LISTENER.kind for o in owners):
                        return dict(pod)
                return {}

            pod = await eventually(listener_pod, timeout=120)
            # the kubelet's part: a token bound to the pod, the pod's container from its image
            account = pod_service_account(pod)
            pod_token = await eventually(lambda: _pod_token(client, controller_namespace, account, pod), timeout=60)
            listener_args = await pod_container_args(client, pod, tmp_path / "listener")
            assert listener_args[-1] == image, "listener pods run the manager's image"
            listener = await Container.run(
                f"arc-listener-{suffix}",
                "--read-only",
                "--read-only-tmpfs=false",
                "--tmpfs=/tmp:rw,mode=1777,size=64m",
                "--cap-drop=ALL",
                "--network=host",
                *service_account_mount(
                    tmp_path / "listener-sa",
                    token=pod_token,
                    ca=envtest_environment.ca_data,
                    namespace=controller_namespace,
                ),
                *in_cluster_env(envtest_environment),
                *listener_args,
            )
            containers.append(listener)
            listener_ids, _ = await listener.host_identity(await listener.pid())
            assert listener_ids == ("65532", "65532"), "the image's USER, as the pod sets none"
            await client.status().patch(
                pod, raw_patch("application/merge-patch+json", json.dumps({"status": running_status(pod)}))
            )

            async def session_open() -> bool:
                if listener.proc.returncode is not None:
                    pytest.fail(f"the listener exited {listener.proc.returncode}:\n{listener.output()}")
                return bool(actions_service.state.sessions)

            await eventually(session_open, timeout=120)

            async def listener_metrics_body() -> str:
                with contextlib.suppress(aiohttp.ClientError):
                    status, body = await get_json(http, f"http://127.0.0.1:{listener_metrics}/metrics")
                    return body if status == 200 else ""
                return ""

            assert "gha_max_runners" in await eventually(listener_metrics_body, timeout=60)

            for _ in range(3):
                actions_service.queue_job(labels=[SET_NAME])

            async def runners_with_jit_secrets() -> list[dict[str, Any]]:
                runners = (await client.list(ER, namespace=namespace)).items
                pods = {p["metadata"]["name"]: p for p in (await client.list(POD, namespace=namespace)).items}
                secrets = {s["metadata"]["name"] for s in (await client.list(SECRET, namespace=namespace)).items}
                ready = [r for r in runners if r["metadata"]["name"] in pods and r["metadata"]["name"] in secrets]
                return [pods[r["metadata"]["name"]] for r in ready] if len(ready) >= 3 else []

            runner_pods = await eventually(runners_with_jit_secrets, timeout=180)
            for runner_pod in runner_pods:
                env = {e["name"]: e for e in runner_pod["spec"]["containers"][0].get("env") or []}
                ref = env["ACTIONS_RUNNER_INPUT_JITCONFIG"]["valueFrom"]["secretKeyRef"]
                assert ref == {"name": runner_pod["metadata"]["name"], "key": "jitToken"}

        # SIGTERM: the listener (grace 60 s) ends its session and exits 1, as upstream's does;
        # the manager (grace 10 s) exits 0.
        code, seconds = await listener.stop(LISTENER_GRACE_SECONDS)
        assert (code, seconds < LISTENER_GRACE_SECONDS) == (1, True), listener.output()
        assert "Application returned an error: context canceled" in listener.stderr
        assert not actions_service.state.sessions, "the listener deleted its session"
        with contextlib.suppress(Exception):
            await client.status().patch(
                pod, raw_patch("application/merge-patch+json", json.dumps({"status": terminated_status(pod, code)}))
            )
        code, seconds = await manager.stop(GRACE_SECONDS)
        assert code == 0, f"the manager exited {code} after {seconds:.1f} s:\n{manager.output()}"
        assert seconds < GRACE_SECONDS
        for container in containers:
            assert not await container_exists(container.name), f"{container.name} was left behind"

        # log contracts: the manager's zap keys on stderr, the listener's slog keys on stdout
        manager_lines = json_lines(manager.stderr)
        assert all(line.keys() >= {"ts", "severity", "logger", "message"} for line in manager_lines), [
            line for line in manager_lines if "logger" not in line
        ][:5]
        assert {line["logger"] for line in manager_lines} >= {"AutoscalingRunnerSet", "AutoscalingListener"}
        assert not manager.stdout, manager.stdout[:5]
        listener_lines = json_lines(listener.stdout)
        assert all({"time", "level", "msg", "source"} <= line.keys() for line in listener_lines)
        assert {line.get("component") for line in listener_lines} >= {"listener", "worker", "metrics exporter"}
        assert {line["level"] for line in listener_lines} <= {"INFO", "WARN", "ERROR"}, "log_level info"
    finally:
        for container in containers:
            await container.discard()
        await _purge(client, namespace, controller_namespace)
        await uninstall_chart_rbac(client, controller_namespace=controller_namespace)
        with contextlib.suppress(Exception):
            await envtest_environment.delete_namespace(controller_namespace)
        shutil.rmtree(tmp_path, ignore_errors=True)


async def _pod_token(client: RestClient, namespace: str, account: str, pod: dict[str, Any]) -> str:
    """A token bound to ``pod`` once the manager has made its ServiceAccount; else empty."""
    with contextlib.suppress(LookupError):
        return await request_token(client, namespace=namespace, name=account, pod=pod)
    return ""


async def _purge(client: RestClient, namespace: str, controller_namespace: str) -> None:
    """Finalizers off and ARC's objects gone: envtest has no namespace controller to do it."""
    for gvk, ns in ((ARS, namespace), (LISTENER, controller_namespace), (ER, namespace)):
        with contextlib.suppress(Exception):
            for obj in (await client.list(gvk, namespace=ns)).items:
                with contextlib.suppress(Exception):
                    if obj["metadata"].get("finalizers"):
                        body = json.dumps({"metadata": {"finalizers": None}})
                        await client.patch(obj, raw_patch("application/merge-patch+json", body))
                    await client.delete(obj)
