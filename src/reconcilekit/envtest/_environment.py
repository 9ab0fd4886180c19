"""`Environment`: a real etcd and kube-apiserver for tests, or an existing cluster.

Start: a private temporary folder → the `ControlPlane` (PKI, etcd,
kube-apiserver, the ``default`` Namespace) → the admin kubeconfig → CRDs
installed and served. Stop: CRDs (only with ``cleanup_crds``) → the control
plane (kube-apiserver first, then etcd) → the folder. ``atexit`` and the
children's parent-death signal cover a process that never reaches `stop`; the next start
removes the folder of a process that was killed (see `_tempdir`).

Ports: sigs.k8s.io/controller-runtime/pkg/envtest/server.go (Environment)
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import structlog

from reconcilekit.envtest._binaries import find_binary
from reconcilekit.envtest._controlplane import ControlPlane, write_private
from reconcilekit.envtest._crd import CRD, install_crds, read_crds, uninstall_crds
from reconcilekit.envtest._http import ApiSession
from reconcilekit.envtest._kubeconfig import (
    ClusterAccess,
    KubeconfigError,
    in_cluster_access,
    kubeconfig_paths,
    load_kubeconfig,
    render_kubeconfig,
)
from reconcilekit.envtest._options import DEFAULT_START_TIMEOUT, DEFAULT_STOP_TIMEOUT, EnvironmentOptions, User
from reconcilekit.envtest._ports import suggest_port
from reconcilekit.envtest._settings import timeout_from_env, use_existing_cluster_from_env
from reconcilekit.envtest._tempdir import make_owned_root
from reconcilekit.errors import AlreadyExistsError, NotFoundError

__all__ = ["Environment"]

_NAMESPACE_LABEL = "reconcilekit.envtest/test"
_log = structlog.get_logger(__name__)


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
            await kubernetes_asyncio.config.load_kube_config(config_file=str(env.kubeconfig_path))
            await env.install_crds(["more/crds.yaml"])
            user = await env.add_user("alice", ["devs"])  # no RBAC grants yet

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
        _suggest_port: Callable[[], int] = suggest_port,
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
        self.control_plane: ControlPlane | None = None
        """The etcd and kube-apiserver of this environment while started; ``None`` for an existing cluster."""
        self._suggest_port = _suggest_port
        self._root: Path | None = None
        self._access: ClusterAccess | None = None
        self._session: ApiSession | None = None
        self._kubeconfig_path: Path | None = None
        self._installed: dict[str, CRD] = {}
        self._started = False
        self._lock = asyncio.Lock()

    # -- what a started environment exposes ------------------------------------------------

    def _require_access(self) -> ClusterAccess:
        if self._access is None:
            raise RuntimeError("the envtest Environment is not started")
        return self._access

    def _require_plane(self, what: str) -> ControlPlane:
        if self.control_plane is None:
            raise RuntimeError(f"{what}: the environment is not started or uses an existing cluster")
        return self.control_plane

    @property
    def server(self) -> str:
        """The API server's base URL, e.g. ``https://127.0.0.1:40123``.

        Ports: Environment.Config.Host
        """
        return self._require_access().server

    @property
    def kubeconfig_path(self) -> Path:
        """A kubeconfig file for the admin user (``system:masters``), or for an existing cluster's chosen context.

        Ports: ControlPlane.KubeCtl's kubeconfig file
        """
        self._require_access()
        if self._kubeconfig_path is None:
            raise RuntimeError("the envtest Environment is not started")
        return self._kubeconfig_path

    @property
    def kubeconfig(self) -> bytes:
        """The contents of `kubeconfig_path`.

        Ports: Environment.KubeConfig
        """
        return render_kubeconfig(self._require_access())

    @property
    def ca_data(self) -> bytes:
        """PEM of the CA that signed the API server's serving certificate.

        Ports: Environment.Config.CAData
        """
        ca = self._require_access().ca_pem
        if ca is None:
            raise RuntimeError("the cluster's kubeconfig names no certificate authority")
        return ca

    @property
    def admin_cert_data(self) -> bytes:
        """PEM of the admin client certificate (CN=admin, O=system:masters).

        Ports: Environment.Config.CertData
        """
        cert = self._require_access().client_cert_pem
        if cert is None:
            raise RuntimeError("the cluster's kubeconfig user has no client certificate")
        return cert

    @property
    def admin_key_data(self) -> bytes:
        """PEM of the admin client key. Never log it.

        Ports: Environment.Config.KeyData
        """
        key = self._require_access().client_key_pem
        if key is None:
            raise RuntimeError("the cluster's kubeconfig user has no client key")
        return key

    @property
    def etcd_url(self) -> str:
        """etcd's client URL, e.g. ``http://127.0.0.1:40121``.

        Raises:
            RuntimeError: not started, or an existing cluster (whose etcd is not ours).

        Ports: Etcd.URL
        """
        return f"http://127.0.0.1:{self._require_plane('no etcd').etcd_port}"

    @property
    def apiserver_port(self) -> int:
        """kube-apiserver's secure port; it stays the same across `restart_apiserver`.

        Ports: APIServer.SecureServing.Port
        """
        port = self._require_plane("no kube-apiserver").apiserver_port
        assert port is not None
        return port

    @property
    def etcd_pid(self) -> int | None:
        """etcd's pid while it runs, else ``None``.

        Python only: lets tests prove that nothing is left behind
        """
        plane = self.control_plane
        return plane.etcd.pid if plane is not None and plane.etcd is not None else None

    @property
    def apiserver_pid(self) -> int | None:
        """kube-apiserver's pid while it runs, else ``None``.

        Python only: lets tests prove that nothing is left behind
        """
        plane = self.control_plane
        return plane.apiserver.pid if plane is not None and plane.apiserver is not None else None

    @property
    def temp_dir(self) -> Path:
        """The environment's temporary folder (certificates, logs, etcd data, kubeconfigs); removed at stop.

        Python only: upstream has one temp dir per process
        """
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
                time (its last 50 log lines attached), or every attempt hit a taken port.
            KubeconfigError: an existing cluster's kubeconfig cannot be used.
            CRDInstallError: a CRD file is bad or a CRD was not served in time.

        Ports: Environment.Start
        """
        if self._started:
            raise RuntimeError("the envtest Environment is already started")
        self._started = True
        began = time.monotonic()
        self.start_durations = {}
        atexit.register(self._kill_at_exit)
        try:
            if self.use_existing_cluster:
                access = await self._existing_cluster_access()
            else:
                access = await self._start_control_plane()
            self._access = access
            self._kubeconfig_path = self.temp_dir / ("kubeconfig" if self.use_existing_cluster else "admin.kubeconfig")
            await asyncio.to_thread(write_private, self._kubeconfig_path, render_kubeconfig(access))
            self._session = ApiSession(access, request_timeout=10.0)
            await self._session.open()
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

    @staticmethod
    def _make_root() -> Path:
        root = make_owned_root()  # also sweeps the folders of killed processes
        (root / "users").mkdir()
        return root

    async def _existing_cluster_access(self) -> ClusterAccess:
        """Load the existing cluster's access from the kubeconfig (or the pod's service account).

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

        access = await asyncio.to_thread(load)
        self._root = await asyncio.to_thread(self._make_root)
        return access

    async def _start_control_plane(self) -> ClusterAccess:
        """Find the binaries, make the folder, start the control plane; return the admin's access.

        Ports: Environment.Start's ControlPlane branch
        """
        opts = self.options
        assets = opts.binary_assets_directory
        apiserver_binary = find_binary("kube-apiserver", binary_assets_directory=assets, environ=self._environ)
        etcd_binary = find_binary("etcd", binary_assets_directory=assets, environ=self._environ)
        self._root = await asyncio.to_thread(self._make_root)
        self.control_plane = ControlPlane(
            etcd_binary=etcd_binary,
            apiserver_binary=apiserver_binary,
            root=self._root,
            start_timeout=self._start_timeout,
            stop_timeout=self._stop_timeout,
            start_attempts=opts.start_attempts,
            apiserver_args=opts.apiserver_args,
            etcd_args=opts.etcd_args,
            _suggest_port=self._suggest_port,
        )
        await self.control_plane.start()
        self.start_durations.update(self.control_plane.durations)
        assert self.control_plane.access is not None
        return self.control_plane.access

    def _admin(self) -> ApiSession:
        if self._session is None:
            raise RuntimeError("the envtest Environment is not started")
        return self._session

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
        pki = self._require_plane("add_user needs the envtest control plane's client CA").pki
        access = self._require_access()
        assert pki is not None
        pair = await asyncio.to_thread(pki.client_ca.new_client_cert, name, list(groups))
        user_access = ClusterAccess(
            server=access.server, ca_pem=access.ca_pem, client_cert_pem=pair.cert_pem, client_key_pem=pair.key_pem
        )
        kubeconfig = render_kubeconfig(user_access)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "user"
        path = self.temp_dir / "users" / f"{safe}-{secrets.token_hex(3)}.kubeconfig"
        await asyncio.to_thread(write_private, path, kubeconfig)
        return User(
            name=name,
            groups=tuple(groups),
            kubeconfig_path=path,
            kubeconfig=kubeconfig,
            cert_data=pair.cert_pem,
            key_data=pair.key_pem,
        )

    async def create_namespace(self, *, prefix: str = "test-") -> str:
        """Create a Namespace named ``<prefix><8 random hex digits>`` and return its name.

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
        plane = self._require_plane("no kube-apiserver of ours to stop")
        async with self._lock:
            await plane.stop_apiserver()

    async def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same etcd, port and certificates, and wait until it is ready.

        Raises:
            ControlPlaneStartError: it exited or was not ready in time (for
                example another process took its port meanwhile).

        Python only: see `stop_apiserver`.
        """
        plane = self._require_plane("no kube-apiserver of ours to start")
        async with self._lock:
            await plane.start_apiserver()

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

    async def _teardown(self) -> None:
        """Close the session, stop the processes, remove the folder; if interrupted, finish without awaiting.

        Ports: Environment.Stop's process part
        """
        try:
            if self._session is not None:
                session, self._session = self._session, None
                await session.close()
            if self.control_plane is not None:
                await self.control_plane.stop()
            if self._root is not None:
                await asyncio.to_thread(shutil.rmtree, self._root, True)
        except BaseException:
            self._kill_at_exit()
            raise
        finally:
            atexit.unregister(self._kill_at_exit)
            self.control_plane = None
            self._root = self._access = self._kubeconfig_path = None
            self._installed = {}
            self._started = False

    def _kill_at_exit(self) -> None:
        """Last resort at interpreter exit: stop the processes and remove the folder without an event loop.

        Python only: Go's envtest has no equivalent; a forgotten `stop` must not leave processes behind.
        """
        if self.control_plane is not None:
            self.control_plane.kill_sync()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
