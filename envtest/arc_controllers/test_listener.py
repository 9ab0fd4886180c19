"""The listener against a real kube-apiserver and the fake Actions service.

Each test runs the whole listener (session, long poll, scaler) in-process: jobs
queued in the fake service move the EphemeralRunnerSet's replicas and patch IDs;
JobStarted promotes an EphemeralRunner to Running only when it is not being
deleted or finished; conflicts are retried from a fresh read; session faults
(409, 401, dropped polls) are handled as upstream does, with the session
deleted at exit.

The listener runs as its own ServiceAccount holding only the Role the AutoscalingListener
controller makes for it (the controller's reconcile creates the ServiceAccount, Role and
RoleBinding for the test's listener, arc-manager-helm-rbac.md §5.2), as a listener pod would;
set-up and checks use an admin client. arc-sim's kubelet gives a listener pod's process that
same identity (a TokenRequest token of the pod's ServiceAccount): the last tests pin it.
``ARC_ENVTEST_CHART_RBAC=0`` runs the listener as admin.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from chart_rbac import chart_rbac_enabled, service_account_config, service_account_kubeconfig

from arc_controllers.actions import (
    ActionsClient,
    Label,
    RetryPolicy,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerSetting,
    SessionConflictError,
    SystemInfo,
    new_client,
)
from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.cmd.sim.kubelet import Kubelet
from arc_controllers.controllers.autoscalinglistener import AutoscalingListenerReconciler
from arc_controllers.listener.app import AppError, ListenerApp, SessionClient
from arc_controllers.listener.config import ListenerConfig
from arc_controllers.listener.loop import ListenerError
from arc_controllers.resourcebuilder.listener import rules_for_listener_role
from reconcilekit.client import GroupVersionKind, Object, ObjectKey, Patch, RestClient, merge_from
from reconcilekit.client import new_client as kube
from reconcilekit.config import load_rest_config
from reconcilekit.envtest import Environment
from reconcilekit.errors import ConflictError, NotFoundError
from reconcilekit.reconcile import Request

_T = TypeVar("_T")

CRDS = Path(__file__).parents[2] / "config" / "crd"
ERS = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunnerSet")
ER = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunner")
SET_NAME = "set-abcde"
FAST_RETRY = RetryPolicy(retry_max=4, wait_min=0.01, wait_max=0.05, timeout=30.0)


@pytest.fixture(scope="session")
async def crds(envtest_environment: Environment) -> None:
    """Install ARC's CRDs once per session."""
    await envtest_environment.install_crds([CRDS])


@pytest.fixture
async def client(envtest_environment: Environment, crds: None) -> AsyncIterator[RestClient]:
    rest = await load_rest_config(envtest_environment.kubeconfig_path)
    c = kube(rest, field_owner="listener-test", register_prometheus=False)
    try:
        yield c
    finally:
        await c.close()


LISTENER_NAME = "set-abcde-listener"


