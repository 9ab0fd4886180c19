"""`Environment`: a real etcd and kube-apiserver for tests, or an existing cluster.

Start order, as upstream: PKI → etcd (ready on ``/health``) → kube-apiserver
(ready on ``/readyz``, asked with the admin certificate, since anonymous
requests can get 403 while RBAC bootstraps) → the ``default`` Namespace exists
→ CRDs installed and served. Stop order is the reverse for the processes:
kube-apiserver first (stopped together with etcd it spends a minute retrying
etcd), then etcd, then the temporary folder.

Ports: sigs.k8s.io/controller-runtime/pkg/envtest/server.go (Environment)
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import structlog

from reconcilekit.envtest._binaries import find_binary
from reconcilekit.envtest._crd import CRD, install_crds, read_crds, uninstall_crds
from reconcilekit.envtest._http import ApiSession, http_ok
from reconcilekit.envtest._kubeconfig import (
    ClusterAccess,
    KubeconfigError,
    in_cluster_access,
    kubeconfig_paths,
    load_kubeconfig,
    render_kubeconfig,
)
from reconcilekit.envtest._pki import ControlPlanePKI, generate_control_plane_pki
from reconcilekit.envtest._ports import suggest_port
from reconcilekit.envtest._process import ControlPlaneProcess, ProcessExitedError
from reconcilekit.envtest._settings import timeout_from_env, use_existing_cluster_from_env
from reconcilekit.errors import AlreadyExistsError, NotFoundError

__all__ = [
    "DEFAULT_START_TIMEOUT",
    "DEFAULT_STOP_TIMEOUT",
    "ControlPlaneStartError",
    "Environment",
    "EnvironmentOptions",
    "User",
]

DEFAULT_START_TIMEOUT = 60.0
"""Seconds one start attempt may take (upstream: 20 s per process; 2-core CI needs more)."""

DEFAULT_STOP_TIMEOUT = 20.0
"""Seconds each process gets between SIGTERM and SIGKILL, as upstream."""

_NAMESPACE_LABEL = "reconcilekit.envtest/test"
_log = structlog.get_logger(__name__)


class ControlPlaneStartError(RuntimeError):
    """The control plane did not start; the message carries the failing process's last log lines.

    Python only: upstream wraps the process error.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvironmentOptions:
    """How an `Environment` starts, which CRDs it installs, and how long it waits.

    Ports: the fields of envtest.Environment and envtest.CRDInstallOptions
    """

    crd_paths: tuple[Path, ...] = ()
    """Files or folders (non-recursive) of CRDs to install at start."""

    error_if_crd_path_missing: bool = False
    """Fail the start when a CRD path does not exist, instead of logging and skipping it."""

    crd_install_timeout: float = 30.0
    """Seconds to wait for installed CRDs to be served (upstream: 10)."""

    crd_poll_interval: float = 0.1
    """Seconds between two checks of the CRDs."""

    cleanup_crds: bool = False
    """Delete the installed CRDs at stop (upstream ``CleanUpAfterUse``); matters on an existing cluster."""

    use_existing_cluster: bool | None = None
    """Use the cluster of the current kubeconfig and start nothing; ``None`` reads ``USE_EXISTING_CLUSTER``."""

    kubeconfig_context: str | None = None
    """Kubeconfig context for an existing cluster; ``None`` reads ``ENVTEST_KUBE_CONTEXT``, else the current one."""

    binary_assets_directory: Path | None = None
    """Folder to find binaries in after ``TEST_ASSET_*`` and ``KUBEBUILDER_ASSETS``."""

    start_timeout: float | None = None
    """Seconds one start attempt may take; ``None`` reads ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT``, else 60."""

    stop_timeout: float | None = None
    """Seconds each process gets to exit on SIGTERM.

    ``None`` reads ``KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT``, else 20.
    """

    start_attempts: int = 5
    """Start attempts on fresh ports when a port turns out to be taken."""

    apiserver_args: Mapping[str, str] = field(default_factory=dict)
    """Extra or overriding kube-apiserver flags, without the leading ``--`` (upstream ``Configure()``)."""

    etcd_args: Mapping[str, str] = field(default_factory=dict)
    """Extra or overriding etcd flags, without the leading ``--``."""

    def __post_init__(self) -> None:
        if self.start_attempts < 1:
            raise ValueError("start_attempts must be at least 1")
        for name in ("crd_install_timeout", "crd_poll_interval", "start_timeout", "stop_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")


