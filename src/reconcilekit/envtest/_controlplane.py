"""etcd and kube-apiserver on loopback ports, sharing one temporary folder and one PKI.

Start: PKI → etcd (ready on ``/health``) → kube-apiserver (ready when
``/readyz`` answers 200 to the admin certificate, since anonymous requests can
get 403 while RBAC bootstraps, and the ``default`` Namespace exists). A start
that hits a taken port is retried whole on fresh ports. Stop: kube-apiserver
first (stopped together with etcd it spends a minute retrying etcd), then etcd.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/testing/controlplane/plane.go (ControlPlane),
apiserver.go, etcd.go and auth.go
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

import structlog

from reconcilekit.envtest._http import ApiSession, http_ok
from reconcilekit.envtest._kubeconfig import ClusterAccess
from reconcilekit.envtest._pki import ControlPlanePKI, generate_control_plane_pki
from reconcilekit.envtest._ports import suggest_port
from reconcilekit.envtest._process import ControlPlaneProcess, ProcessExitedError

__all__ = ["ControlPlane", "ControlPlaneStartError", "write_private"]

_log = structlog.get_logger(__name__)


class ControlPlaneStartError(RuntimeError):
    """The control plane did not start; the message carries the failing process's last log lines.

    Python only: upstream wraps the process error.
    """


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by the owner only (keys, kubeconfigs); blocking.

    Python only
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _flags(args: Mapping[str, str]) -> list[str]:
    return [f"--{key}={value}" for key, value in sorted(args.items())]


def _write_pki(pki: ControlPlanePKI, directory: Path) -> None:
    """Write the PKI under upstream's file names (kube-apiserver also finds apiserver.crt/.key in --cert-dir).

    Ports: the file writing of CertAuthn.Start and APIServer.setProcessState
    """
    directory.mkdir(exist_ok=True)
    files = {
        "apiserver-ca.crt": pki.serving_ca.ca.cert_pem,
        "apiserver.crt": pki.serving.cert_pem,
        "apiserver.key": pki.serving.key_pem,
        "client-cert-auth-ca.crt": pki.client_ca.ca.cert_pem,
        "sa-signer.crt": pki.service_account_signer.cert_pem,
        "sa-signer.key": pki.service_account_signer.key_pem,
        "admin.crt": pki.admin.cert_pem,
        "admin.key": pki.admin.key_pem,
    }
    for name, data in files.items():
        write_private(directory / name, data)


def _fresh_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)


_help_cache: dict[Path, str] = {}


async def _help_text(binary: Path) -> str:
    """Return ``binary --help``'s output (cached per path), to probe for optional flags.

    Ports: process.Arguments' flag probing (e.g. etcd's --unsafe-no-fsync)
    """
    if binary not in _help_cache:
        proc = await asyncio.create_subprocess_exec(
            binary, "--help", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await proc.communicate()
        _help_cache[binary] = out.decode(errors="replace")
    return _help_cache[binary]


class ControlPlane:
    """etcd plus kube-apiserver, started and stopped together, in the folder ``root``.

    Args:
        etcd_binary: Path of etcd.
        apiserver_binary: Path of kube-apiserver.
        root: An existing private folder for certificates, data and logs.
        start_timeout: Seconds one start attempt may take, both processes together.
        stop_timeout: Seconds each process gets between SIGTERM and SIGKILL.
        start_attempts: Attempts on fresh ports when a port turns out to be taken.
        apiserver_args: Extra or overriding kube-apiserver flags (no leading ``--``).
        etcd_args: Extra or overriding etcd flags.
        _suggest_port: Test seam: returns a free port (default: `suggest_port`).

    Ports: controlplane.ControlPlane
    """

    def __init__(
        self,
        *,
        etcd_binary: Path,
        apiserver_binary: Path,
        root: Path,
        start_timeout: float,
        stop_timeout: float,
        start_attempts: int = 5,
        apiserver_args: Mapping[str, str] | None = None,
        etcd_args: Mapping[str, str] | None = None,
        _suggest_port: Callable[[], int] = suggest_port,
    ) -> None:
        self._etcd_binary = etcd_binary
        self._apiserver_binary = apiserver_binary
        self._root = root
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._start_attempts = start_attempts
        self._apiserver_args = dict(apiserver_args or {})
        self._etcd_args = dict(etcd_args or {})
        self._suggest_port = _suggest_port
        self.pki: ControlPlanePKI | None = None
        """The certificates, once `start` generated them."""
        self.access: ClusterAccess | None = None
        """The admin's access to kube-apiserver, once started."""
        self.etcd: ControlPlaneProcess | None = None
        self.apiserver: ControlPlaneProcess | None = None
        self.etcd_port: int | None = None
        self.apiserver_port: int | None = None
        self.durations: dict[str, float] = {}
        """Seconds of each start phase: ``pki``, ``etcd``, ``kube-apiserver``."""
        self._session: ApiSession | None = None

    async def start(self) -> None:
        """Generate the PKI, then start etcd and kube-apiserver; retry on fresh ports after a port clash.

        Raises:
            ControlPlaneStartError: a process exited early (its last 50 log
                lines attached), was not ready in time, or every attempt hit a
                taken port. Nothing is left running.

        Ports: ControlPlane.Start (with upstream's five attempts)
        """
        phase = time.monotonic()
        self.pki = await asyncio.to_thread(generate_control_plane_pki)
        await asyncio.to_thread(_write_pki, self.pki, self._root / "pki")
        self.durations["pki"] = time.monotonic() - phase
        for attempt in range(1, self._start_attempts + 1):
            try:
                await self._start_once(self.pki)
                return
            except ProcessExitedError as err:
                await self.stop()
                if not err.port_clash:
                    raise ControlPlaneStartError(str(err)) from err
                if attempt == self._start_attempts:
                    raise ControlPlaneStartError(f"all {attempt} start attempts hit a taken port; last: {err}") from err
                _log.warning("envtest port clash, retrying on fresh ports", process=err.name, attempt=attempt)
            except TimeoutError as err:
                await self.stop()
                raise ControlPlaneStartError(str(err)) from err
            except BaseException:
                await self.stop()
                raise

    async def _start_once(self, pki: ControlPlanePKI) -> None:
        """One attempt: fresh ports and etcd data, then etcd, then kube-apiserver.

        Ports: Etcd.Start and APIServer.Start
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._start_timeout
        etcd_port, peer_port, api_port = await asyncio.to_thread(
            lambda: (self._suggest_port(), self._suggest_port(), self._suggest_port())
        )
        data_dir = self._root / "etcd-data"
        await asyncio.to_thread(_fresh_dir, data_dir)
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self.etcd_port = etcd_port
        self.etcd = ControlPlaneProcess(
            name="etcd",
            argv=[str(self._etcd_binary), *_flags(await self._etcd_flags(etcd_url, peer_port, data_dir))],
            log_path=self._root / "etcd.log",
            health_check=partial(http_ok, f"{etcd_url}/health"),
        )
        phase = time.monotonic()
        await self.etcd.start(ready_within=max(deadline - loop.time(), 0.1))
        self.durations["etcd"] = time.monotonic() - phase

        self.apiserver_port = api_port
        self.access = ClusterAccess(
            server=f"https://127.0.0.1:{api_port}",
            ca_pem=pki.serving_ca.ca.cert_pem,
            client_cert_pem=pki.admin.cert_pem,
            client_key_pem=pki.admin.key_pem,
        )
        await self._close_session()
        self._session = ApiSession(self.access, request_timeout=5.0)
        await self._session.open()
        self.apiserver = ControlPlaneProcess(
            name="kube-apiserver",
            argv=[str(self._apiserver_binary), *_flags(self._apiserver_flags(etcd_url, api_port))],
            log_path=self._root / "kube-apiserver.log",
            health_check=self._apiserver_ready,
        )
        phase = time.monotonic()
        await self.apiserver.start(ready_within=max(deadline - loop.time(), 0.1))
        self.durations["kube-apiserver"] = time.monotonic() - phase

    async def _etcd_flags(self, etcd_url: str, peer_port: int, data_dir: Path) -> dict[str, str]:
        """etcd's flags as upstream, with ``--unsafe-no-fsync`` when this etcd knows it.

        Ports: Etcd.setProcessState's defaults
        """
        args = {
            "advertise-client-urls": etcd_url,
            "data-dir": str(data_dir),
            "listen-client-urls": etcd_url,
            "listen-peer-urls": f"http://127.0.0.1:{peer_port}",
        }
        if "--unsafe-no-fsync" in await _help_text(self._etcd_binary):
            args["unsafe-no-fsync"] = "true"
        args.update(self._etcd_args)
        return args

    def _apiserver_flags(self, etcd_url: str, port: int) -> dict[str, str]:
        """kube-apiserver's flags: upstream's defaults plus explicit TLS files, then the user's overrides.

        Ports: APIServer.defaultArgs, MinimalDefaults and CertAuthn.Configure
        Differs: ``--insecure-port=0`` is never probed for (gone since 1.24); the
        serving certificate is passed explicitly as well as found in --cert-dir.
        """
        pki_dir = self._root / "pki"
        args = {
            "allow-privileged": "true",
            "authorization-mode": "RBAC",
            "bind-address": "127.0.0.1",
            "cert-dir": str(pki_dir),
            "client-ca-file": str(pki_dir / "client-cert-auth-ca.crt"),
            "disable-admission-plugins": "ServiceAccount",
            "etcd-servers": etcd_url,
            "secure-port": str(port),
            "service-account-issuer": f"https://127.0.0.1:{port}/",
            "service-account-key-file": str(pki_dir / "sa-signer.crt"),
            "service-account-signing-key-file": str(pki_dir / "sa-signer.key"),
            "service-cluster-ip-range": "10.0.0.0/24",
            "tls-cert-file": str(pki_dir / "apiserver.crt"),
            "tls-private-key-file": str(pki_dir / "apiserver.key"),
        }
        args.update(self._apiserver_args)
        return args

    async def _apiserver_ready(self) -> bool:
        """Whether ``/readyz`` answers 200 to the admin and the ``default`` Namespace exists.

        Ports: the APIServer health check (with mTLS, as fabric8's kube-api-test does) and
        Environment.Start's wait for the default Namespace
        """
        session = self._session
        if session is None:
            return False
        return await session.status_of("/readyz") == 200 and (
            await session.status_of("/api/v1/namespaces/default") == 200
        )

    async def stop_apiserver(self) -> None:
        """Stop kube-apiserver only; etcd keeps running.

        Python only: for tests of clients that must survive an API server outage.
        """
        if self.apiserver is None:
            raise RuntimeError("no kube-apiserver of ours to stop")
        await self.apiserver.stop(grace_period=self._stop_timeout)

    async def start_apiserver(self) -> None:
        """Start kube-apiserver again with the same flags, port and certificates; return once ready.

        Raises:
            ControlPlaneStartError: it exited or was not ready in time (e.g.
                another process took its port meanwhile).

        Python only: see `stop_apiserver`.
        """
        if self.apiserver is None:
            raise RuntimeError("no kube-apiserver of ours to start")
        try:
            await self.apiserver.start(ready_within=self._start_timeout)
        except (ProcessExitedError, TimeoutError) as err:
            raise ControlPlaneStartError(str(err)) from err

    async def _close_session(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def stop(self) -> None:
        """Stop kube-apiserver, then etcd (each SIGTERM, then SIGKILL after the stop timeout).

        Safe to call twice or after a failed start. The folder is the caller's.

        Ports: ControlPlane.Stop
        """
        await self._close_session()
        for proc in (self.apiserver, self.etcd):
            if proc is not None and not await proc.stop(grace_period=self._stop_timeout):
                _log.warning("control-plane process had to be killed", process=proc.name)

    def kill_sync(self) -> None:
        """Stop both processes without an event loop (for ``atexit``).

        Python only
        """
        for proc in (self.apiserver, self.etcd):
            if proc is not None:
                proc.kill_sync(grace_period=self._stop_timeout)
