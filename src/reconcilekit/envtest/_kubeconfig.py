"""Kubeconfig files: the one envtest writes, and reading the user's for an existing cluster.

The harness talks to the API server itself (see `_http`), so it needs only the
server URL and the TLS material or bearer token of one context. Exec and
auth-provider plugins are not run here: with such a context the harness says so.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/testing/controlplane/kubectl.go (KubeConfigFromREST)
and, for reading, the parts of client-go's clientcmd that `config.GetConfig` relies on
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "ENVTEST_NAME",
    "ClusterAccess",
    "KubeconfigError",
    "in_cluster_access",
    "kubeconfig_paths",
    "load_kubeconfig",
    "render_kubeconfig",
]

ENVTEST_NAME = "envtest"
"""Name of the cluster, user and context in every kubeconfig envtest writes, as upstream."""

_SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(ValueError):
    """A kubeconfig is missing, malformed, or uses a credential the harness cannot use.

    Python only: clientcmd's errors, flattened into one class.
    """


@dataclass(frozen=True, slots=True)
class ClusterAccess:
    """How to reach one API server: its URL and the credentials of one user.

    Python only: the slice of a rest.Config the harness needs.
    """

    server: str
    """Base URL, e.g. ``https://127.0.0.1:6443``, without a trailing slash."""

    ca_pem: bytes | None = None
    """CA bundle (PEM) that signed the server's certificate; ``None`` means the system's."""

    client_cert_pem: bytes | None = None
    """Client certificate (PEM) for mTLS, or ``None``."""

    client_key_pem: bytes | None = field(default=None, repr=False)
    """Client private key (PEM), or ``None``. Never logged."""

    token: str | None = field(default=None, repr=False)
    """Bearer token, or ``None``. Never logged."""

    insecure_skip_tls_verify: bool = False
    """Do not verify the server's certificate (``insecure-skip-tls-verify: true``)."""

    tls_server_name: str | None = None
    """Name to verify the server's certificate against instead of the URL's host."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def render_kubeconfig(access: ClusterAccess) -> bytes:
    """Return a kubeconfig (YAML) whose only context reaches ``access.server`` as ``access``'s user.

    Cluster, user and context are all named ``envtest``, and the context is
    current. All credentials are inlined, so the file stands alone.

    Ports: controlplane.KubeConfigFromREST
    """
    cluster: dict[str, Any] = {"server": access.server}
    if access.ca_pem:
        cluster["certificate-authority-data"] = _b64(access.ca_pem)
    if access.insecure_skip_tls_verify:
        cluster["insecure-skip-tls-verify"] = True
    if access.tls_server_name:
        cluster["tls-server-name"] = access.tls_server_name
    user: dict[str, Any] = {}
    if access.client_cert_pem and access.client_key_pem:
        user["client-certificate-data"] = _b64(access.client_cert_pem)
        user["client-key-data"] = _b64(access.client_key_pem)
    if access.token:
        user["token"] = access.token
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": ENVTEST_NAME, "cluster": cluster}],
        "users": [{"name": ENVTEST_NAME, "user": user}],
        "contexts": [{"name": ENVTEST_NAME, "context": {"cluster": ENVTEST_NAME, "user": ENVTEST_NAME}}],
        "current-context": ENVTEST_NAME,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False).encode()


def kubeconfig_paths(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Return the kubeconfig files to read: ``$KUBECONFIG``'s entries, else ``~/.kube/config``.

    Ports: clientcmd.NewDefaultClientConfigLoadingRules (the ExplicitPath-less part)
    """
    env = os.environ if environ is None else environ
    listed = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return listed
    home = env.get("HOME") or str(Path.home())
    return [Path(home) / ".kube" / "config"]


def _named(items: Any, what: str, source: Path) -> dict[str, dict[str, Any]]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise KubeconfigError(f"{source}: {what} must be a list")
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            out[item["name"]] = item
    return out