@dataclass(frozen=True, slots=True)
class User:
    """A user of the envtest control plane, authenticated by a client certificate.

    It has no RBAC grants of its own: bind Roles to `name` or one of `groups`.

    Ports: controlplane.AuthenticatedUser
    """

    name: str
    """The user name (the certificate's CN)."""

    groups: tuple[str, ...]
    """The user's groups (the certificate's O entries)."""

    kubeconfig_path: Path
    """A kubeconfig file whose current context is this user; removed at stop."""

    kubeconfig: bytes = field(repr=False)
    """The same kubeconfig, as bytes."""

    cert_data: bytes = field(repr=False)
    """The client certificate, PEM."""

    key_data: bytes = field(repr=False)
    """The client key, PEM. Never log it."""


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _flags(args: Mapping[str, str]) -> list[str]:
    return [f"--{key}={value}" for key, value in sorted(args.items())]


_help_cache: dict[Path, str] = {}


async def _help_text(binary: Path) -> str:
    """Return ``binary --help``'s output (cached per path), to probe for optional flags."""
    if binary not in _help_cache:
        proc = await asyncio.create_subprocess_exec(
            binary, "--help", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await proc.communicate()
        _help_cache[binary] = out.decode(errors="replace")
    return _help_cache[binary]


class Environment:
    """A kube-apiserver and etcd started for tests, or an existing cluster.

    Nothing starts in the constructor. Use ``async with Environment(...) as env:``
    or call `start` and `stop`. Every keyword is the `EnvironmentOptions` field
    of the same name.

    After `start`: `server`, `kubeconfig_path`, `ca_data`, `admin_cert_data`
    and `admin_key_data` describe the admin (``system:masters``) access;
    `etcd_url` and `apiserver_port` locate the processes.

    Example::

        async with Environment(crd_paths=["config/crd"]) as env:
            cfg = await kubernetes_asyncio.config.load_kube_config(str(env.kubeconfig_path))

    Ports: envtest.Environment
    """

    def __init__(
        self,
        *,
        crd_paths: Iterable[str | os.PathLike[str]] = (),
        error_if_crd_path_missing: bool = False,
        crd_install_timeout: float = 30.0,
        crd_poll_interval: float = 0.1,
        cleanup_crds: bool = False,
        use_existing_cluster: bool | None = None,
        kubeconfig_context: str | None = None,
        binary_assets_directory: str | os.PathLike[str] | None = None,
        start_timeout: float | None = None,
        stop_timeout: float | None = None,
        start_attempts: int = 5,
        apiserver_args: Mapping[str, str] | None = None,
        etcd_args: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.options = EnvironmentOptions(
            crd_paths=tuple(Path(p) for p in crd_paths),
            error_if_crd_path_missing=error_if_crd_path_missing,
            crd_install_timeout=crd_install_timeout,
            crd_poll_interval=crd_poll_interval,
            cleanup_crds=cleanup_crds,
            use_existing_cluster=use_existing_cluster,
            kubeconfig_context=kubeconfig_context,
            binary_assets_directory=Path(binary_assets_directory) if binary_assets_directory else None,
            start_timeout=start_timeout,
            stop_timeout=stop_timeout,
            start_attempts=start_attempts,
            apiserver_args=dict(apiserver_args or {}),
            etcd_args=dict(etcd_args or {}),
        )
        """The options, as given."""
        self._environ: Mapping[str, str] = dict(os.environ if environ is None else environ)
        opts = self.options
        self.use_existing_cluster = (
            opts.use_existing_cluster
            if opts.use_existing_cluster is not None
            else use_existing_cluster_from_env(self._environ)
        )
        """Whether this environment uses an existing cluster instead of starting one."""
        self._start_timeout = opts.start_timeout or timeout_from_env(
            self._environ, "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", DEFAULT_START_TIMEOUT
        )
        self._stop_timeout = opts.stop_timeout or timeout_from_env(
            self._environ, "KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", DEFAULT_STOP_TIMEOUT
        )
        self.start_durations: dict[str, float] = {}
        """Seconds each phase of the last start took: ``pki``, ``etcd``, ``kube-apiserver``, ``crds``, ``total``."""
        self._root: Path | None = None
        self._pki: ControlPlanePKI | None = None
        self._access: ClusterAccess | None = None
        self._session: ApiSession | None = None
        self._etcd: ControlPlaneProcess | None = None
        self._apiserver: ControlPlaneProcess | None = None
        self._etcd_port: int | None = None
        self._apiserver_port: int | None = None
        self._kubeconfig_path: Path | None = None
        self._installed: dict[str, CRD] = {}
        self._started = False
        self._lock = asyncio.Lock()

    # -- what a started environment exposes ------------------------------------------------

    def _require_access(self) -> ClusterAccess:
        if self._access is None:
            raise RuntimeError("the envtest Environment is not started")
        return self._access

    @property
    def server(self) -> str:
        """The API server's base URL, e.g. ``https://127.0.0.1:40123``."""
        return self._require_access().server

    @property
    def kubeconfig_path(self) -> Path:
        """A kubeconfig file for the admin user (``system:masters``), or for an existing cluster's chosen context."""
        self._require_access()
        assert self._kubeconfig_path is not None
        return self._kubeconfig_path

    @property
    def kubeconfig(self) -> bytes:
        """The contents of `kubeconfig_path`.

        Ports: Environment.KubeConfig
        """
        return render_kubeconfig(self._require_access())

    @property
    def ca_data(self) -> bytes:
        """PEM of the CA that signed the API server's serving certificate."""
        ca = self._require_access().ca_pem
        if ca is None:
            raise RuntimeError("the cluster's kubeconfig names no certificate authority")
        return ca

    @property
    def admin_cert_data(self) -> bytes:
        """PEM of the admin client certificate (CN=admin, O=system:masters)."""
        cert = self._require_access().client_cert_pem
        if cert is None:
            raise RuntimeError("the cluster's kubeconfig user has no client certificate")
        return cert

    @property
    def admin_key_data(self) -> bytes:
        """PEM of the admin client key. Never log it."""
        key = self._require_access().client_key_pem
        if key is None:
            raise RuntimeError("the cluster's kubeconfig user has no client key")
        return key

    @property
    def etcd_url(self) -> str:
        """etcd's client URL, e.g. ``http://127.0.0.1:40121``.

        Raises:
            RuntimeError: not started, or an existing cluster (whose etcd is not ours).
        """
        if self._etcd_port is None:
            raise RuntimeError("no etcd: the environment is not started or uses an existing cluster")
        return f"http://127.0.0.1:{self._etcd_port}"

    @property
    def apiserver_port(self) -> int:
        """kube-apiserver's secure port; it stays the same across `restart_apiserver`."""
        if self._apiserver_port is None:
            raise RuntimeError("no kube-apiserver: the environment is not started or uses an existing cluster")
        return self._apiserver_port

    @property
    def etcd_pid(self) -> int | None:
        """etcd's pid while it runs, else ``None``."""
        return self._etcd.pid if self._etcd is not None else None

    @property
    def apiserver_pid(self) -> int | None:
        """kube-apiserver's pid while it runs, else ``None``."""
        return self._apiserver.pid if self._apiserver is not None else None

    @property
    def temp_dir(self) -> Path:
        """The environment's temporary folder (certificates, logs, etcd data, kubeconfigs); removed at stop."""
        if self._root is None:
            raise RuntimeError("the envtest Environment is not started")
        return self._root

    # -- start ------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start etcd and kube-apiserver (or connect to an existing cluster), then install the CRDs.

        On any failure, cancellation included, everything started so far is
        stopped before the error propagates.

        Raises:
            BinaryNotFoundError: kube-apiserver or etcd is missing (the message
                says to run ``bash hack/envtest-assets.sh``).
            ControlPlaneStartError: a process exited early or was not ready in
                time, or every attempt hit a taken port.
            KubeconfigError: an existing cluster's kubeconfig cannot be used.
            CRDInstallError: a CRD file is bad or a CRD was not served in time.

        Ports: Environment.Start
        """
        if self._started:
            raise RuntimeError("the envtest Environment is already started")
        self._started = True
        began = time.monotonic()
        self.start_durations = {}
        try:
            if self.use_existing_cluster:
                await self._connect_existing()
            else:
                await self._start_control_plane()
            if self.options.crd_paths:
                phase = time.monotonic()
                await self.install_crds(self.options.crd_paths)
                self.start_durations["crds"] = time.monotonic() - phase
        except BaseException:
            await self._teardown()
            raise
        self.start_durations["total"] = time.monotonic() - began
        _log.info(
            "envtest environment started",
            server=self.server,
            existing_cluster=self.use_existing_cluster,
            seconds=round(self.start_durations["total"], 3),
        )

    def _make_root(self) -> Path:
        root = Path(tempfile.mkdtemp(prefix="envtest-"))
        (root / "pki").mkdir()
        (root / "users").mkdir()
        return root

    async def _connect_existing(self) -> None:
        """Load the existing cluster's access and write it as a standalone kubeconfig.

        Ports: Environment.Start's UseExistingCluster branch (config.GetConfig)
        """
        context = self.options.kubeconfig_context or self._environ.get("ENVTEST_KUBE_CONTEXT") or None
        paths = kubeconfig_paths(self._environ)

        def load() -> ClusterAccess:
            if any(p.is_file() for p in paths):
                return load_kubeconfig(paths, context=context)
            access = in_cluster_access(self._environ)
            if access is None:
                raise KubeconfigError(
                    "USE_EXISTING_CLUSTER=true but no kubeconfig was found at "
                    f"{', '.join(map(str, paths))} and this is not a pod"
                )
            return access

        self._access = await asyncio.to_thread(load)
        self._root = await asyncio.to_thread(self._make_root)
        self._kubeconfig_path = self._root / "kubeconfig"
        await asyncio.to_thread(_write_private, self._kubeconfig_path, render_kubeconfig(self._access))
        await self._open_session()

    async def _start_control_plane(self) -> None:
        opts = self.options
        apiserver_bin = find_binary(
            "kube-apiserver", binary_assets_directory=opts.binary_assets_directory, environ=self._environ
        )
        etcd_bin = find_binary("etcd", binary_assets_directory=opts.binary_assets_directory, environ=self._environ)
        atexit.register(self._kill_at_exit)
        phase = time.monotonic()
        self._root = await asyncio.to_thread(self._make_root)
        self._pki = await asyncio.to_thread(generate_control_plane_pki)
        await asyncio.to_thread(self._write_pki, self._pki, self._root / "pki")
        self.start_durations["pki"] = time.monotonic() - phase
        for attempt in range(1, opts.start_attempts + 1):
            try:
                await self._start_processes(etcd_bin, apiserver_bin)
                return
            except ProcessExitedError as err:
                await self._stop_processes()
                if not err.port_clash:
                    raise ControlPlaneStartError(str(err)) from err
                if attempt == opts.start_attempts:
                    raise ControlPlaneStartError(
                        f"every one of {attempt} start attempts hit a taken port; last: {err}"
                    ) from err
                _log.warning("envtest port clash, retrying on fresh ports", process=err.name, attempt=attempt)
            except TimeoutError as err:
                await self._stop_processes()
                raise ControlPlaneStartError(str(err)) from err

    @staticmethod
    def _write_pki(pki: ControlPlanePKI, directory: Path) -> None:
        """Write the PKI under upstream's file names (kube-apiserver picks apiserver.crt/.key from --cert-dir)."""
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
            _write_private(directory / name, data)

    async def _start_processes(self, etcd_bin: Path, apiserver_bin: Path) -> None:
        """One start attempt: fresh ports and etcd data, etcd, kube-apiserver, the default Namespace.

        Ports: ControlPlane.Start, Etcd.Start, APIServer.Start and Environment.Start's namespace wait
        """
        root, pki = self.temp_dir, self._pki
        assert pki is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._start_timeout
        etcd_port, peer_port, api_port = await asyncio.to_thread(
            lambda: (suggest_port(), suggest_port(), suggest_port())
        )
        data_dir = root / "etcd-data"
        await asyncio.to_thread(shutil.rmtree, data_dir, True)
        data_dir.mkdir(mode=0o700)

        etcd_url = f"http://127.0.0.1:{etcd_port}"
        etcd_args = {
            "advertise-client-urls": etcd_url,
            "data-dir": str(data_dir),
            "listen-client-urls": etcd_url,
            "listen-peer-urls": f"http://127.0.0.1:{peer_port}",
        }
        if "--unsafe-no-fsync" in await _help_text(etcd_bin):
            etcd_args["unsafe-no-fsync"] = "true"
        etcd_args.update(self.options.etcd_args)
        self._etcd_port = etcd_port
        self._etcd = ControlPlaneProcess(
            name="etcd",
            argv=[str(etcd_bin), *_flags(etcd_args)],
            log_path=root / "etcd.log",
            health_check=partial(http_ok, f"{etcd_url}/health"),
        )
        phase = time.monotonic()
        await self._etcd.start(ready_within=max(deadline - loop.time(), 0.1))
        self.start_durations["etcd"] = time.monotonic() - phase

        self._apiserver_port = api_port
        self._access = ClusterAccess(
            server=f"https://127.0.0.1:{api_port}",
            ca_pem=pki.serving_ca.ca.cert_pem,
            client_cert_pem=pki.admin.cert_pem,
            client_key_pem=pki.admin.key_pem,
        )
        self._kubeconfig_path = root / "admin.kubeconfig"
        _write_private(self._kubeconfig_path, render_kubeconfig(self._access))
        await self._open_session()
        self._apiserver = ControlPlaneProcess(
            name="kube-apiserver",
            argv=[str(apiserver_bin), *_flags(self._apiserver_flags(etcd_url, api_port))],
            log_path=root / "kube-apiserver.log",
            health_check=self._apiserver_ready,
        )
        phase = time.monotonic()
        await self._apiserver.start(ready_within=max(deadline - loop.time(), 0.1))
        self.start_durations["kube-apiserver"] = time.monotonic() - phase

    def _apiserver_flags(self, etcd_url: str, port: int) -> dict[str, str]:
        """kube-apiserver's flags: upstream's defaults plus explicit TLS files, then the user's overrides.

        Differs: ``--insecure-port=0`` is never probed for (gone since 1.24); the
        serving certificate is passed explicitly as well as found in --cert-dir.

        Ports: APIServer.defaultArgs, controlplane.APIServer's MinimalDefaults and CertAuthn.Configure
        """
        pki_dir = self.temp_dir / "pki"
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
        args.update(self.options.apiserver_args)
        return args

    async def _open_session(self) -> None:
        """(Re)open the admin session for the current access (a retried start has a new port)."""
        if self._session is not None:
            await self._session.close()
        self._session = ApiSession(self._require_access(), request_timeout=5.0)
        self._session.open()

    def _admin(self) -> ApiSession:
        if self._session is None:
            raise RuntimeError("the envtest Environment is not started")
        return self._session

    async def _apiserver_ready(self) -> bool:
        """Whether ``/readyz`` answers 200 to the admin and the ``default`` Namespace exists.

        Ports: the APIServer health check (with mTLS, as fabric8's kube-api-test) and
        Environment.Start's wait for the default Namespace
        """
        session = self._admin()
        return (
            await session.status_of("/readyz") == 200 and await session.status_of("/api/v1/namespaces/default") == 200
        )

    # -- after start -----------------------------------------------------------------------

    async def install_crds(self, paths: Iterable[str | os.PathLike[str]]) -> list[CRD]:
        """Create or update the CRDs found in ``paths`` and wait until they are served.

        Args:
            paths: Files or folders (non-recursive; ``.json``, ``.yaml``, ``.yml``;
                multi-document YAML).

        Returns:
            The CRDs read, as dicts.

        Raises:
            CRDInstallError: unreadable file, missing path (with
                ``error_if_crd_path_missing``), or not served in time.
            APIStatusError: the server refused a CRD.

        Ports: envtest.InstallCRDs
        """
        crds = await asyncio.to_thread(
            read_crds, [Path(p) for p in paths], error_if_path_missing=self.options.error_if_crd_path_missing
        )
        await install_crds(
            self._admin(), crds, max_time=self.options.crd_install_timeout, poll_interval=self.options.crd_poll_interval
        )
        for crd in crds:
            self._installed[crd["metadata"]["name"]] = crd
        return crds

    async def add_user(self, name: str, groups: Sequence[str] = ()) -> User:
        """Create a user authenticated by a client certificate (CN=``name``, O=``groups``).

        The user has no RBAC grants unless a group gives some (``system:masters``
        does). Its kubeconfig lives in the temporary folder.

        Raises:
            RuntimeError: not started, or an existing cluster (no client CA of ours).

        Ports: ControlPlane.AddUser
        """
        if self._pki is None or self._access is None:
            raise RuntimeError("add_user needs the envtest control plane's client CA (not with an existing cluster)")
        client_ca = self._pki.client_ca
        pair = await asyncio.to_thread(client_ca.new_client_cert, name, list(groups))
        access = ClusterAccess(
            server=self._access.server,
            ca_pem=self._access.ca_pem,
            client_cert_pem=pair.cert_pem,
            client_key_pem=pair.key_pem,
        )
        kubeconfig = render_kubeconfig(access)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "user"
        path = self.temp_dir / "users" / f"{safe}-{secrets.token_hex(3)}.kubeconfig"
        await asyncio.to_thread(_write_private, path, kubeconfig)
        return User(
            name=name,
            groups=tuple(groups),
            kubeconfig_path=path,
            kubeconfig=kubeconfig,
            cert_data=pair.cert_pem,
            key_data=pair.key_pem,
        )

    async def create_namespace(self, *, prefix: str = "test-") -> str:
        """Create a Namespace named ``<prefix><8 random characters>`` and return its name.

        It is labelled ``reconcilekit.envtest/test=true``. Without a
        controller-manager a deleted Namespace stays Terminating, so use a fresh
        one per test.

        Python only: the `namespace` pytest fixture's helper.
        """
        while True:
            name = f"{prefix}{secrets.token_hex(4)}"
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {_NAMESPACE_LABEL: "true"}},
            }
            try:
                await self._admin().request("POST", "/api/v1/namespaces", body=body)
            except AlreadyExistsError:
                continue
            return name

    async def delete_namespace(self, name: str) -> None:
        """Delete the Namespace ``name``; one already gone is fine.

        Python only: the `namespace` pytest fixture's helper.
        """
        try:
            await self._admin().request("DELETE", f"/api/v1/namespaces/{name}")
        except NotFoundError:
            return

    async def stop_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, then SIGKILL after the stop timeout); etcd keeps running.

        Python only: for tests of clients that must survive an API server outage.
        """
        if self._apiserver is None:
            raise RuntimeError("no kube-apiserver of ours to stop")
        async with self._lock:
            await self._apiserver.stop(grace_period=self._stop_timeout)

    async def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same etcd, port and certificates, and wait until it is ready.

        Raises:
            ControlPlaneStartError: it exited or was not ready in time (for
                example another process took its port meanwhile).

        Python only: see `stop_apiserver`.
        """
        if self._apiserver is None:
            raise RuntimeError("no kube-apiserver of ours to start")
        async with self._lock:
            try:
                await self._apiserver.start(ready_within=self._start_timeout)
            except (ProcessExitedError, TimeoutError) as err:
                raise ControlPlaneStartError(str(err)) from err

    async def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same etcd and port; return once it is ready.

        Objects stored before the restart are still there afterwards; watches
        opened before it end and must be re-established.

        Python only: see `stop_apiserver`.
        """
        await self.stop_apiserver()
        await self.start_apiserver()

    # -- stop -----------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop kube-apiserver, then etcd, then remove the temporary folder; for an existing cluster only clean up.

        With ``cleanup_crds`` the installed CRDs are deleted first. Safe to call
        twice, or after a failed start.

        Ports: Environment.Stop
        """
        if not self._started:
            return
        try:
            if self.options.cleanup_crds and self._installed and self._session is not None:
                await uninstall_crds(self._session, list(self._installed.values()))
        finally:
            await self._teardown()

    async def _stop_processes(self) -> None:
        """Stop kube-apiserver first, then etcd, as upstream.

        The other order makes kube-apiserver retry etcd for a minute before it exits.
        """
        for proc in (self._apiserver, self._etcd):
            if proc is not None and not await proc.stop(grace_period=self._stop_timeout):
                _log.warning("control-plane process had to be killed", process=proc.name)

    async def _teardown(self) -> None:
        """Close the session, stop the processes, remove the folder; if interrupted, finish without awaiting."""
        try:
            if self._session is not None:
                session, self._session = self._session, None
                await session.close()
            await self._stop_processes()
            if self._root is not None:
                await asyncio.to_thread(shutil.rmtree, self._root, True)
        except BaseException:
            self._kill_at_exit()
            raise
        finally:
            atexit.unregister(self._kill_at_exit)
            self._root = self._pki = self._access = self._kubeconfig_path = None
            self._etcd = self._apiserver = None
            self._etcd_port = self._apiserver_port = None
            self._installed = {}
            self._started = False

    def _kill_at_exit(self) -> None:
        """Last resort at interpreter exit: stop the processes and remove the folder without an event loop.

        Python only: Go's envtest has no equivalent; a forgotten `stop` must not leave processes behind.
        """
        for proc in (self._apiserver, self._etcd):
            if proc is not None:
                proc.kill_sync(grace_period=self._stop_timeout)
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
