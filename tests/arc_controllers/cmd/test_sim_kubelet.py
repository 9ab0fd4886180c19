"""The simulated kubelet: runner pods run a job and succeed; listener pods run a process with their config."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from arc_controllers.cmd.sim import kubelet
from arc_controllers.cmd.sim.kubelet import POD, Kubelet, classify_pod
from reconcilekit.client.interfaces import Object, ObjectKey
from reconcilekit.testing import FakeClient, eventually

NS = "arc-runners"


@dataclass
class _Job:
    request_id: int


@dataclass
class _Runner:
    id: int
    name: str


@dataclass
class FakeBoard:
    jobs: list[int] = field(default_factory=lambda: [11])
    registered: list[str] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    asks: int = 0

    def register_runner(self, encoded_jit_config: str) -> _Runner:
        if encoded_jit_config != "jit-ok":
            raise ValueError("JIT config is not valid")
        self.registered.append(encoded_jit_config)
        return _Runner(1, "r")

    def take_job(self, runner_id: int) -> _Job | None:
        self.asks += 1
        if self.asks < 3 or not self.jobs:  # the first asks find nothing, as before the job is assigned
            return None
        return _Job(self.jobs.pop(0))

    def job_duration(self, request_id: int) -> float:
        return 0.05

    def complete_job(self, request_id: int, result: str = "succeeded") -> None:
        self.completed.append(request_id)
        self.results.append(result)


def _secret(name: str, data: dict[str, str], namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def _owner(kind: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": kind,
        "name": name,
        "uid": "u-" + name,
        "controller": True,
    }


def _runner_pod(name: str, jit_secret: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "ownerReferences": [_owner("EphemeralRunner", name)]},
        "spec": {
            "containers": [
                {
                    "name": "runner",
                    "image": "runner:1",
                    "env": [
                        {
                            "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
                            "valueFrom": {"secretKeyRef": {"name": jit_secret, "key": "jitToken"}},
                        }
                    ],
                }
            ]
        },
    }


BASE_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {"name": "envtest", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": "Q0E="}}
    ],
    "users": [{"name": "envtest", "user": {"client-certificate-data": "YWRtaW4=", "client-key-data": "a2V5"}}],
    "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest"}}],
    "current-context": "envtest",
}


class TokenClient(FakeClient):
    """A fake client whose API server answers TokenRequests for the ServiceAccounts in ``accounts``."""

    def __init__(self, objects: list[dict[str, Any]], accounts: set[tuple[str, str]]) -> None:
        super().__init__(objects)
        self.accounts = accounts
        self.token_requests: list[tuple[str, str, Object]] = []

    def sub_resource(self, name: str, /) -> Any:
        if name != "token":
            return super().sub_resource(name)
        outer = self

        class _Token:
            async def create(self, obj: Object, body: Object, /, **_: Any) -> Object:
                key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                if key not in outer.accounts:
                    return await FakeClient.sub_resource(outer, "token").create(obj, body)
                outer.token_requests.append((*key, body))
                return {**body, "status": {"token": f"token-of-{key[0]}-{key[1]}"}}

        return _Token()


def _kubelet(client: FakeClient, board: FakeBoard, tmp_path: Path, command: list[str] | None = None) -> Kubelet:
    return Kubelet(
        client,
        namespaces=(NS,),
        board=board,
        kubeconfig=tmp_path / "kubeconfig",
        workdir=tmp_path / "work",
        startup=lambda: 0.01,
        listener_command=command,
    )


def test_classify() -> None:
    assert classify_pod({"metadata": {"ownerReferences": [_owner("EphemeralRunner", "a")]}}) == "runner"
    assert classify_pod({"metadata": {"ownerReferences": [_owner("AutoscalingListener", "a")]}}) == "listener"
    assert classify_pod({"metadata": {}}) == "other"


async def test_runner_pod_registers_takes_a_job_and_succeeds(tmp_path: Path) -> None:
    client = FakeClient([_secret("r1", {"jitToken": "jit-ok"}), _runner_pod("r1", "r1")])
    board = FakeBoard()
    kubelet = _kubelet(client, board, tmp_path)
    await kubelet.start()
    try:

        async def succeeded() -> None:
            pod = await client.get(POD, ObjectKey(NS, "r1"))
            assert pod.get("status", {}).get("phase") == "Succeeded"
            terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
            assert terminated["exitCode"] == 0

        await eventually(succeeded, timeout=10)
    finally:
        await kubelet.stop()
    assert board.completed == [11]
    assert kubelet.counters.runners_with_job == {"r1"}
    assert client.count("patch", "Pod", subresource="status") >= 3  # Pending, Running, Succeeded


async def test_refused_jit_config_fails_the_pod(tmp_path: Path) -> None:
    client = FakeClient([_secret("r2", {"jitToken": "forged"}), _runner_pod("r2", "r2")])
    kubelet = _kubelet(client, FakeBoard(), tmp_path)
    await kubelet.start()
    try:

        async def failed() -> None:
            pod = await client.get(POD, ObjectKey(NS, "r2"))
            assert pod.get("status", {}).get("phase") == "Failed"
            assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1

        await eventually(failed, timeout=10)
    finally:
        await kubelet.stop()


async def test_deleted_runner_pod_stops_its_runner(tmp_path: Path) -> None:
    board = FakeBoard(jobs=[])
    client = FakeClient([_secret("r3", {"jitToken": "jit-ok"}), _runner_pod("r3", "r3")])
    kubelet = _kubelet(client, board, tmp_path)
    await kubelet.start()
    try:

        async def asking() -> None:
            assert board.asks >= 2

        await eventually(asking, timeout=10)
        await client.delete(await client.get(POD, ObjectKey(NS, "r3")))

        async def stopped() -> None:
            assert kubelet.counters.live_runner_pods == 0

        await eventually(stopped, timeout=10)
    finally:
        await kubelet.stop()


def _listener_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "l1",
            "namespace": NS,
            "ownerReferences": [_owner("AutoscalingListener", "l1")],
        },
        "spec": {
            "containers": [
                {
                    "name": "listener",
                    "image": "controller:dev",
                    "command": ["/ghalistener"],
                    "env": [
                        {"name": "LISTENER_CONFIG_PATH", "value": "/etc/gha-listener/config.json"},
                        {"name": "EXTRA", "value": "from-pod"},
                    ],
                    "volumeMounts": [{"name": "listener-config", "mountPath": "/etc/gha-listener"}],
                }
            ],
            "volumes": [{"name": "listener-config", "secret": {"secretName": "l1-config"}}],
            "serviceAccountName": "l1-sa",
        },
    }


async def test_listener_pod_runs_a_process_with_its_config(tmp_path: Path) -> None:
    """The process gets the pod's config and env, and a kubeconfig of the pod's ServiceAccount, not the kubelet's."""
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(BASE_KUBECONFIG))
    pod = _listener_pod()
    out = tmp_path / "seen.txt"
    script = (
        "import os, sys, pathlib; "
        f"pathlib.Path({str(out)!r}).write_text(open(os.environ['LISTENER_CONFIG_PATH']).read() + "
        "'|' + os.environ['EXTRA'] + '|' + os.environ['KUBECONFIG']); sys.exit(3)"
    )
    client = TokenClient([_secret("l1-config", {"config.json": '{"a": 1}'}), pod], accounts={(NS, "l1-sa")})
    kubelet = _kubelet(client, FakeBoard(), tmp_path, command=[sys.executable, "-c", script])
    await kubelet.start()
    try:

        async def failed() -> None:
            got = await client.get(POD, ObjectKey(NS, "l1"))
            assert got.get("status", {}).get("phase") == "Failed"
            assert got["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3

        await eventually(failed, timeout=20)
    finally:
        await kubelet.stop()
    listener_kubeconfig = tmp_path / "work" / "listeners" / "l1" / "kubeconfig"
    assert out.read_text() == f'{{"a": 1}}|from-pod|{listener_kubeconfig}'
    assert kubelet.counters.listener_starts == 1
    config = tmp_path / "work" / "listeners" / "l1" / "config.json"
    assert config.stat().st_mode & 0o777 == 0o600
    # one TokenRequest for the pod's ServiceAccount, bound to the pod, for an hour
    [(namespace, account, request)] = client.token_requests
    assert (namespace, account) == (NS, "l1-sa")
    assert request["spec"]["expirationSeconds"] == 3600
    bound = request["spec"]["boundObjectRef"]
    assert (bound["kind"], bound["name"]) == ("Pod", "l1")
    assert bound["uid"]
    # the listener's kubeconfig: the same cluster, the ServiceAccount's token and no admin credential
    assert listener_kubeconfig.stat().st_mode & 0o777 == 0o600
    written = yaml.safe_load(listener_kubeconfig.read_text())
    assert written["clusters"] == BASE_KUBECONFIG["clusters"]
    assert written["users"] == [
        {"name": f"system:serviceaccount:{NS}:l1-sa", "user": {"token": f"token-of-{NS}-l1-sa"}}
    ]
    assert written["contexts"][0]["context"]["user"] == written["users"][0]["name"] == written["current-context"]


async def test_listener_pod_without_its_service_account_waits_with_a_reason(tmp_path: Path) -> None:
    """No ServiceAccount, no token: the pod stays Pending with CreateContainerConfigError; no process runs."""
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(BASE_KUBECONFIG))
    client = TokenClient([_secret("l1-config", {"config.json": "{}"}), _listener_pod()], accounts=set())
    kubelet = _kubelet(client, FakeBoard(), tmp_path, command=[sys.executable, "-c", "raise SystemExit(0)"])
    await kubelet.start()
    try:

        async def waiting() -> None:
            got = await client.get(POD, ObjectKey(NS, "l1"))
            assert got.get("status", {}).get("phase") == "Pending"
            state = got["status"]["containerStatuses"][0]["state"]["waiting"]
            assert state["reason"] == "CreateContainerConfigError"
            assert "l1-sa" in state["message"]
            assert "not found" in state["message"]

        await eventually(waiting, timeout=10)
        # the account appears: the next attempt mints its token and starts the listener
        client.accounts.add((NS, "l1-sa"))

        async def ran() -> None:
            got = await client.get(POD, ObjectKey(NS, "l1"))
            assert got.get("status", {}).get("phase") == "Succeeded"

        await eventually(ran, timeout=10)
    finally:
        await kubelet.stop()
    assert kubelet.counters.listener_starts == 1


