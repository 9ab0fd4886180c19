"""Where the API server is and how to authenticate: a REST config from a kubeconfig or the pod.

Precedence, as controller-runtime's ``GetConfig``: an explicit kubeconfig path, ``$KUBECONFIG``,
the in-cluster service account, ``~/.kube/config``.

Two loaders. Kubeconfigs with client certificates, a token or token file, basic auth or an
``exec`` credential plugin, and the in-cluster service account, are read here directly; token
files and exec plugins refresh while the client runs (`reconcilekit.credentials`: a token
file is re-read every minute and after a 401, a plugin runs again before its credential
expires and after a 401). ``auth-provider`` plugins (legacy OIDC, cloud logins) go through
kubernetes_asyncio's loader, whose token refresh the client then calls. Only this module may
import kubernetes_asyncio, and only for that case: the package loads every generated model
(about +63 MiB of RSS), which a controller on a service account never needs.

Ports: sigs.k8s.io/controller-runtime/pkg/client/config (config.go), client-go rest.Config and
clientcmd's loading rules (the parts a controller meets)
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconcilekit.credentials import CredentialError, ExecPlugin, TokenFile

__all__ = ["ConfigError", "RestConfig", "load_rest_config"]

_SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


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

    ca_data: str | None = None
    """The same bundle as PEM text (wins over `ca_file`)."""

    cert_file: str | None = None
    """Path to the client certificate (PEM), for certificate authentication."""

    key_file: str | None = None
    """Path to the client certificate's key (PEM)."""

    cert_data: bytes | None = field(default=None, repr=False)
    """The client certificate as PEM bytes (wins over `cert_file`)."""

    key_data: bytes | None = field(default=None, repr=False)
    """The client certificate's key as PEM bytes (wins over `key_file`)."""

    verify_ssl: bool = True
    """Check the server's certificate; ``False`` only for throwaway test clusters."""

    tls_server_name: str | None = None
    """Server name to verify the certificate against, when it differs from the host."""

    proxy: str | None = None
    """URL of an HTTP proxy to reach the server through (kubeconfig ``proxy-url``).

    Differs: client-go also honours ``HTTPS_PROXY``/``NO_PROXY`` from the environment; set this instead.
    """

    bearer_token: str | None = field(default=None, repr=False)
    """A static bearer token (without the ``Bearer`` prefix)."""

    token_file: str | None = None
    """A file holding the bearer token, re-read every minute and after a 401 (wins over `bearer_token`)."""

    exec_plugin: ExecPlugin | None = field(default=None, repr=False, compare=False)
    """The kubeconfig's exec credential plugin, run again before its token expires and after a 401
    (wins over `token_file`)."""

    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    """User name and password for HTTP basic authentication."""

    user_agent: str = "reconcilekit"
    """The User-Agent header of every request."""

    qps: float = -1.0
    """Requests per second a client may send per resource (one token bucket each, as CR's
    per-GVK REST clients); zero or negative means no client-side limit (CR's GetConfig default)."""

    burst: int = 0
    """Requests a client may send at once per resource before ``qps`` applies (at least 1)."""

    source: Any = field(default=None, repr=False, compare=False)
    """kubernetes_asyncio's Configuration this config came from (auth-provider only), whose hook refreshes tokens."""

    _token_file: TokenFile | None = field(default=None, repr=False, compare=False, init=False)

    def __post_init__(self) -> None:
        if not self.host.startswith(("https://", "http://")):
            raise ConfigError(f"the server URL must start with https:// or http://, not {self.host!r}")
        if self.token_file:
            object.__setattr__(self, "_token_file", TokenFile(self.token_file))

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value now (refreshing an expiring token), or ``None``.

        Python only: the seam where token refresh meets our HTTP session.
        """
        if self.source is not None:
            value = await self.source.get_api_key_with_prefix("BearerToken")
            if value:
                return str(value)
        if self.exec_plugin is not None:
            header = await self.exec_plugin.authorization()
            if header:
                return header
        if self._token_file is not None:
            return await self._token_file.authorization()
        if self.bearer_token:
            return f"Bearer {self.bearer_token}"
        if self.basic_auth is not None:
            pair = f"{self.basic_auth[0]}:{self.basic_auth[1]}".encode()
            return f"Basic {base64.b64encode(pair).decode()}"
        return None

    def invalidate_authorization(self, used: str | None) -> None:
        """The server answered 401 to a request sent with ``used``: the next `authorization` refreshes.

        Python only: client-go's exec round tripper and ResettableTokenSource react to 401 the same way.
        """
        if self.exec_plugin is not None:
            self.exec_plugin.invalidate(used)
        if self._token_file is not None:
            self._token_file.invalidate(used)


# -- choosing and reading a source ----------------------------------------------------------


def _pick_source(kubeconfig: str | os.PathLike[str] | None) -> list[Path] | None:
    """The kubeconfig files to merge, or ``None`` for the in-cluster service account."""
    if kubeconfig is not None:
        return [Path(kubeconfig)]
    if env := os.environ.get("KUBECONFIG"):
        return [Path(p) for p in env.split(os.pathsep) if p]
    if os.environ.get("KUBERNETES_SERVICE_HOST") and (_SERVICE_ACCOUNT / "token").exists():
        return None
    home = Path.home() / ".kube" / "config"
    if home.exists():
        return [home]
    raise ConfigError("no kubeconfig: pass a path, set KUBECONFIG, run in a cluster or create ~/.kube/config")


def _in_cluster(service_account: Path = _SERVICE_ACCOUNT) -> RestConfig:
    """Ports: rest.InClusterConfig"""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
    if ":" in host:
        host = f"[{host}]"
    ca = service_account / "ca.crt"
    return RestConfig(
        host=f"https://{host}:{port}",
        ca_file=str(ca) if ca.exists() else None,
        token_file=str(service_account / "token"),
    )


def _read_merged(paths: list[Path]) -> tuple[dict[str, Any], dict[str, Path]]:
    """Merge kubeconfig files: the first file that names a cluster, user or context wins it.

    Returns the merged document and, per cluster and user name, the folder relative paths resolve against.
    """
    merged: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}, "current-context": ""}
    origin: dict[str, Path] = {}
    found = False
    for path in paths:
        try:
            text = path.read_text()
        except FileNotFoundError:
            continue  # clientcmd skips missing files of a KUBECONFIG list
        except OSError as err:
            raise ConfigError(f"cannot read the kubeconfig {path}: {err.strerror}") from err
        found = True
        doc = _parse_kubeconfig(path, text)
        if not isinstance(doc, dict):
            raise ConfigError(f"the kubeconfig {path} is not a mapping")
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in doc.get(section) or []:
                if isinstance(entry, dict) and entry.get("name") and entry["name"] not in merged[section]:
                    merged[section][entry["name"]] = entry.get(inner) or {}
                    origin[f"{section}/{entry['name']}"] = path.resolve().parent  # as kubectl: not the cwd
        merged["current-context"] = merged["current-context"] or doc.get("current-context") or ""
    if not found:
        raise ConfigError(f"no kubeconfig file found at {', '.join(map(str, paths))}")
    return merged, origin


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except ValueError as err:
        raise ConfigError(f"the kubeconfig's {what} is not base64") from err


def _from_kubeconfig(paths: list[Path], context: str | None) -> RestConfig | None:
    """A config from static credentials, or ``None`` when the user needs a plugin (exec, auth-provider).

    Ports: clientcmd.DirectClientConfig.ClientConfig (static credentials only)
    """
    doc, origin = _read_merged(paths)
    name = context or doc["current-context"]
    if not name:
        raise ConfigError("the kubeconfig has no current-context and none was given")
    ctx = doc["contexts"].get(name)
    if ctx is None:
        raise ConfigError(f"the kubeconfig has no context {name!r}")
    cluster_name, user_name = ctx.get("cluster", ""), ctx.get("user", "")
    cluster = doc["clusters"].get(cluster_name)
    if cluster is None:
        raise ConfigError(f"the kubeconfig's context {name!r} names an unknown cluster {cluster_name!r}")
    user = doc["users"].get(user_name, {}) if user_name else {}
    if "auth-provider" in user:
        return None
    cluster_dir = origin.get(f"clusters/{cluster_name}", Path.cwd())
    user_dir = origin.get(f"users/{user_name}", Path.cwd())

    def rel(base: Path, value: str | None) -> str | None:
        return str(base / value) if value else None

    server = cluster.get("server")
    if not server:
        raise ConfigError(f"the kubeconfig's cluster {cluster_name!r} has no server")
    basic = (user["username"], user.get("password", "")) if user.get("username") else None
    return RestConfig(
        host=str(server).rstrip("/"),
        ca_file=rel(cluster_dir, cluster.get("certificate-authority")),
        ca_data=_b64(cluster["certificate-authority-data"], "certificate-authority-data").decode()
        if cluster.get("certificate-authority-data")
        else None,
        verify_ssl=not cluster.get("insecure-skip-tls-verify", False),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=cluster.get("proxy-url") or None,
        cert_file=rel(user_dir, user.get("client-certificate")),
        key_file=rel(user_dir, user.get("client-key")),
        cert_data=_b64(user["client-certificate-data"], "client-certificate-data")
        if user.get("client-certificate-data")
        else None,
        key_data=_b64(user["client-key-data"], "client-key-data") if user.get("client-key-data") else None,
        bearer_token=user.get("token") or None,
        token_file=rel(user_dir, user.get("tokenFile")),
        basic_auth=basic,
        exec_plugin=_exec_plugin(user.get("exec"), cluster, user_dir) if user.get("exec") else None,
    )


def _exec_plugin(spec: Any, cluster: dict[str, Any], base_dir: Path) -> ExecPlugin:
    """Ports: clientcmd's ExecConfig handling (command, args, env, apiVersion, provideClusterInfo)"""
    if not isinstance(spec, dict) or not spec.get("command"):
        raise ConfigError("the kubeconfig's exec plugin has no command")
    if not spec.get("apiVersion"):
        raise ConfigError("the kubeconfig's exec plugin has no apiVersion")
    env = {}
    for item in spec.get("env") or []:
        if not isinstance(item, dict) or not item.get("name"):
            raise ConfigError("the kubeconfig's exec plugin env entries need a name")
        env[str(item["name"])] = str(item.get("value", ""))
    info = None
    if spec.get("provideClusterInfo"):
        keys = ("server", "certificate-authority-data", "insecure-skip-tls-verify", "tls-server-name", "proxy-url")
        info = {k: cluster[k] for k in keys if k in cluster}
    return ExecPlugin(
        command=str(spec["command"]),
        args=[str(a) for a in spec.get("args") or []],
        env=env,
        api_version=str(spec["apiVersion"]),
        cluster=info,
        install_hint=str(spec.get("installHint") or ""),
        base_dir=base_dir,
    )


