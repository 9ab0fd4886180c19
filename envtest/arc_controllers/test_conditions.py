"""Errors are visible where operators look: Ready conditions, the Pending phase, the Reason column (issue 19 rule 4).

Every case runs the four controllers under ARC's chart RBAC on a real kube-apiserver with the
fake Actions service. ARC's chart grants no rights on Events: the recorders log one info line
and go quiet, and no reconcile fails for it (each case below passes through that path).

Beyond: ARC #2633, #4337, #4656: Go ARC says Running while its listener cannot run, and the
cause is only in the controller's log.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.resourcebuilder.listener import scale_set_listener_name
from reconcilekit.client import new_client
from reconcilekit.config import load_rest_config
from reconcilekit.envtest import Environment
from reconcilekit.errors import InvalidError
from reconcilekit.metrics import REGISTRY
from reconcilekit.testing import InterceptorClient

from .chart_rbac import CONTROLLER_SERVICE_ACCOUNT, scale_set_fullname
from .scaleset_world import ARS, LISTENER, LISTENER_IMAGE, POD, ROLE, SECRET, World, eventually, world

__all__ = ["world"]

pytestmark = [pytest.mark.envtest_only]

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def ready(obj: dict[str, Any] | None) -> dict[str, Any]:
    """The object's Ready condition ({} when it has none)."""
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition)
    return {}


def reconcile_errors(controller: str) -> float:
    return REGISTRY.get_sample_value("controller_runtime_reconcile_errors_total", {"controller": controller}) or 0.0


async def drop_roles_create(w: World, *, restore: bool = False) -> None:
    """Edit the chart's ``<scale set>-gha-rs-manager`` Role: no ``create`` on roles (or put it back)."""
    role = await w.get(ROLE, f"{scale_set_fullname(w.name)}-manager")
    rules = []
    for rule in role["rules"]:
        if "roles" in rule["resources"]:
            verbs = [v for v in rule["verbs"] if v != "create"] + (["create"] if restore else [])
            rule = {**rule, "verbs": verbs}
        rules.append(rule)
    await w.patch(role, {"rules": rules})


async def forbidden_world(w: World) -> dict[str, Any]:
    """The #2633 / #4337 reproduction: chart RBAC without ``create`` on roles, then a scale set."""
    await w.start()
    await drop_roles_create(w)
    ars = w.ars()
    await w.client.create(ars)
    return ars


def missing_rule(w: World) -> str:
    user = f"system:serviceaccount:{w.controller_namespace}:{CONTROLLER_SERVICE_ACCOUNT}"
    return f'user "{user}" lacks create on roles.rbac.authorization.k8s.io in namespace "{w.namespace}"'


@pytest.fixture
async def table_api(envtest_environment: Environment) -> AsyncIterator[k8s.ApiClient]:
    """A plain API client: what ``kubectl get`` asks for (kubectl itself may be absent)."""
    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(envtest_environment.kubeconfig_path), client_configuration=configuration
    )
    async with k8s.ApiClient(configuration) as api_client:
        yield api_client