ARS = GroupVersionKind("actions.github.com", "v1alpha1", "AutoscalingRunnerSet")
LISTENER = GroupVersionKind("actions.github.com", "v1alpha1", "AutoscalingListener")
SERVICE_ACCOUNT = GroupVersionKind("", "v1", "ServiceAccount")
ROLE = GroupVersionKind("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING = GroupVersionKind("rbac.authorization.k8s.io", "v1", "RoleBinding")
POD = GroupVersionKind("", "v1", "Pod")
LISTENER_FINALIZER = "autoscalinglistener.actions.github.com/finalizer"


async def _no_app_config(ars: Object) -> Any:
    raise AssertionError("the listener's RBAC is made before its config is read")


async def reconcile_listener_rbac(client: RestClient, listener: Object) -> tuple[Object, Object, Object]:
    """Run the AutoscalingListener controller for ``listener`` until its ServiceAccount, Role and RoleBinding exist.

    The real reconciler (`AutoscalingListenerReconciler.reconcile`, no manager: one request at
    a time); it stops short of the config secret and the pod, which these tests do not need.
    """
    meta = listener["metadata"]
    ars_namespace = listener["spec"]["autoscalingRunnerSetNamespace"]
    reconciler = AutoscalingListenerReconciler(client=client, app_config=_no_app_config)
    for _ in range(10):
        try:
            binding = await client.get(ROLE_BINDING, ObjectKey(ars_namespace, meta["name"]))
            break
        except NotFoundError:
            await reconciler.reconcile(Request(meta["namespace"], meta["name"]))
    else:
        raise AssertionError("the AutoscalingListener controller made no RoleBinding")
    account = await client.get(SERVICE_ACCOUNT, ObjectKey(meta["namespace"], meta["name"]))
    role = await client.get(ROLE, ObjectKey(ars_namespace, meta["name"]))
    return account, role, binding


@pytest.fixture
async def listener_account(
    envtest_environment: Environment, client: RestClient, namespace: str
) -> AsyncIterator[tuple[str, str] | None]:
    """The listener's ServiceAccount ``(namespace, name)`` bound to only its Role; None when opted out.

    Made by the AutoscalingListener controller itself (`reconcile_listener_rbac`) for a listener
    of set `SET_NAME` (spec §5.1): the ServiceAccount in a controller namespace, the Role and
    RoleBinding in the set's namespace. The listener's AutoscalingRunnerSet is created first (the
    controller deletes an orphaned listener).
    """
    if not chart_rbac_enabled():
        yield None
        return
    controller_namespace = await envtest_environment.create_namespace(prefix="arc-system-")
    await client.create(
        {
            "apiVersion": ARS.api_version,
            "kind": ARS.kind,
            "metadata": {"name": "set", "namespace": namespace},
            "spec": {
                "githubConfigUrl": "https://github.com/my-org",
                "githubConfigSecret": "github-config-secret",
                "template": {"spec": {"containers": [{"name": "runner", "image": "runner:latest"}]}},
            },
        }
    )
    listener = await client.create(
        {
            "apiVersion": LISTENER.api_version,
            "kind": LISTENER.kind,
            "metadata": {"name": LISTENER_NAME, "namespace": controller_namespace},
            "spec": {
                "githubConfigUrl": "https://github.com/my-org",
                "githubConfigSecret": "github-config-secret",
                "runnerScaleSetId": 1,
                "autoscalingRunnerSetNamespace": namespace,
                "autoscalingRunnerSetName": "set",
                "ephemeralRunnerSetName": SET_NAME,
                "maxRunners": 10,
                "minRunners": 0,
                "image": "controller:latest",
            },
        }
    )
    account, role, binding = await reconcile_listener_rbac(client, listener)
    # what the controller wrote: the listener's own Role, bound to its own ServiceAccount
    assert role["rules"] == rules_for_listener_role([SET_NAME])
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "namespace": controller_namespace, "name": account["metadata"]["name"]}
    ]
    try:
        yield controller_namespace, account["metadata"]["name"]
    finally:
        listener = await client.get(LISTENER, ObjectKey(controller_namespace, LISTENER_NAME))
        if LISTENER_FINALIZER in (listener["metadata"].get("finalizers") or []):
            base = json.loads(json.dumps(listener))
            listener["metadata"]["finalizers"] = [
                f for f in listener["metadata"]["finalizers"] if f != LISTENER_FINALIZER
            ]
            await client.patch(listener, merge_from(base))
        with contextlib.suppress(NotFoundError):
            await client.delete(listener)
        await envtest_environment.delete_namespace(controller_namespace)


