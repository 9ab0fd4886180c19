"""Where the API server is and how to authenticate: a REST config from a kubeconfig or the pod.

Precedence, as controller-runtime's ``GetConfig``: an explicit kubeconfig path, ``$KUBECONFIG``,
the in-cluster service account, ``~/.kube/config``. Parsing is kubernetes_asyncio's (contexts,
exec and OIDC plugins, token refresh); only this module and ``reconcilekit.client._rest`` may
import kubernetes_asyncio, and this module does so only inside `load_rest_config`, since the
package loads every generated model (+63 MiB).

Ports: sigs.k8s.io/controller-runtime/pkg/client/config (config.go), client-go rest.Config
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "RestConfig", "load_rest_config"]

_SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


class ConfigError(Exception):
    """No usable REST config: no kubeconfig found, or one that cannot be parsed.

    Python only: the one error a process start-up reports for bad cluster configuration.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class RestConfig:
    """The server's address, TLS material and credentials. Never printed with its secrets.

    Ports: rest.Config (the fields a client needs)
    """

    host: str
    """Base URL, e.g. ``https://127.0.0.1:6443``."""

    ca_file: str | None = None
    """Path to the PEM bundle that signs the server's certificate; ``None`` uses the system's."""

    cert_file: str | None = None
    """Path to the client certificate (PEM), for certificate authentication."""

    key_file: str | None = None
    """Path to the client certificate's key (PEM)."""

    verify_ssl: bool = True
    """Check the server's certificate; ``False`` only for throwaway test clusters."""

    tls_server_name: str | None = None
    """Server name to verify the certificate against, when it differs from the host."""

    bearer_token: str | None = field(default=None, repr=False)
    """A static bearer token (without the ``Bearer`` prefix)."""

    user_agent: str = "reconcilekit"
    """The User-Agent header of every request."""

    qps: float = -1.0
    """Requests per second a client may send; negative means no client-side limit (as CR's GetConfig)."""

    burst: int = 0
    """Requests a client may send at once above ``qps``."""

    source: Any = field(default=None, repr=False, compare=False)
    """kubernetes_asyncio's Configuration this config came from, whose hook refreshes tokens."""

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value now (refreshing an expiring token), or ``None``.

        Python only: the seam where kubernetes_asyncio's token refresh meets our HTTP session.
        """
        if self.source is not None:
            value = await self.source.get_api_key_with_prefix("BearerToken")
            if value:
                return str(value)
        if self.bearer_token:
            return f"Bearer {self.bearer_token}"
        return None


def _pick_source(kubeconfig: str | os.PathLike[str] | None) -> str | None:
    """The kubeconfig path to load, or ``None`` for the in-cluster service account."""
    if kubeconfig is not None:
        return os.fspath(kubeconfig)
    if env := os.environ.get("KUBECONFIG"):
        return env
    if os.environ.get("KUBERNETES_SERVICE_HOST") and _SERVICE_ACCOUNT_TOKEN.exists():
        return None
    home = Path.home() / ".kube" / "config"
    if home.exists():
        return str(home)
    raise ConfigError("no kubeconfig: pass a path, set KUBECONFIG, run in a cluster or create ~/.kube/config")


async def load_rest_config(
    kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None
) -> RestConfig:
    """Load a REST config: ``kubeconfig``, else ``$KUBECONFIG``, else in-cluster, else ``~/.kube/config``.

    Args:
        kubeconfig: path to a kubeconfig file; ``None`` looks further down the precedence.
        context: the kubeconfig context to use; ``None`` means its current-context.

    Raises:
        ConfigError: nothing found, or the file or service account is unusable.

    Ports: config.GetConfigWithContext, config.loadConfig
    """
    # Imported here, not at the top: the package loads every generated model (+63 MiB).
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config

    path = await asyncio.to_thread(_pick_source, kubeconfig)
    conf = Configuration()
    try:
        if path is None:
            load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
        else:
            await load_kube_config(config_file=path, context=context, client_configuration=conf, persist_config=False)
    except ConfigException as err:
        raise ConfigError(f"cannot load the cluster config: {err}") from err
    except OSError as err:
        raise ConfigError(f"cannot read the kubeconfig {path}: {err.strerror}") from err
    return RestConfig(
        host=str(conf.host).rstrip("/"),
        ca_file=conf.ssl_ca_cert or None,
        cert_file=conf.cert_file or None,
        key_file=conf.key_file or None,
        verify_ssl=bool(conf.verify_ssl),
        tls_server_name=conf.tls_server_name or None,
        source=conf,
    )
