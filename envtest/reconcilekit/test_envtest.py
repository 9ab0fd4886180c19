"""The envtest harness against the real kube-apiserver and etcd it starts.

Checked with kubernetes_asyncio (not the project's own client, which these
tests must not depend on): the pinned version answers, CRDs install and serve
create/list/watch, client-certificate users are who their certificate says and
have no rights until RBAC grants some, kube-apiserver restarts on the same etcd,
and a stopped environment leaves no process behind.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.rest import ApiException

from reconcilekit.envtest import ControlPlaneStartError, Environment
from reconcilekit.envtest._ports import suggest_port

CRDS = Path(__file__).parent.parent / "testdata" / "crds"
GROUP, VERSION, PLURAL = "testing.reconcilekit.dev", "v1", "widgets"


async def _api_client(kubeconfig: Path) -> client.ApiClient:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.ApiClient(configuration=cfg)


@pytest.fixture
async def admin(envtest_environment: Environment) -> AsyncIterator[client.ApiClient]:
    api = await _api_client(envtest_environment.kubeconfig_path)
    async with api:
        yield api


def _widget(name: str, size: int) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}}


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


@pytest.mark.envtest_only
async def test_control_plane_reports_pinned_version(admin: client.ApiClient) -> None:
    """/version reports the kube-apiserver built by hack/envtest-assets.sh, v1.36.3."""
    info = await client.VersionApi(admin).get_code()
    assert info.git_version == "v1.36.3"


async def test_namespace_fixture_creates_a_fresh_namespace(namespace: str, admin: client.ApiClient) -> None:
    """The namespace fixture's namespace exists on the server, named test-<random> and labelled."""
    ns = await client.CoreV1Api(admin).read_namespace(namespace)
    assert namespace.startswith("test-")
    assert ns.metadata.labels["reconcilekit.envtest/test"] == "true"


async def test_crd_objects_can_be_created_listed_and_watched(
    envtest_environment: Environment, namespace: str, admin: client.ApiClient
) -> None:
    """A CRD installed after start serves create, list, and a watch that sees the ADDED event."""
    crds = await envtest_environment.install_crds([CRDS])
    assert [c["metadata"]["name"] for c in crds] == [f"{PLURAL}.{GROUP}"]
    custom = client.CustomObjectsApi(admin)

    listed = await custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert listed["items"] == []
    start_rv = listed["metadata"]["resourceVersion"]
    created = await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _widget("w1", 3))
    assert created["spec"] == {"size": 3}

    listed = await custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["w1"]

    watcher_api = await _api_client(envtest_environment.kubeconfig_path)
    w = watch.Watch()
    async with asyncio.timeout(30), watcher_api:
        stream = w.stream(
            client.CustomObjectsApi(watcher_api).list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            resource_version=start_rv,
            timeout_seconds=20,
        )
        async with stream:
            event = await stream.__anext__()
    assert event["type"] == "ADDED"
    assert event["raw_object"]["metadata"]["name"] == "w1"


async def test_crd_install_is_create_or_update(envtest_environment: Environment) -> None:
    """Installing the same CRDs twice updates them in place instead of failing."""
    await envtest_environment.install_crds([CRDS / "widgets.yaml"])
    again = await envtest_environment.install_crds([CRDS / "widgets.yaml"])
    assert len(again) == 1


@pytest.mark.envtest_only
async def test_user_without_rbac_grants_is_forbidden(envtest_environment: Environment, namespace: str) -> None:
    """A user from add_user is authenticated as its CN and O, and gets 403 without RBAC grants."""
    user = await envtest_environment.add_user("rbac-tester", ["testers"])
    api = await _api_client(user.kubeconfig_path)
    async with api:
        review = await client.AuthenticationV1Api(api).create_self_subject_review(
            client.V1SelfSubjectReview(api_version="authentication.k8s.io/v1", kind="SelfSubjectReview")
        )
        assert review.status.user_info.username == "rbac-tester"
        assert "testers" in review.status.user_info.groups
        with pytest.raises(ApiException) as raised:
            await client.CoreV1Api(api).list_namespaced_config_map(namespace)
    assert raised.value.status == 403


@pytest.mark.envtest_only
async def test_admin_is_system_masters(admin: client.ApiClient) -> None:
    """The environment's own kubeconfig is the admin user in system:masters."""
    review = await client.AuthenticationV1Api(admin).create_self_subject_review(
        client.V1SelfSubjectReview(api_version="authentication.k8s.io/v1", kind="SelfSubjectReview")
    )
    assert review.status.user_info.username == "admin"
    assert "system:masters" in review.status.user_info.groups


@pytest.mark.envtest_only
async def test_own_environment_restarts_apiserver_and_leaves_no_process(tmp_path: Path) -> None:
    """CRDs given at start are served; a restarted kube-apiserver keeps port and data; stop kills both processes."""
    env = Environment(crd_paths=[CRDS])
    async with env:
        etcd_pid, apiserver_pid = env.etcd_pid, env.apiserver_pid
        assert etcd_pid is not None
        assert apiserver_pid is not None
        assert _alive(etcd_pid)
        assert _alive(apiserver_pid)
        port = env.apiserver_port
        api = await _api_client(env.kubeconfig_path)
        async with api:
            ns = await env.create_namespace()
            custom = client.CustomObjectsApi(api)
            await custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, _widget("kept", 1))

            await env.restart_apiserver()

            assert env.apiserver_port == port
            assert env.etcd_pid == etcd_pid
            assert env.apiserver_pid not in (None, apiserver_pid)
            assert not _alive(apiserver_pid)
            kept = await custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "kept")
            assert kept["spec"] == {"size": 1}
            restarted_pid = env.apiserver_pid
        temp_dir = env.temp_dir
    assert restarted_pid is not None
    assert not _alive(etcd_pid)
    assert not _alive(restarted_pid)
    assert not temp_dir.exists()