@pytest.fixture
async def listener_kube(
    envtest_environment: Environment, client: RestClient, listener_account: tuple[str, str] | None
) -> AsyncIterator[RestClient]:
    """The Kubernetes client the listener runs with: its ServiceAccount's (admin when opted out)."""
    if listener_account is None:
        yield client
        return
    admin = await load_rest_config(envtest_environment.kubeconfig_path)
    account_namespace, name = listener_account
    rest = await service_account_config(client, admin, namespace=account_namespace, name=name)
    c = kube(rest, field_owner="listener-test", register_prometheus=False)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def fake() -> AsyncIterator[FakeActionsService]:
    async with FakeActionsService(poll_hold=0.3) as svc:
        yield svc


@pytest.fixture
async def actions(fake: FakeActionsService) -> AsyncIterator[ActionsClient]:
    async with new_client(
        fake.config_url(), fake.pat, system_info=SystemInfo(subsystem="ghalistener"), retry=FAST_RETRY
    ) as c:
        yield c


@pytest.fixture
async def scale_set_id(actions: ActionsClient) -> int:
    created = await actions.create_runner_scale_set(
        RunnerScaleSet(name="set", runner_group_id=1, labels=[Label(name="set")])
    )
    return created.id


class Recorder:
    """A Kubernetes client that records the listener's requests and can interleave a write."""

    def __init__(self, inner: RestClient) -> None:
        self.inner = inner
        self.log: list[tuple[str, str, Any]] = []
        self.before_status_patch: list[Callable[[], Awaitable[None]]] = []

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        self.log.append(("GET", gvk.kind, key.name))
        return await self.inner.get(gvk, key)

    async def patch(self, obj: Object, patch: Patch, /) -> Object:
        self.log.append(("PATCH", obj["kind"], json.loads(patch.data(obj))))
        return await self.inner.patch(obj, patch)

    def status(self) -> Recorder._Status:
        return Recorder._Status(self)

    class _Status:
        def __init__(self, outer: Recorder) -> None:
            self.outer = outer

        async def patch(self, obj: Object, patch: Patch, /) -> Object:
            outer = self.outer
            if outer.before_status_patch:
                await outer.before_status_patch.pop(0)()
            outer.log.append(("PATCH status", obj["metadata"]["name"], json.loads(patch.data(obj))))
            try:
                return await outer.inner.status().patch(obj, patch)
            except ConflictError:
                outer.log.append(("409", obj["metadata"]["name"], None))
                raise

    def set_patches(self) -> list[tuple[int | None, int]]:
        """(replicas, patchID) of every EphemeralRunnerSet patch, in order; replicas None means 0."""
        return [
            (p["spec"]["replicas"], p["spec"]["patchID"])
            for verb, kind, p in self.log
            if verb == "PATCH" and kind == "EphemeralRunnerSet"
        ]


def listener_config(namespace: str, scale_set_id: int, fake: FakeActionsService, **changes: Any) -> ListenerConfig:
    values: dict[str, Any] = {
        "configure_url": fake.config_url(),
        "has_credentials": True,
        "github_token": fake.pat.token,
        "ephemeral_runner_set_namespace": namespace,
        "ephemeral_runner_set_name": SET_NAME,
        "runner_scale_set_id": scale_set_id,
        "max_runners": 10,
        "min_runners": 0,
        "log_level": "debug",
        "log_format": "json",
    }
    values.update(changes)
    return ListenerConfig(**values)


async def create_runner_set(client: RestClient, namespace: str) -> Object:
    return await client.create(
        {
            "apiVersion": ERS.api_version,
            "kind": ERS.kind,
            "metadata": {"namespace": namespace, "name": SET_NAME},
            "spec": {"replicas": 0, "patchID": 0},
        }
    )


async def create_runner(
    client: RestClient, namespace: str, name: str, *, phase: str = "Pending", finalizer: bool = False
) -> Object:
    runner: Object = {
        "apiVersion": ER.api_version,
        "kind": ER.kind,
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"githubConfigUrl": "https://github.com/my-org", "githubConfigSecret": "s", "runnerScaleSetId": 1},
    }
    if finalizer:
        runner["metadata"]["finalizers"] = ["actions.github.com/test-hold"]
    runner = await client.create(runner)
    base = json.loads(json.dumps(runner))
    runner["status"] = {"phase": phase}
    return await client.status().patch(runner, merge_from(base))