async def _first_credential(config: RestConfig) -> RestConfig:
    """Run the exec plugin once at load: a failing plugin is a config error, and a client
    certificate it prints goes into the TLS setup (used until the client is rebuilt)."""
    plugin = config.exec_plugin
    if plugin is None:
        return config
    try:
        credential = await plugin.refresh()
    except CredentialError as err:
        raise ConfigError(str(err)) from None
    if credential.client_certificate_data and credential.client_key_data:
        return dataclasses.replace(
            config,
            cert_data=credential.client_certificate_data.encode(),
            key_data=credential.client_key_data.encode(),
        )
    return config


async def _with_kubernetes_asyncio(paths: list[Path] | None, context: str | None) -> RestConfig:
    """Load through kubernetes_asyncio (exec and auth-provider credential plugins)."""
    # Imported here, not at the top: the package loads every generated model (+63 MiB).
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config

    conf = Configuration()
    try:
        if paths is None:
            load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
        else:
            config_file = os.pathsep.join(map(str, paths))
            await load_kube_config(
                config_file=config_file, context=context, client_configuration=conf, persist_config=False
            )
    except ConfigException as err:
        raise ConfigError(f"cannot load the cluster config: {err}") from err
    except OSError as err:
        raise ConfigError(f"cannot read the kubeconfig: {err.strerror}") from err
    return RestConfig(
        host=str(conf.host).rstrip("/"),
        ca_file=conf.ssl_ca_cert or None,
        cert_file=conf.cert_file or None,
        key_file=conf.key_file or None,
        verify_ssl=bool(conf.verify_ssl),
        tls_server_name=conf.tls_server_name or None,
        proxy=conf.proxy or None,
        source=conf,
    )


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
    paths = await asyncio.to_thread(_pick_source, kubeconfig)
    if paths is None:
        return _in_cluster()
    static = await asyncio.to_thread(_from_kubeconfig, paths, context)
    if static is not None:
        return await _first_credential(static)
    return await _with_kubernetes_asyncio(paths, context)


def _parse_kubeconfig(path: Path, text: str) -> Any:
    """A kubeconfig document: JSON (a YAML subset) by ``json``, anything else by PyYAML.

    Python only: yaml is imported only for a YAML kubeconfig, so an in-cluster process or one
    given a JSON kubeconfig never loads it (≈ 0.9 MiB; issue 20, the listener's RSS).

    Raises:
        ConfigError: the text is neither JSON nor YAML.
    """
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text) or {}
        except ValueError:
            pass  # YAML flow mappings start with "{" too
    import yaml

    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"the kubeconfig {path} is not YAML: {err}") from err