@pytest.mark.envtest_only
async def test_apiserver_that_exits_early_fails_fast_with_its_log() -> None:
    """A kube-apiserver that rejects its flags fails the start at once with its last log lines, and etcd is stopped."""
    env = Environment(apiserver_args={"no-such-flag": "1"})
    with pytest.raises(ControlPlaneStartError, match="no-such-flag"):
        await env.start()
    assert env.etcd_pid is None
    with pytest.raises(RuntimeError):
        _ = env.temp_dir


async def test_existing_cluster_mode_starts_nothing_and_never_stops_the_cluster(
    envtest_environment: Environment, admin: client.ApiClient, tmp_path: Path
) -> None:
    """USE_EXISTING_CLUSTER uses the kubeconfig's cluster, still installs CRDs, and leaves the cluster running."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_bytes(envtest_environment.kubeconfig_path.read_bytes())
    existing = Environment(crd_paths=[CRDS], environ={"USE_EXISTING_CLUSTER": "True", "KUBECONFIG": str(kubeconfig)})
    async with existing:
        assert existing.use_existing_cluster
        assert existing.server == envtest_environment.server
        assert existing.etcd_pid is None
        assert existing.apiserver_pid is None
        with pytest.raises(RuntimeError):
            await existing.add_user("nobody")
    info = await client.VersionApi(admin).get_code()
    assert info.git_version.startswith("v1.")


@pytest.mark.envtest_only
async def test_port_clash_is_retried_on_fresh_ports() -> None:
    """When etcd's port turns out to be taken, the whole start is retried on fresh ports."""
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        handed: list[int] = []

        def suggest() -> int:
            port = taken if not handed else suggest_port()
            handed.append(port)
            return port

        async with Environment(_suggest_port=suggest) as env:
            assert env.etcd_url != f"http://127.0.0.1:{taken}"
            assert len(handed) == 6  # two attempts of three ports each
            assert (env.temp_dir / "etcd.log").exists()


# The child takes Ctrl-C as a terminal's foreground process does. A suite started in the
# background by a shell without job control (`nohup make test &`) inherits SIGINT ignored,
# and Python then installs no KeyboardInterrupt handler: the child would sit through the
# SIGINT below and the test would time out whatever envtest does.
_CHILD = """
import asyncio
import signal
from reconcilekit.envtest import Environment

signal.signal(signal.SIGINT, signal.default_int_handler)

async def main():
    async with Environment() as env:
        print("PIDS", env.etcd_pid, env.apiserver_pid, env.temp_dir, flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def _child_with_control_plane() -> tuple[asyncio.subprocess.Process, int, int, Path]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CHILD, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert child.stdout is not None
    async with asyncio.timeout(120):
        while not (line := (await child.stdout.readline()).decode()).startswith("PIDS"):
            assert line, "the child exited before its control plane started"
    _, etcd, apiserver, temp_dir = line.split()
    return child, int(etcd), int(apiserver), Path(temp_dir)


async def _gone(*pids: int) -> bool:
    """Whether all ``pids`` are gone within 60 s."""
    for _ in range(600):
        if not any(_alive(p) for p in pids):
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.mark.envtest_only
async def test_ctrl_c_stops_the_control_plane() -> None:
    """SIGINT to a process inside `async with Environment()` stops etcd and kube-apiserver and removes the folder."""
    child, etcd, apiserver, temp_dir = await _child_with_control_plane()
    child.send_signal(signal.SIGINT)
    async with asyncio.timeout(60):
        await child.wait()
    assert await _gone(etcd, apiserver)
    assert not temp_dir.exists()


@pytest.mark.envtest_only
async def test_killed_runner_leaves_no_control_plane_behind() -> None:
    """SIGKILL to the Python process (no atexit, no finally) still takes etcd and kube-apiserver down,
    and the next start removes the folder it left (its owner process is gone)."""
    child, etcd, apiserver, temp_dir = await _child_with_control_plane()
    child.kill()
    await child.wait()
    try:
        assert await _gone(etcd, apiserver)
        assert temp_dir.exists()  # nothing of the killed process could remove it
        assert (temp_dir / "owner").exists()
        async with Environment() as env:
            assert env.temp_dir.exists()
            assert not temp_dir.exists()
        leftovers = [p for p in temp_dir.parent.glob("envtest-*") if p.name == temp_dir.name]
        print(f"\nfolders of the killed process left after the next start: {len(leftovers)}")
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.envtest_only
async def test_cancelled_start_leaves_no_process() -> None:
    """Cancelling start() while kube-apiserver is coming up stops etcd and kube-apiserver and removes the folder."""
    env = Environment()
    starting = asyncio.create_task(env.start(), name="envtest-start-under-test")
    try:
        for _ in range(600):
            if env.apiserver_pid is not None:
                break
            await asyncio.sleep(0.05)
        etcd, apiserver, temp_dir = env.etcd_pid, env.apiserver_pid, env.temp_dir
    finally:
        starting.cancel()
        try:
            with pytest.raises(asyncio.CancelledError):
                await starting
        finally:
            await env.stop()  # a no-op unless start() won the race
    assert etcd is not None
    assert apiserver is not None
    assert await _gone(etcd, apiserver)
    assert not temp_dir.exists()