async def eventually(fn: Callable[[], Awaitable[_T]], check: Callable[[_T], bool], seconds: float = 20.0) -> _T:
    """Call ``fn`` until ``check`` accepts its value; fail after ``seconds``."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        value = await fn()
        if check(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met in {seconds}s; last value: {value!r}")
        await asyncio.sleep(0.05)


class Running:
    """The listener app in a task, stopped (and awaited) on exit."""

    def __init__(self, app: ListenerApp) -> None:
        self.app = app
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Running:
        self.task = asyncio.create_task(self.app.run(), name="listener-app")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()
        with pytest.raises((asyncio.CancelledError, Exception)):
            await self.task


async def start_runner_with_job(fake: FakeActionsService, actions: ActionsClient, scale_set_id: int, name: str) -> None:
    """What a runner pod does: register with its JIT config, then take the assigned job (JobStarted)."""
    jit = await actions.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name=name), scale_set_id)
    runner = fake.register_runner(jit.encoded_jit_config)
    assert fake.take_job(runner.id) is not None


def assert_patch_id_rules(sent: list[tuple[int | None, int]], *, min_runners: int) -> None:
    """Check a whole run's patches against the scaler's rules (spec §4.2).

    Patch number i (from 0) carries ID i, except ID 0 when the set is idle: the
    target equals the previous one and minRunners. The first patch is always 0;
    a changed replica count never carries 0.
    """
    assert sent, "the listener patched the runner set"
    assert sent[0][1] == 0
    for i in range(1, len(sent)):
        (prev, _), (replicas, patch_id) = sent[i - 1], sent[i]
        if patch_id == 0:
            assert replicas == prev == (min_runners or None), f"patch {i}: 0 only when idle at minRunners: {sent}"
        else:
            assert patch_id == i, f"patch {i} carries the sequence number: {sent}"


def new_app(config: ListenerConfig, actions: ActionsClient, kube_client: Any) -> ListenerApp:
    async def open_session(scale_set_id: int, owner: str, /) -> SessionClient:
        return await actions.message_session_client(scale_set_id, owner)

    return ListenerApp(config, open_session=open_session, kube=kube_client, hostname="listener-pod")


def sessions(fake: FakeActionsService) -> list[Any]:
    return list(fake.state.sessions.values())


async def test_jobs_move_replicas_and_patch_ids(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """Queued, started and completed jobs drive (replicas, patchID) exactly as the scaler's rules say."""
    await create_runner_set(client, namespace)
    await create_runner(client, namespace, "set-abcde-runner-1")
    recorder = Recorder(listener_kube)
    config = listener_config(namespace, scale_set_id, fake, min_runners=1)
    async with Running(new_app(config, actions, recorder)):
        await eventually(lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)), lambda s: s["spec"]["patchID"] == 0)
        job_a = fake.queue_job(labels=["set"])
        fake.queue_job(labels=["set"])
        await eventually(
            lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)), lambda s: s["spec"].get("replicas") == 3
        )
        await start_runner_with_job(fake, actions, scale_set_id, "set-abcde-runner-1")
        runner = await eventually(
            lambda: client.get(ER, ObjectKey(namespace, "set-abcde-runner-1")),
            lambda r: r["status"].get("phase") == "Running",
        )
        assert runner["status"]["jobRequestId"] == job_a.request_id
        assert runner["status"]["jobRepositoryName"] == "my-org/repo"
        # The job timing fields the listener sends are stored, not pruned by the CRD schema.
        assert {"jobEventName", "jobQueuedAt", "jobScaleSetAssignedAt", "jobRunnerAssignedAt"} <= set(runner["status"])
        fake.complete_job(job_a.request_id)
        for job in list(fake.state.jobs.values()):
            if job.state != "completed":
                fake.complete_job(job.request_id, "canceled")
        final = await eventually(
            lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)),
            lambda s: s["spec"].get("replicas") == 1 and s["spec"]["patchID"] == 0,
        )
        assert final["spec"] == {"replicas": 1, "patchID": 0}

    sent = recorder.set_patches()
    assert_patch_id_rules(sent, min_runners=1)
    replicas = [r for r, _ in sent]
    assert replicas[0] == 1
    assert 3 in replicas, "two assigned jobs on top of minRunners 1"
    assert replicas[-1] == 1
    assert not sessions(fake), "the session is deleted when the listener stops"


