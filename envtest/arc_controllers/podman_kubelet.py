"""podman as a kubelet for envtests: run an image's container the way a pod spec and a kubelet would.

`Container.run` is one ``podman run --rm`` in the foreground (its output and exit status are the
container's); `pod_container_args` turns a Pod's single container (command, env, secret volumes)
into ``podman run`` options; `service_account_mount` and `in_cluster_env` are what a kubelet
gives every pod to reach the API server. ``--runtime runc`` everywhere: crun fails on this
machine kind's hybrid cgroups (see hack/image.sh).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from reconcilekit.client import RestClient
from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.envtest import Environment
from reconcilekit.testing import eventually

from .scaleset_world import SECRET

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "Container",
    "capabilities",
    "container_exists",
    "in_cluster_env",
    "pod_container_args",
    "podman",
    "service_account_mount",
    "uid_gid",
    "write_files",
]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


async def podman(*args: str, check: bool = True) -> str:
    """Run ``podman --runtime runc ARGS`` (crun fails on hybrid cgroups here); its stdout."""
    proc = await asyncio.create_subprocess_exec(
        "podman", "--runtime", "runc", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: exit {proc.returncode}: {err.decode()[-2000:]}")
    return out.decode()


async def container_exists(name: str) -> bool:
    return bool((await podman("ps", "--all", "--quiet", "--filter", f"name=^{name}$")).strip())


@dataclass
class Container:
    """One ``podman run --rm`` in the foreground: its output is the container's, its exit status too."""

    name: str
    proc: asyncio.subprocess.Process
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    readers: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    async def run(cls, name: str, *args: str) -> Container:
        return await cls.start(name, "podman", "--runtime", "runc", "run", "--rm", f"--name={name}", *args)

    @classmethod
    async def start(cls, name: str, *argv: str) -> Container:
        """``argv`` in the foreground, its output collected line by line (`run` is podman's)."""
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        container = cls(name, proc)
        assert proc.stdout is not None
        assert proc.stderr is not None
        container.readers = [
            asyncio.create_task(container._read(proc.stdout, container.stdout)),
            asyncio.create_task(container._read(proc.stderr, container.stderr)),
        ]
        return container

    @staticmethod
    async def _read(stream: asyncio.StreamReader, into: list[str]) -> None:
        async for line in stream:
            into.append(line.decode(errors="replace").rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.stderr[-40:] + self.stdout[-40:])

    async def pid(self) -> int:
        """The container's main process on the host, once it runs."""

        async def running() -> int:  # 0 (falsy) while the container has no pid yet
            if self.proc.returncode is not None:
                await self.fail_exited("before it ran")
            with contextlib.suppress(AssertionError, ValueError):
                return int((await podman("inspect", "--format", "{{.State.Pid}}", self.name)).strip() or 0)
            return 0

        return int(await eventually(running, timeout=120))

    async def host_identity(self, pid: int) -> tuple[tuple[str, str], int]:
        """The real uid/gid and effective capabilities of the container's process ``pid`` (see `pid`).

        A container that exits between ``podman inspect`` and the read of /proc fails the test
        with its output and exit status, not with a bare FileNotFoundError.
        """
        try:
            return uid_gid(pid), capabilities(pid)
        except (FileNotFoundError, ProcessLookupError):
            await self.fail_exited("before its process could be read")

    async def fail_exited(self, when: str) -> NoReturn:
        """Fail the test with the exit status and the last lines of output (all read, within bounds)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 30)
            await asyncio.wait_for(asyncio.gather(*self.readers), 10)
        pytest.fail(f"{self.name} exited {when} (exit status {self.proc.returncode}):\n{self.output()}")

    async def stop(self, grace: float) -> tuple[int, float]:
        """SIGTERM as the kubelet sends it; the exit status and the seconds it took (SIGKILL after ``grace``)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        await podman("kill", "--signal", "TERM", self.name, check=False)
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except TimeoutError:
            await podman("kill", "--signal", "KILL", self.name, check=False)
            await self.proc.wait()
        await asyncio.gather(*self.readers)
        return int(self.proc.returncode or 0), loop.time() - started

    async def discard(self) -> None:
        """Clean-up after a failure: kill and remove whatever is left."""
        if self.proc.returncode is None:
            await podman("rm", "--force", "--time=0", self.name, check=False)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 30)
        for reader in self.readers:
            reader.cancel()


def uid_gid(pid: int) -> tuple[str, str]:
    """The real uid and gid of host process ``pid`` (from /proc)."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {line.split(":", 1)[0]: line.split()[1] for line in status if line.startswith(("Uid:", "Gid:"))}
    return fields["Uid"], fields["Gid"]


def capabilities(pid: int) -> int:
    """The effective capability set of host process ``pid``."""
    [line] = [x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("CapEff:")]
    return int(line.split()[1], 16)


def write_files(directory: Path, files: dict[str, bytes]) -> Path:
    """Files readable by the container's 65532 (a kubelet's secret volume: 0644 files)."""
    directory.mkdir(parents=True)
    directory.chmod(0o755)
    for name, data in files.items():
        (directory / name).write_bytes(data)
        (directory / name).chmod(0o644)
    return directory


def service_account_mount(directory: Path, *, token: str, ca: bytes, namespace: str) -> list[str]:
    """The kubelet's projected service-account volume: token, ca.crt and namespace, read-only."""
    files = {"token": token.encode(), "ca.crt": ca, "namespace": namespace.encode()}
    return [f"--volume={write_files(directory, files)}:{SERVICE_ACCOUNT_DIR}:ro"]


def in_cluster_env(env: Environment) -> list[str]:
    """``KUBERNETES_SERVICE_HOST/PORT``: the API server on the host (its serving cert names 127.0.0.1)."""
    return ["--env=KUBERNETES_SERVICE_HOST=127.0.0.1", f"--env=KUBERNETES_SERVICE_PORT={env.apiserver_port}"]


async def pod_container_args(client: RestClient, pod: dict[str, Any], workdir: Path) -> list[str]:
    """``podman run`` options for the pod's single container, as a kubelet would start it.

    Its command, env (values and secret keys), and secret volumes at their mount paths
    (read-only); the service-account volume is added by the caller.
    """
    [container] = pod["spec"]["containers"]
    namespace = pod["metadata"]["namespace"]
    args: list[str] = []
    for item in container.get("env") or []:
        if "value" in item:
            args.append(f"--env={item['name']}={item['value']}")
        elif ref := (item.get("valueFrom") or {}).get("secretKeyRef"):
            secret = await client.get(SECRET, ObjectKey(namespace, ref["name"]))
            args.append(f"--env={item['name']}={base64.b64decode(secret['data'][ref['key']]).decode()}")
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if mount["mountPath"] == SERVICE_ACCOUNT_DIR or "secret" not in volume:
            continue
        secret = await client.get(SECRET, ObjectKey(namespace, volume["secret"]["secretName"]))
        files = {key: base64.b64decode(value) for key, value in (secret.get("data") or {}).items()}
        args.append(f"--volume={write_files(workdir / mount['name'], files)}:{mount['mountPath']}:ro")
    [entrypoint, *rest] = container.get("command") or [""]
    if entrypoint:
        args.append(f"--entrypoint={entrypoint}")
    return [*args, container["image"], *rest, *(container.get("args") or [])]
