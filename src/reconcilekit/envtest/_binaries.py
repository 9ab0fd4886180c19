"""Where the kube-apiserver and etcd binaries are found.

Lookup for each binary, first *set* source wins (as upstream, a set source that
lacks the file is an error, not a reason to look further):

1. ``TEST_ASSET_<NAME>``: the full path (``TEST_ASSET_KUBE_APISERVER``, ``TEST_ASSET_ETCD``);
2. ``$KUBEBUILDER_ASSETS/<name>``;
3. ``<binary_assets_directory>/<name>`` when that option is given;
4. this project's build cache, ``<cache>/k8s-<k8s version>-etcd-<etcd version>/<name>``, the
   folder ``hack/envtest-assets.sh`` builds into (upstream's fourth place is
   ``/usr/local/kubebuilder/bin``; nobody installs there on our machines).

Ports: sigs.k8s.io/controller-runtime/pkg/internal/testing/process/bin_path_finder.go
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BUILD_HINT",
    "DEFAULT_ETCD_VERSION",
    "DEFAULT_K8S_VERSION",
    "BinaryNotFoundError",
    "FoundBinary",
    "default_assets_directory",
    "find_binary",
    "locate_binary",
]

DEFAULT_K8S_VERSION = "v1.36.3"
"""kube-apiserver version that ``hack/envtest-assets.sh`` builds unless ``ENVTEST_K8S_VERSION`` says otherwise."""

DEFAULT_ETCD_VERSION = "v3.6.16"
"""etcd version that ``hack/envtest-assets.sh`` builds unless ``ENVTEST_ETCD_VERSION`` says otherwise."""

BUILD_HINT = "run `bash hack/envtest-assets.sh` (or `make envtest-assets`) to build kube-apiserver and etcd"
"""What every missing-binary error tells the reader to do."""


class BinaryNotFoundError(FileNotFoundError):
    """A control-plane binary is missing or not executable where the lookup pointed.

    The message names the binary, the place, which setting chose that place,
    and how to build the binaries.

    Python only: upstream fails later, when exec reports ENOENT.
    """


@dataclass(frozen=True, slots=True)
class FoundBinary:
    """Where a binary is and which setting chose that place.

    Python only: the origin makes error messages actionable.
    """

    path: Path
    """Path to the binary; it may not exist (see `find_binary`)."""

    source: str
    """What chose the path, e.g. ``"TEST_ASSET_ETCD"``, ``"KUBEBUILDER_ASSETS"``, ``"default cache"``."""


def _env_var_for(name: str) -> str:
    """Return ``TEST_ASSET_<NAME>``: upper case, every non-alphanumeric character as ``_``.

    Ports: process.BinPathFinder's environment variable naming
    """
    return "TEST_ASSET_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


def default_assets_directory(environ: Mapping[str, str] | None = None) -> Path:
    """Return the folder ``hack/envtest-assets.sh`` builds into.

    ``<ENVTEST_ASSETS_CACHE or $XDG_CACHE_HOME/reconcilekit/envtest or
    ~/.cache/reconcilekit/envtest>/k8s-<ENVTEST_K8S_VERSION>-etcd-<ENVTEST_ETCD_VERSION>``,
    with the script's defaults (v1.36.3 and v3.6.16).

    Python only: mirrors the script's cache layout.
    """
    env = os.environ if environ is None else environ
    cache = env.get("ENVTEST_ASSETS_CACHE")
    if not cache:
        xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
        cache = str(Path(xdg) / "reconcilekit" / "envtest")
    k8s = env.get("ENVTEST_K8S_VERSION") or DEFAULT_K8S_VERSION
    etcd = env.get("ENVTEST_ETCD_VERSION") or DEFAULT_ETCD_VERSION
    return Path(cache) / f"k8s-{k8s}-etcd-{etcd}"


def locate_binary(
    name: str, *, binary_assets_directory: Path | None = None, environ: Mapping[str, str] | None = None
) -> FoundBinary:
    """Return where ``name`` should be, by the lookup order of this module, without checking it.

    Empty environment variables count as unset.

    Ports: process.BinPathFinder
    """
    env = os.environ if environ is None else environ
    var = _env_var_for(name)
    if env.get(var):
        return FoundBinary(Path(env[var]), var)
    if env.get("KUBEBUILDER_ASSETS"):
        return FoundBinary(Path(env["KUBEBUILDER_ASSETS"]) / name, "KUBEBUILDER_ASSETS")
    if binary_assets_directory is not None:
        return FoundBinary(Path(binary_assets_directory) / name, "binary_assets_directory")
    return FoundBinary(default_assets_directory(env) / name, "default cache")


def find_binary(
    name: str, *, binary_assets_directory: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Return the path of the control-plane binary ``name`` (``"kube-apiserver"`` or ``"etcd"``).

    Args:
        name: The binary's file name.
        binary_assets_directory: A folder to look in after the environment
            variables (upstream's ``BinaryAssetsDirectory``).
        environ: The environment to read; ``None`` means ``os.environ``.

    Returns:
        The path of an executable file.

    Raises:
        BinaryNotFoundError: the chosen place has no executable file ``name``.

    Ports: process.BinPathFinder, with an existence check added
    """
    found = locate_binary(name, binary_assets_directory=binary_assets_directory, environ=environ)
    if not found.path.is_file():
        raise BinaryNotFoundError(f"{name} not found at {found.path} (chosen by {found.source}): {BUILD_HINT}")
    if not os.access(found.path, os.X_OK):
        raise BinaryNotFoundError(f"{name} at {found.path} (chosen by {found.source}) is not executable: {BUILD_HINT}")
    return found.path