async def test_runner_pod_deleted_mid_job_fails_the_job(tmp_path: Path) -> None:
    board = FakeBoard()
    board.job_duration = lambda request_id: 30.0  # type: ignore[method-assign]
    client = FakeClient([_secret("r4", {"jitToken": "jit-ok"}), _runner_pod("r4", "r4")])
    kubelet = _kubelet(client, board, tmp_path)
    await kubelet.start()
    try:

        async def running_a_job() -> None:
            assert board.asks >= 3

        await eventually(running_a_job, timeout=10)
        assert kubelet.busy_runner_pods() == {"r4": (NS, 11)}
        assert kubelet.counters.runners_with_job == {"r4"}  # counted as soon as the job is taken
        await client.delete(await client.get(POD, ObjectKey(NS, "r4")))

        async def failed() -> None:
            assert board.results == ["failed"]

        await eventually(failed, timeout=10)
        assert kubelet.counters.jobs_cut == {11: "r4"}
        assert kubelet.busy_runner_pods() == {}
    finally:
        await kubelet.stop()


async def test_listener_processes_die_with_a_killed_simulator(tmp_path: Path) -> None:
    """A SIGKILLed parent (no clean-up runs) still takes its listener children with it."""
    if not kubelet._die_with_parent():
        pytest.skip("needs Linux with setpriv")
    parent = (
        "import asyncio, sys\n"
        "from arc_controllers.cmd.sim import kubelet\n"
        "async def main():\n"
        "    p = await asyncio.create_subprocess_exec(*kubelet._die_with_parent(), sys.executable, '-c',"
        " 'import time; time.sleep(60)', start_new_session=True, stdout=asyncio.subprocess.DEVNULL)\n"
        "    print(p.pid, flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", parent, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    child = int(await asyncio.wait_for(proc.stdout.readline(), 20))
    for _ in range(200):  # setpriv arms the parent-death signal before it execs: wait for the exec
        argv0 = _cmdline(child).split(b"\0", 1)[0]
        if argv0 and not argv0.endswith(b"setpriv"):
            break
        await asyncio.sleep(0.05)
    proc.kill()
    await proc.wait()
    for _ in range(200):
        if not _alive(child):
            return
        await asyncio.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    pytest.fail("the child outlived its SIGKILLed parent")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whichever process adopted it to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