@pytest.mark.parametrize("state", ["deleting", "Failed"])
async def test_job_started_does_not_resurrect_a_deleting_or_failed_runner(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
    state: str,
) -> None:
    """The job fields are recorded, but a runner being deleted or already Failed is never made Running."""
    await create_runner_set(client, namespace)
    name = "set-abcde-runner-2"
    if state == "deleting":
        runner = await create_runner(client, namespace, name, phase="Pending", finalizer=True)
        await client.delete(runner)
    else:
        await create_runner(client, namespace, name, phase="Failed")
    recorder = Recorder(listener_kube)
    async with Running(new_app(listener_config(namespace, scale_set_id, fake), actions, recorder)):
        fake.queue_job(labels=["set"])
        await eventually(lambda: asyncio.sleep(0, fake.statistics(scale_set_id)), lambda s: s["totalAssignedJobs"] == 1)
        await start_runner_with_job(fake, actions, scale_set_id, name)
        stored = await eventually(
            lambda: client.get(ER, ObjectKey(namespace, name)), lambda r: "jobRequestId" in r.get("status", {})
        )
    assert stored["status"]["phase"] == ("Pending" if state == "deleting" else "Failed")
    [status_patch] = [p for verb, _, p in recorder.log if verb == "PATCH status"]
    assert "phase" not in status_patch["status"]
    assert "metadata" not in status_patch
    if state == "deleting":
        base = json.loads(json.dumps(stored))
        stored["metadata"]["finalizers"] = []
        await client.patch(stored, merge_from(base))


@pytest.mark.parametrize("concurrent", ["label", "Failed"])
async def test_conflict_on_job_started_patch_is_retried_with_a_fresh_read(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
    concurrent: str,
) -> None:
    """A write between the GET and the PATCH makes the API server answer 409; the retry re-reads and re-decides."""
    await create_runner_set(client, namespace)
    name = "set-abcde-runner-3"
    await create_runner(client, namespace, name)
    recorder = Recorder(listener_kube)

    async def concurrent_write() -> None:
        current = await client.get(ER, ObjectKey(namespace, name))
        base = json.loads(json.dumps(current))
        if concurrent == "label":
            current["metadata"]["labels"] = {"touched": "yes"}
            await client.patch(current, merge_from(base))
        else:
            current["status"]["phase"] = "Failed"
            await client.status().patch(current, merge_from(base))

    recorder.before_status_patch.append(concurrent_write)
    async with Running(new_app(listener_config(namespace, scale_set_id, fake), actions, recorder)):
        fake.queue_job(labels=["set"])
        await eventually(lambda: asyncio.sleep(0, fake.statistics(scale_set_id)), lambda s: s["totalAssignedJobs"] == 1)
        await start_runner_with_job(fake, actions, scale_set_id, name)
        stored = await eventually(
            lambda: client.get(ER, ObjectKey(namespace, name)), lambda r: "jobRequestId" in r.get("status", {})
        )
    runner_calls = [
        (verb, kind if verb == "GET" else None) for verb, kind, _ in recorder.log if kind != "EphemeralRunnerSet"
    ]
    assert runner_calls == [
        ("GET", "EphemeralRunner"),
        ("PATCH status", None),
        ("409", None),
        ("GET", "EphemeralRunner"),
        ("PATCH status", None),
    ]
    assert stored["status"]["phase"] == ("Running" if concurrent == "label" else "Failed")