def _merge(files: Sequence[tuple[Path, dict[str, Any]]]) -> tuple[dict[str, dict[str, dict[str, Any]]], str]:
    """Merge kubeconfig documents: the first file that names an entry or the current context wins.

    Ports: clientcmd.ClientConfigLoadingRules.Load's merge order
    """
    merged: dict[str, dict[str, dict[str, Any]]] = {"clusters": {}, "users": {}, "contexts": {}}
    current = ""
    for path, doc in files:
        for key in merged:
            for name, item in _named(doc.get(key), key, path).items():
                merged[key].setdefault(name, {**item, "_dir": str(path.parent)})
        if not current and isinstance(doc.get("current-context"), str):
            current = doc["current-context"]
    return merged, current


def _data(section: Mapping[str, Any], key: str, base_dir: str) -> bytes | None:
    """Return ``<key>-data`` decoded, else the file named by ``<key>`` (relative to the kubeconfig's folder).

    Ports: clientcmd's ResolvePaths and dataFromSliceOrFile
    """
    inline = section.get(f"{key}-data")
    if inline:
        return base64.b64decode(str(inline))
    named = section.get(key)
    if named:
        return (Path(base_dir) / str(named)).read_bytes()
    return None


def load_kubeconfig(
    paths: Sequence[Path] | None = None, *, context: str | None = None, environ: Mapping[str, str] | None = None
) -> ClusterAccess:
    """Read the kubeconfig files and return how to reach the chosen context's cluster (blocking).

    Args:
        paths: Files to merge; ``None`` means `kubeconfig_paths`. Missing files
            are skipped, as client-go skips them.
        context: Context to use; ``None`` means the current context.
        environ: Environment for `kubeconfig_paths`; ``None`` means ``os.environ``.

    Raises:
        KubeconfigError: no file, no such context, or a credential the harness
            cannot use (exec or auth-provider plugins).

    Ports: clientcmd.DirectClientConfig.ClientConfig, for certificates and tokens only
    """
    files: list[tuple[Path, dict[str, Any]]] = []
    for path in kubeconfig_paths(environ) if paths is None else paths:
        if not path.is_file():
            continue
        doc = yaml.safe_load(path.read_text()) or {}
        if not isinstance(doc, dict):
            raise KubeconfigError(f"{path}: not a kubeconfig (expected a mapping)")
        files.append((path, doc))
    if not files:
        looked = ", ".join(map(str, paths or kubeconfig_paths(environ)))
        raise KubeconfigError(f"no kubeconfig found (looked at {looked})")
    merged, current = _merge(files)
    name = context or current
    if not name or name not in merged["contexts"]:
        raise KubeconfigError(f"kubeconfig context {name!r} not found")
    ctx = merged["contexts"][name].get("context") or {}
    cluster_item = merged["clusters"].get(ctx.get("cluster", ""))
    if cluster_item is None:
        raise KubeconfigError(f"kubeconfig context {name!r} names an unknown cluster {ctx.get('cluster')!r}")
    cluster, cluster_dir = cluster_item.get("cluster") or {}, cluster_item["_dir"]
    user_item = merged["users"].get(ctx.get("user", ""), {"_dir": cluster_dir})
    user, user_dir = user_item.get("user") or {}, user_item["_dir"]
    if user.get("exec") or user.get("auth-provider"):
        raise KubeconfigError(
            f"kubeconfig context {name!r} authenticates with an exec or auth-provider plugin, "
            "which the envtest harness does not run; use a client certificate or a token"
        )
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (Path(user_dir) / user["tokenFile"]).read_text().strip()
    return ClusterAccess(
        server=str(cluster.get("server", "")).rstrip("/"),
        ca_pem=_data(cluster, "certificate-authority", cluster_dir),
        client_cert_pem=_data(user, "client-certificate", user_dir),
        client_key_pem=_data(user, "client-key", user_dir),
        token=token or None,
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=cluster.get("tls-server-name") or None,
    )


def in_cluster_access(environ: Mapping[str, str] | None = None) -> ClusterAccess | None:
    """Return the pod's service-account access, or ``None`` outside a pod (blocking).

    Ports: rest.InClusterConfig
    """
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    token_file = _SA_DIR / "token"
    if not host or not port or not token_file.is_file():
        return None
    if ":" in host:
        host = f"[{host}]"
    ca_file = _SA_DIR / "ca.crt"
    return ClusterAccess(
        server=f"https://{host}:{port}",
        ca_pem=ca_file.read_bytes() if ca_file.is_file() else None,
        token=token_file.read_text().strip(),
    )
