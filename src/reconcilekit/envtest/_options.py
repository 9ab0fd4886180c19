"""The options of an `Environment`, and the users it creates.

Ports: the fields of sigs.k8s.io/controller-runtime/pkg/envtest.Environment and CRDInstallOptions
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_START_TIMEOUT", "DEFAULT_STOP_TIMEOUT", "EnvironmentOptions", "User"]

DEFAULT_START_TIMEOUT = 60.0
"""Seconds one start attempt may take (upstream: 20 s per process; 2-core CI needs more)."""

DEFAULT_STOP_TIMEOUT = 20.0
"""Seconds each process gets between SIGTERM and SIGKILL, as upstream."""


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