async def test_session_conflict_exits_without_a_session(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """Without a SessionRecovery (upstream's client default) a 409 on session create is not retried: the
    run fails at once and no ERS patch is sent. The process recovers: test_listener_recovery.py."""
    await create_runner_set(client, namespace)
    fake.inject_session_conflict()
    recorder = Recorder(listener_kube)
    with pytest.raises(AppError, match="failed to create actions message session client") as info:
        await new_app(listener_config(namespace, scale_set_id, fake), actions, recorder).run()
    assert isinstance(info.value.__cause__, SessionConflictError)
    assert fake.requests("create_session") == 1
    assert recorder.log == []
    assert not sessions(fake)


async def test_expired_queue_token_is_refreshed_once_and_polling_goes_on(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """A 401 on the long poll refreshes the session once, the poll is repeated, and jobs still scale."""
    await create_runner_set(client, namespace)
    recorder = Recorder(listener_kube)
    async with Running(new_app(listener_config(namespace, scale_set_id, fake), actions, recorder)):
        await eventually(lambda: asyncio.sleep(0, fake.requests("get_message")), lambda n: n >= 1)
        fake.expire_queue_tokens()
        await eventually(lambda: asyncio.sleep(0, fake.requests("refresh_session")), lambda n: n == 1)
        fake.queue_job(labels=["set"])
        await eventually(
            lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)), lambda s: s["spec"].get("replicas") == 1
        )
        assert fake.requests("refresh_session") == 1
    assert not sessions(fake), "the session is deleted when the listener stops"


async def test_dropped_long_poll_is_retried_then_fatal_with_the_session_deleted(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """One dropped poll is retried by the client and polling goes on; when every attempt drops, the
    listener exits with the error and deletes its session."""
    await create_runner_set(client, namespace)
    recorder = Recorder(listener_kube)
    app = new_app(listener_config(namespace, scale_set_id, fake), actions, recorder)
    task = asyncio.create_task(app.run(), name="listener-app")
    try:
        await eventually(lambda: asyncio.sleep(0, fake.requests("get_message")), lambda n: n >= 1)
        fake.inject_drop("get_message", times=1)
        fake.queue_job(labels=["set"])
        await eventually(
            lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)), lambda s: s["spec"].get("replicas") == 1
        )
        assert not task.done()
        fake.inject_drop("get_message", times=None)
        with pytest.raises(ListenerError, match="failed to get message"):
            await asyncio.wait_for(task, 30)
    finally:
        task.cancel()
        with pytest.raises((asyncio.CancelledError, ListenerError)):
            await task
    assert not sessions(fake), "the session is deleted after a fatal poll error"


async def test_arc_listener_process_stops_on_sigterm_and_deletes_its_session(
    envtest_environment: Environment,
    client: RestClient,
    listener_account: tuple[str, str] | None,
    namespace: str,
    fake: FakeActionsService,
    scale_set_id: int,
    tmp_path: Path,
) -> None:
    """The real ``arc-listener`` process patches the set, then on SIGTERM deletes its session and exits 1.

    Its ``KUBECONFIG`` carries the listener ServiceAccount's token (only the listener's Role).
    """
    await create_runner_set(client, namespace)
    process = await start_listener_process(
        envtest_environment,
        client,
        listener_account,
        _process_config(namespace, scale_set_id, fake),
        tmp_path,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await eventually(
            lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)), lambda s: s["spec"].get("replicas") == 2, 60
        )
        assert len(sessions(fake)) == 1
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 1
    assert "Application returned an error: context canceled" in stderr.decode()
    assert not sessions(fake)


