"""A real kube-apiserver and etcd for tests, started like controller-runtime's envtest.

``Environment`` starts etcd and kube-apiserver from the binaries that
``hack/envtest-assets.sh`` builds (or those named by ``TEST_ASSET_*`` and
``KUBEBUILDER_ASSETS``), with upstream's flags, RBAC on and a client-certificate
PKI, and writes an admin kubeconfig. ``USE_EXISTING_CLUSTER=true`` uses the
current kubeconfig's cluster instead. ``python -m reconcilekit.envtest`` runs one
by hand; ``reconcilekit.envtest.pytest_plugin`` gives pytest fixtures.

This package is imported by the pytest plugin in every test run, so it loads
its heavy parts (aiohttp, cryptography) only when a name is first used.

Ports: sigs.k8s.io/controller-runtime/pkg/envtest
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconcilekit.envtest._binaries import BinaryNotFoundError, default_assets_directory, find_binary
    from reconcilekit.envtest._controlplane import ControlPlane, ControlPlaneStartError
    from reconcilekit.envtest._crd import CRDInstallError
    from reconcilekit.envtest._environment import Environment
    from reconcilekit.envtest._kubeconfig import KubeconfigError
    from reconcilekit.envtest._options import EnvironmentOptions, User
    from reconcilekit.envtest._settings import parse_duration, use_existing_cluster_from_env

__all__ = [
    "BinaryNotFoundError",
    "CRDInstallError",
    "ControlPlane",
    "ControlPlaneStartError",
    "Environment",
    "EnvironmentOptions",
    "KubeconfigError",
    "User",
    "default_assets_directory",
    "find_binary",
    "parse_duration",
    "use_existing_cluster_from_env",
]

_WHERE = {
    "BinaryNotFoundError": "_binaries",
    "default_assets_directory": "_binaries",
    "find_binary": "_binaries",
    "CRDInstallError": "_crd",
    "ControlPlane": "_controlplane",
    "ControlPlaneStartError": "_controlplane",
    "Environment": "_environment",
    "EnvironmentOptions": "_options",
    "User": "_options",
    "parse_duration": "_settings",
    "use_existing_cluster_from_env": "_settings",
    "KubeconfigError": "_kubeconfig",
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562).

    Python only: keeps the auto-loaded pytest plugin cheap.
    """
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