async def get_table(api_client: k8s.ApiClient, namespace: str) -> dict[str, Any]:
    """``kubectl get autoscalingrunnersets``: the API server's Table, printer columns applied."""
    table: dict[str, Any] = await api_client.call_api(
        f"/apis/actions.github.com/v1alpha1/namespaces/{namespace}/autoscalingrunnersets",
        "GET",
        header_params={"Accept": TABLE},
        response_types_map={200: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )
    return table


async def test_scale_set_is_pending_and_says_forbidden_with_the_reason_column_arc_2633(
    world: World, table_api: k8s.ApiClient
) -> None:
    """#2633: the controller may not create the listener's Role. Before: no condition, phase Running.

    After: the scale set is Pending, Ready=False, reason Forbidden, its message naming the
    missing rule and the identity, and ``kubectl get autoscalingrunnersets`` shows
    ``Pending  False  Forbidden``.
    """
    w = world
    await forbidden_world(w)

    async def pending_forbidden() -> dict[str, Any]:
        ars = await w.get(ARS, w.name)
        condition = ready(ars)
        assert (ars.get("status") or {}).get("phase") == "Pending", ars.get("status")
        assert (condition.get("status"), condition.get("reason")) == ("False", "Forbidden"), condition
        return condition

    condition = await eventually(pending_forbidden, within=60.0)
    assert missing_rule(w) in condition["message"]
    assert scale_set_listener_name(w.ars()) in condition["message"]  # the object: its listener

    table = await get_table(table_api, w.namespace)
    columns = [c["name"] for c in table["columnDefinitions"]]
    row = dict(zip(columns, table["rows"][0]["cells"], strict=True))
    assert (row["Name"], row["Phase"], row["Ready"], row["Reason"]) == (w.name, "Pending", "False", "Forbidden")
    kubectl = shutil.which("kubectl")
    if kubectl is not None:  # the real thing, when the machine has it
        process = await asyncio.create_subprocess_exec(
            kubectl, "--kubeconfig", str(w.env.kubeconfig_path), "get", "autoscalingrunnersets", "-n", w.namespace,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await process.communicate()
        header, line = out.decode().splitlines()[:2]
        assert header.split()[-2:] == ["READY", "REASON"]
        assert line.split()[-3:] == ["Pending", "False", "Forbidden"], out.decode()

    # It stays so: never Running while the listener cannot create its Role.
    for _ in range(8):
        await asyncio.sleep(0.5)
        assert ((await w.get(ARS, w.name)).get("status") or {}).get("phase") == "Pending"


async def test_listener_condition_names_the_missing_rule_and_retries_go_on_arc_4337(world: World) -> None:
    """#4337: the listener's own Ready condition names verb, resource, namespace and identity;
    the reconcile keeps failing with backoff (errors counted, not a hot loop), and once the rule
    is back the Role is created and the scale set leaves Forbidden with no restart.
    """
    w = world
    ars = await forbidden_world(w)
    name = scale_set_listener_name(ars)

    async def listener_forbidden() -> dict[str, Any]:
        condition = ready(await w.find(LISTENER, name, w.controller_namespace))
        assert (condition.get("status"), condition.get("reason")) == ("False", "Forbidden"), condition
        return condition

    condition = await eventually(listener_forbidden, within=60.0)
    assert condition["message"].startswith(f"AutoscalingListener {w.controller_namespace}/{name}: ")
    assert missing_rule(w) in condition["message"]

    before = reconcile_errors("autoscalinglistener")
    await asyncio.sleep(10.0)
    retries = reconcile_errors("autoscalinglistener") - before
    assert 1 <= retries <= 40, f"{retries} failed reconciles in 10 s: backoff expected, neither none nor a hot loop"
    assert await w.find(ROLE, name) is None

    await drop_roles_create(w, restore=True)

    async def recovered() -> bool:
        assert await w.find(ROLE, name) is not None
        ars_now = await w.get(ARS, w.name)
        assert ready(ars_now).get("reason") != "Forbidden", ready(ars_now)
        assert ready(await w.find(LISTENER, name, w.controller_namespace)).get("reason") != "Forbidden"
        return (ars_now.get("status") or {}).get("phase") == "Running"

    await eventually(recovered, within=90.0)


async def test_bad_config_url_is_invalid_spec_on_the_scale_set(world: World) -> None:
    """A githubConfigUrl naming no enterprise, organization or repository: Ready=False, InvalidSpec,
    the message naming the field; before, only a log line and a retry.
    """
    w = world
    await w.start()
    await w.client.create(w.ars(githubConfigUrl=w.service.config_url().rstrip("/").rsplit("/", 1)[0]))

    async def invalid() -> dict[str, Any]:
        ars = await w.get(ARS, w.name)
        condition = ready(ars)
        assert (condition.get("status"), condition.get("reason")) == ("False", "InvalidSpec"), condition
        assert (ars.get("status") or {}).get("phase") != "Running"
        return condition

    condition = await eventually(invalid, within=60.0)
    assert "spec.githubConfigUrl" in condition["message"]
    assert f"AutoscalingRunnerSet {w.namespace}/{w.name}" in condition["message"]


async def test_min_runners_over_max_is_refused_at_admission(world: World) -> None:
    """An impossible spec never reaches the controller: the CRD's CEL rule refuses it with 422."""
    w = world
    with pytest.raises(InvalidError) as refused:
        await w.client.create(w.ars(minRunners=5, maxRunners=2))
    assert "minRunners must be less than or equal to maxRunners" in refused.value.message
    await w.client.create(w.ars(name=w.name + "-ok", minRunners=2, maxRunners=2))  # equal is fine


async def fail_listener_pods(w: World, name: str, *, until: asyncio.Event) -> None:
    """Whenever a listener pod appears, write it Failed 0.3 s later (listener exit 1, finishedAt now)."""
    seen: set[str] = set()
    while not until.is_set():
        pod = await w.find(POD, name, w.controller_namespace)
        if pod is None or pod["metadata"]["uid"] in seen:
            await asyncio.sleep(0.05)
            continue
        seen.add(pod["metadata"]["uid"])
        await asyncio.sleep(0.3)
        finished = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        terminated = {"exitCode": 1, "reason": "Error", "finishedAt": finished}
        status = {"phase": "Failed", "containerStatuses": [{"name": "listener", "image": LISTENER_IMAGE,
                  "imageID": "", "ready": False, "restartCount": 0, "state": {"terminated": terminated}}]}  # fmt: skip
        await w.patch(pod, {"status": status}, status=True)


async def test_crash_looping_listener_is_crash_loop_back_off_on_both_objects_arc_4656(world: World) -> None:
    """#4656: every listener pod dies. The listener says Ready=False, CrashLoopBackOff, with its
    failure count; the scale set is Pending with the same reason. A pod that runs makes both Ready.
    """
    w = world
    await w.start()
    ars = w.ars()
    await w.client.create(ars)
    name = scale_set_listener_name(ars)
    stop = asyncio.Event()
    failer = asyncio.create_task(fail_listener_pods(w, name, until=stop))
    try:

        async def crash_looping() -> dict[str, Any]:
            listener = await w.get(LISTENER, name, w.controller_namespace)
            condition = ready(listener)
            assert (condition.get("status"), condition.get("reason")) == ("False", "CrashLoopBackOff"), condition
            assert (listener.get("status") or {}).get("failureCount", 0) >= 2
            scale_set = await w.get(ARS, w.name)
            assert (scale_set.get("status") or {}).get("phase") == "Pending"
            assert ready(scale_set).get("reason") == "CrashLoopBackOff"
            return condition

        condition = await eventually(crash_looping, within=60.0)
        assert "listener pod died" in condition["message"]
        assert "time(s) in a row" in condition["message"]
    finally:
        stop.set()
        await failer
    # The next pod runs: both objects go Ready, the scale set Running.
    running = {"name": "listener", "image": LISTENER_IMAGE, "imageID": "", "ready": True, "restartCount": 0,
               "state": {"running": {"startedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}}}  # fmt: skip

    async def healthy() -> bool:
        pod = await w.find(POD, name, w.controller_namespace)
        assert pod is not None
        assert not (pod.get("status") or {}).get("containerStatuses")
        await w.patch(pod, {"status": {"phase": "Running", "containerStatuses": [running]}}, status=True)
        return True

    await eventually(healthy, within=400.0)  # the dead pod waits out its backoff first (at most 5 min)

    async def ready_again() -> bool:
        scale_set = await w.get(ARS, w.name)
        assert ready(await w.get(LISTENER, name, w.controller_namespace)).get("status") == "True"
        assert ready(scale_set).get("status") == "True", ready(scale_set)
        return (scale_set.get("status") or {}).get("phase") == "Running"

    await eventually(ready_again, within=60.0)


CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd"


def crds_without_conditions(dest: Path) -> Path:
    """Our CRDs with ``status.conditions`` taken out, as Go ARC's CRDs (which ARC's charts install) are."""
    dest.mkdir(parents=True, exist_ok=True)
    for source in CRD_DIR.glob("*.yaml"):
        crd = yaml.safe_load(source.read_text())
        status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        status.get("properties", {}).pop("conditions", None)
        (dest / source.name).write_text(yaml.safe_dump(crd))
    return dest


async def test_pruned_conditions_are_written_once_then_never_again(
    tmp_path: Path, actions_service: FakeActionsService
) -> None:
    """On CRDs that prune ``status.conditions`` (Go ARC's) each kind sends one status patch with a
    condition, sees it pruned, and stops: no status patch of either kind while nothing changes.
    Without the guard (``pruned`` never set) every pass patches again: 8 status patches for the
    8 touches below (checked by hand, 2026-12-04).
    """
    async with Environment() as cluster:
        await cluster.install_crds([crds_without_conditions(tmp_path / "crds")])
        admin = await load_rest_config(cluster.kubeconfig_path)
        client = new_client(admin)
        namespace = await cluster.create_namespace(prefix="arc-runners-")
        controller_namespace = await cluster.create_namespace(prefix="arc-systems-")
        token = base64.b64encode(actions_service.github.pat.encode()).decode()
        secret = {"apiVersion": "v1", "kind": "Secret", "data": {"github_token": token}}
        await client.create({**secret, "metadata": {"name": "github-config-secret", "namespace": namespace}})
        w = World(cluster, namespace, controller_namespace, actions_service, client)
        recorders: list[InterceptorClient] = []

        def wrap(inner: Any) -> InterceptorClient:
            recorders.append(InterceptorClient(inner))
            return recorders[-1]

        try:
            await w.start(wrap_client=wrap)
            await w.client.create(w.ars())

            (recorder,) = recorders

            def status_patches(*kinds: str) -> int:
                return sum(recorder.count("patch", kind, subresource="status") for kind in kinds)

            async def settled() -> bool:
                ars = await w.get(ARS, w.name)
                assert await w.listener_of(ars) is not None
                assert (ars.get("status") or {}).get("phase") == "Running"
                assert not (ars.get("status") or {}).get("conditions")  # pruned
                return status_patches("AutoscalingListener") >= 1  # its first condition went out

            await eventually(settled, within=60.0)
            await asyncio.sleep(2.0)  # the passes the last patches brought
            before = status_patches("AutoscalingRunnerSet", "AutoscalingListener")
            # Passes with nothing for the conditions to change: an annotation on the scale set (not
            # propagated) and a message on the listener pod's status bring one pass each.
            for n in range(4):
                await w.patch(await w.get(ARS, w.name), {"metadata": {"annotations": {"test.example/touch": str(n)}}})
                pod = await w.find(POD, scale_set_listener_name(w.ars()), controller_namespace)
                if pod is not None:
                    await w.patch(pod, {"status": {"message": f"touch {n}"}}, status=True)
                await asyncio.sleep(1.0)
            await asyncio.sleep(2.0)
            after = status_patches("AutoscalingRunnerSet", "AutoscalingListener")
            assert after == before, f"{after - before} status patches while nothing changed"
            assert w.controllers is not None
            assert w.controllers.autoscaling_runner_set.ready.conditions.pruned
            assert w.controllers.autoscaling_listener.conditions.pruned
        finally:
            await w.stop()
            await w.purge()
            await client.close()


def registration_token_requests(service: FakeActionsService) -> int:
    """Registration-token calls the fake has answered, every scope."""
    return sum(n for endpoint, n in service.faults.requests.items() if endpoint.startswith("registration_token"))


async def test_bad_token_actions_service_error_backs_off(world: World) -> None:
    """A config secret with a bad token: Ready=False, ActionsServiceError, the message naming the
    call and the service's answer but no per-request id; the retries keep the work queue's backoff.

    Before: the message carried the fake's ``X-GitHub-Request-Id``, so every retry rewrote the
    condition and its status patch started the next pass at once (about 20 passes a second).
    """
    w = world
    secret = await w.get(SECRET, "github-config-secret", w.namespace)
    await w.patch(secret, {"data": {"github_token": base64.b64encode(b"ghp_not-the-token").decode()}})
    recorders: list[InterceptorClient] = []

    def wrap(inner: Any) -> InterceptorClient:
        recorders.append(InterceptorClient(inner))
        return recorders[-1]

    await w.start(wrap_client=wrap)
    await w.client.create(w.ars())
    (recorder,) = recorders

    async def failing() -> dict[str, Any]:
        ars = await w.get(ARS, w.name)
        condition = ready(ars)
        assert (condition.get("status"), condition.get("reason")) == ("False", "ActionsServiceError"), condition
        assert (ars.get("status") or {}).get("phase") != "Running"
        return condition

    condition = await eventually(failing, within=60.0)
    message = condition["message"]
    assert f"AutoscalingRunnerSet {w.namespace}/{w.name}" in message
    for part in ("POST", "registration-token", "401", "Bad credentials"):  # verb, endpoint, status, the answer
        assert part in message, message
    for part in ("request_id", "activity_id"):
        assert part not in message, message

    calls = registration_token_requests(w.service)
    writes = recorder.count("patch", "AutoscalingRunnerSet", subresource="status")
    await asyncio.sleep(10.0)  # the window measured, not a wait for a state
    calls = registration_token_requests(w.service) - calls
    writes = recorder.count("patch", "AutoscalingRunnerSet", subresource="status") - writes
    assert calls <= 15, f"{calls} registration-token calls in 10 s: the backoff was bypassed"
    assert writes <= 2, f"{writes} scale set status writes in 10 s for one unchanged cause"
    assert ready(await w.get(ARS, w.name))["message"] == message


async def test_missing_config_secret_is_invalid_spec_on_the_scale_set(world: World) -> None:
    """``githubConfigSecret`` names no secret: Ready=False, InvalidSpec, the message naming the field
    and the secret's namespace/name. Before: Pending with no condition, the cause only in the log.
    """
    w = world
    await w.start()
    await w.client.create(w.ars(githubConfigSecret="does-not-exist"))

    async def invalid() -> dict[str, Any]:
        ars = await w.get(ARS, w.name)
        condition = ready(ars)
        assert (condition.get("status"), condition.get("reason")) == ("False", "InvalidSpec"), condition
        assert (ars.get("status") or {}).get("phase") != "Running"
        return condition

    condition = await eventually(invalid, within=60.0)
    assert "spec.githubConfigSecret" in condition["message"]
    assert f"{w.namespace}/does-not-exist" in condition["message"]
    assert f"AutoscalingRunnerSet {w.namespace}/{w.name}" in condition["message"]


async def test_listener_that_cannot_start_keeps_the_scale_set_pending(world: World) -> None:
    """The listener pod's container waits in ImagePullBackOff: the listener is Ready=False,
    ListenerCannotStart, with the kubelet's reason; the scale set is Pending with the same reason.
    Before: the scale set said Running with Ready=Unknown, ListenerStarting. Once the container
    runs, both are Ready and the scale set Running.
    """
    w = world
    await w.start()
    ars = w.ars()
    await w.client.create(ars)
    name = scale_set_listener_name(ars)
    waiting = {"name": "listener", "image": LISTENER_IMAGE, "imageID": "", "ready": False, "restartCount": 0,
               "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}}  # fmt: skip

    async def pull_back_off() -> bool:
        pod = await w.find(POD, name, w.controller_namespace)
        assert pod is not None
        await w.patch(pod, {"status": {"phase": "Pending", "containerStatuses": [waiting]}}, status=True)
        return True

    await eventually(pull_back_off, within=60.0)

    async def cannot_start() -> dict[str, Any]:
        condition = ready(await w.get(LISTENER, name, w.controller_namespace))
        assert (condition.get("status"), condition.get("reason")) == ("False", "ListenerCannotStart"), condition
        scale_set = await w.get(ARS, w.name)
        assert (scale_set.get("status") or {}).get("phase") == "Pending", scale_set.get("status")
        assert ready(scale_set).get("reason") == "ListenerCannotStart", ready(scale_set)
        return ready(scale_set)

    condition = await eventually(cannot_start, within=60.0)
    assert "ImagePullBackOff" in condition["message"]
    assert name in condition["message"]

    running = {
        **waiting,
        "ready": True,
        "state": {"running": {"startedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}},
    }
    pod = await w.get(POD, name, w.controller_namespace)
    await w.patch(pod, {"status": {"phase": "Running", "containerStatuses": [running]}}, status=True)

    async def runs() -> bool:
        scale_set = await w.get(ARS, w.name)
        assert ready(scale_set).get("status") == "True", ready(scale_set)
        return (scale_set.get("status") or {}).get("phase") == "Running"

    await eventually(runs, within=60.0)