class _NoJobs:
    """The runner side of arc-sim's kubelet; a listener pod never asks for it."""

    def register_runner(self, encoded_jit_config: str) -> Any:
        raise AssertionError("no runner pods here")

    def take_job(self, runner_id: int) -> Any:
        return None

    def job_duration(self, request_id: int) -> float:
        return 0.0

    def complete_job(self, request_id: int, result: str = "succeeded") -> None:
        return None


async def run_listener_pod(
    envtest_environment: Environment,
    client: RestClient,
    *,
    pod_namespace: str,
    service_account: str,
    owner_uid: str,
    config: dict[str, Any],
    workdir: Path,
) -> Kubelet:
    """A listener pod (as the AutoscalingListener controller shapes it) run by arc-sim's kubelet.

    The pod names ``service_account`` and mounts its config secret; the kubelet runs it as a real
    ``arc-listener`` process. The caller stops the returned kubelet.
    """
    name = "listener-pod"
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-config", "namespace": pod_namespace},
            "data": {"config.json": base64.b64encode(json.dumps(config).encode()).decode()},
        }
    )
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": pod_namespace,
                "ownerReferences": [
                    {
                        "apiVersion": LISTENER.api_version,
                        "kind": LISTENER.kind,
                        "name": LISTENER_NAME,
                        "uid": owner_uid,
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "serviceAccountName": service_account,
                "containers": [
                    {
                        "name": "listener",
                        "image": "controller:latest",
                        "env": [{"name": "LISTENER_CONFIG_PATH", "value": "/etc/gha-listener/config.json"}],
                        "volumeMounts": [{"name": "listener-config", "mountPath": "/etc/gha-listener"}],
                    }
                ],
                "volumes": [{"name": "listener-config", "secret": {"secretName": f"{name}-config"}}],
            },
        }
    )
    kubelet = Kubelet(
        client,
        namespaces=(pod_namespace,),
        board=_NoJobs(),
        kubeconfig=envtest_environment.kubeconfig_path,
        workdir=workdir,
        startup=lambda: 0.05,
    )
    await kubelet.start()
    return kubelet


async def whoami(kubeconfig: Path) -> str:
    """The user name the API server sees for ``kubeconfig``'s credentials (a SelfSubjectReview)."""
    c = kube(await load_rest_config(kubeconfig), field_owner="listener-test", register_prometheus=False)
    try:
        review = await c.create({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    finally:
        await c.close()
    return str(review["status"]["userInfo"]["username"])


def process_environ(pid: int) -> dict[str, str]:
    """The environment process ``pid`` was started with (Linux ``/proc``)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().partition("=")[::2] for item in raw.split(b"\0") if item)


def _process_config(namespace: str, scale_set_id: int, fake: FakeActionsService) -> dict[str, Any]:
    return {
        "configure_url": fake.config_url(),
        "github_token": fake.pat.token,
        "ephemeral_runner_set_namespace": namespace,
        "ephemeral_runner_set_name": SET_NAME,
        "runner_scale_set_id": scale_set_id,
        "max_runners": 5,
        "min_runners": 2,
        "log_level": "info",
        "log_format": "json",
    }

async def start_listener_process(
    envtest_environment: Environment,
    client: RestClient,
    listener_account: tuple[str, str] | None,
    config: dict[str, Any],
    tmp_path: Path,
    *,
    stderr: int = asyncio.subprocess.DEVNULL,
    **env: str,
) -> asyncio.subprocess.Process:
    """The real ``arc-listener`` with ``config`` and ``env``; its ``KUBECONFIG`` carries the listener
    ServiceAccount's token (only the listener's Role), or the admin's when chart RBAC is off."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    kubeconfig = envtest_environment.kubeconfig_path
    if listener_account is not None:
        account_namespace, name = listener_account
        kubeconfig = await service_account_kubeconfig(
            client, kubeconfig, tmp_path / "listener.kubeconfig", namespace=account_namespace, name=name
        )
    environ = {
        **os.environ,
        "LISTENER_CONFIG_PATH": str(path),
        "KUBECONFIG": str(kubeconfig),
        "NO_PROXY": "127.0.0.1,localhost",
        **env,
    }
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "arc_controllers.listener", env=environ, stdout=asyncio.subprocess.DEVNULL, stderr=stderr
    )



async def test_sim_kubelet_runs_the_listener_as_the_controllers_service_account(
    envtest_environment: Environment,
    client: RestClient,
    listener_account: tuple[str, str] | None,
    namespace: str,
    fake: FakeActionsService,
    scale_set_id: int,
    tmp_path: Path,
) -> None:
    """arc-sim's kubelet: the listener process authenticates as its pod's ServiceAccount, not as admin.

    The ServiceAccount, Role and RoleBinding are the AutoscalingListener controller's; with only
    them the real ``arc-listener`` scales the set to minRunners.
    """
    if listener_account is None:
        pytest.skip("ARC_ENVTEST_CHART_RBAC=0: no listener ServiceAccount")
    if not sys.platform.startswith("linux"):
        pytest.skip("reads the listener's environment from /proc")
    account_namespace, account = listener_account
    await create_runner_set(client, namespace)
    owner = await client.get(LISTENER, ObjectKey(account_namespace, LISTENER_NAME))
    kubelet = await run_listener_pod(
        envtest_environment,
        client,
        pod_namespace=account_namespace,
        service_account=account,
        owner_uid=owner["metadata"]["uid"],
        config=_process_config(namespace, scale_set_id, fake),
        workdir=tmp_path,
    )
    try:
        await eventually(
            lambda: client.get(ERS, ObjectKey(namespace, SET_NAME)), lambda s: s["spec"].get("replicas") == 2, 60
        )
        # the KUBECONFIG the running process was actually given, and who the API server says it is
        [process] = kubelet._listeners.values()
        kubeconfig = Path(process_environ(process.pid)["KUBECONFIG"])
        assert kubeconfig != envtest_environment.kubeconfig_path
        assert await whoami(kubeconfig) == f"system:serviceaccount:{account_namespace}:{account}"
        assert kubelet.counters.listener_starts == 1
    finally:
        await kubelet.stop()


async def test_sim_kubelet_listener_without_patch_rights_is_refused(
    envtest_environment: Environment,
    client: RestClient,
    namespace: str,
    fake: FakeActionsService,
    scale_set_id: int,
    tmp_path: Path,
) -> None:
    """A listener pod whose ServiceAccount may not patch EphemeralRunnerSets cannot scale the set (403)."""
    account = "listener-without-patch"
    await client.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}}
    )
    rules = [{"apiGroups": ["actions.github.com"], "resources": ["ephemeralrunnersets"], "verbs": ["get"]}]
    await client.create(
        {"apiVersion": ROLE.api_version, "kind": "Role", "metadata": {"name": account, "namespace": namespace},
         "rules": rules}
    )  # fmt: skip
    await client.create(
        {
            "apiVersion": ROLE_BINDING.api_version,
            "kind": "RoleBinding",
            "metadata": {"name": account, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "namespace": namespace, "name": account}],
        }
    )
    await create_runner_set(client, namespace)
    kubelet = await run_listener_pod(
        envtest_environment,
        client,
        pod_namespace=namespace,
        service_account=account,
        owner_uid="00000000-0000-0000-0000-000000000001",
        config=_process_config(namespace, scale_set_id, fake),
        workdir=tmp_path,
    )
    log_path = tmp_path / "listeners" / "listener-pod.log"
    try:

        async def refused() -> bool:
            text = await asyncio.to_thread(log_path.read_text) if log_path.exists() else ""
            return "forbidden" in text.lower()

        await eventually(refused, bool, 60)
    finally:
        await kubelet.stop()
    runner_set = await client.get(ERS, ObjectKey(namespace, SET_NAME))
    assert not runner_set["spec"].get("replicas"), "the set was not scaled"
    assert runner_set["spec"].get("patchID", 0) == 0
