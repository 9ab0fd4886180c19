"""Types shared by the four kinds: object metadata, proxy, TLS, vault, listener metrics.

Ports: apis/actions.github.com/v1alpha1/common.go and the shared types of autoscalingrunnerset_types.go
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import quote, urlsplit, urlunsplit

from arc_controllers import constants
from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import REQUIRED, Embedded

__all__ = [
    "AzureKeyVaultConfig",
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsConfig",
    "ObjectMeta",
    "ProxyConfig",
    "ProxyServerConfig",
    "ResourceMeta",
    "TLSCertificateSource",
    "TLSConfig",
    "VaultConfig",
    "VaultType",
]


class ObjectMeta(ArcModel):
    """Kubernetes object metadata: the fields the controllers read typed, the rest kept as they came.

    Timestamps stay RFC 3339 strings so they round-trip byte for byte.

    Python only: a typed window on metav1.ObjectMeta (``managedFields`` and
    anything else we do not name are kept as extra fields).
    """

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None


class ResourceMeta(ArcModel):
    """Labels and annotations to put on an object the controllers create.

    Either map may be absent; an absent map and an empty one mean the same.

    Ports: ResourceMeta
    """

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class ProxyServerConfig(ArcModel):
    """One proxy server (for http or https traffic).

    Ports: ProxyServerConfig
    """

    url: str | None = None
    """Proxy URL, for example http://proxy.example.com:3128. Required."""
    credential_secret_ref: str | None = None
    """Name of a secret in the object's namespace with keys username and password,
    sent to the proxy as the URL's user info."""


class ProxyConfig(ArcModel):
    """Proxies for the traffic to GitHub (and, under ``vaultConfig``, to the vault).

    Ports: ProxyConfig
    """

    http: ProxyServerConfig | None = None
    """Proxy for plain http requests."""
    https: ProxyServerConfig | None = None
    """Proxy for https requests."""
    no_proxy: list[str] | None = None
    """Hosts, domains and CIDRs reached without a proxy."""

    def credential_secret_names(self) -> list[str]:
        """Names of the secrets `to_secret_data` needs (``credentialSecretRef`` of http, then https).

        Python only: the caller reads these asynchronously before the pure `to_secret_data`.
        """
        names = [s.credential_secret_ref for s in (self.http, self.https) if s is not None and s.credential_secret_ref]
        return list(dict.fromkeys(names))

    def proxy_urls(self, credentials: Mapping[str, Mapping[str, bytes]]) -> tuple[str, str, str]:
        """The http proxy URL, the https proxy URL and the no-proxy list, credentials embedded.

        Args:
            credentials: Secret name -> its decoded data, for every name of
                `credential_secret_names`; keys ``username`` and ``password``
                (a missing key reads as empty).

        Returns:
            ``(http_proxy, https_proxy, no_proxy)``; an unconfigured proxy is "",
            ``no_proxy`` is the entries joined by ",".

        Raises:
            KeyError: a credential secret is missing from ``credentials``.
            ValueError: a proxy URL does not parse.

        Ports: ProxyConfig.ToHTTPProxyConfig
        """
        return (
            _proxy_url(self.http, credentials, "http"),
            _proxy_url(self.https, credentials, "https"),
            ",".join(self.no_proxy or ()),
        )

    def to_secret_data(self, credentials: Mapping[str, Mapping[str, bytes]]) -> dict[str, bytes]:
        """The data of a proxy secret: keys ``http_proxy``, ``https_proxy``, ``no_proxy`` (always all three).

        Args:
            credentials: As for `proxy_urls`.

        Raises:
            KeyError: a credential secret is missing from ``credentials``.
            ValueError: a proxy URL does not parse.

        Ports: ProxyConfig.ToSecretData
        """
        http, https, no_proxy = self.proxy_urls(credentials)
        return {
            constants.PROXY_SECRET_KEY_HTTP: http.encode(),
            constants.PROXY_SECRET_KEY_HTTPS: https.encode(),
            constants.PROXY_SECRET_KEY_NO_PROXY: no_proxy.encode(),
        }


_USERINFO_SAFE = "-_.~$&+,;="
"""Characters Go's url.UserPassword leaves unescaped (besides letters and digits)."""


def _proxy_url(server: ProxyServerConfig | None, credentials: Mapping[str, Mapping[str, bytes]], which: str) -> str:
    if server is None:
        return ""
    url = server.url or ""
    try:
        parts = urlsplit(url)
        _ = parts.port  # validates the port
    except ValueError as exc:
        raise ValueError(f"failed to parse proxy {which} url {url!r}: {exc}") from None
    if not server.credential_secret_ref:
        return url
    try:
        secret = credentials[server.credential_secret_ref]
    except KeyError:
        raise KeyError(f"failed to get secret {server.credential_secret_ref} for {which} proxy") from None
    username = secret.get(constants.PROXY_CREDENTIAL_KEY_USERNAME, b"").decode("utf-8", "replace")
    password = secret.get(constants.PROXY_CREDENTIAL_KEY_PASSWORD, b"").decode("utf-8", "replace")
    host = parts.netloc.rpartition("@")[2]
    userinfo = f"{quote(username, safe=_USERINFO_SAFE)}:{quote(password, safe=_USERINFO_SAFE)}"
    return urlunsplit((parts.scheme, f"{userinfo}@{host}", parts.path, parts.query, parts.fragment))


class TLSCertificateSource(ArcModel):
    """Where a CA certificate comes from.

    Ports: TLSCertificateSource
    """

    config_map_key_ref: Annotated[dict[str, Any] | None, Embedded("ConfigMapKeySelector")] = None
    """A key of a ConfigMap in the object's namespace holding PEM certificates. Required."""


class TLSConfig(ArcModel):
    """Extra CA certificates to trust when talking to the GitHub server.

    Ports: TLSConfig
    """

    certificate_from: TLSCertificateSource | None = None
    """Where to read the certificates from. Required."""

    def config_map_key_ref_or_raise(self) -> tuple[str, str]:
        """The ConfigMap name and key holding the certificates.

        Returns:
            ``(config map name, key)``.

        Raises:
            ValueError: ``certificateFrom`` or its ``configMapKeyRef`` is missing.

        Ports: TLSConfig.ToCertPool, its validation (reading the pool is the Actions client's job)
        """
        if self.certificate_from is None:
            raise ValueError("certificateFrom not specified")
        ref = self.certificate_from.config_map_key_ref
        if ref is None:
            raise ValueError("configMapKeyRef not specified")
        return str(ref.get("name") or ""), str(ref.get("key") or "")


class VaultType:
    """Names of the supported vaults (``vaultConfig.type``).

    Ports: vault.VaultType
    """

    AZURE_KEY_VAULT = "azure_key_vault"


class AzureKeyVaultConfig(ArcModel):
    """How to reach an Azure Key Vault.

    Ports: AzureKeyVaultConfig
    """

    url: Annotated[str | None, REQUIRED] = None
    """The vault's URL."""
    tenant_id: Annotated[str | None, REQUIRED] = None
    """Azure AD tenant of the service principal."""
    client_id: Annotated[str | None, REQUIRED] = None
    """Client id of the service principal."""
    certificate_path: Annotated[str | None, REQUIRED] = None
    """Path, inside the controller and listener pods, of the service principal's certificate."""


class VaultConfig(ArcModel):
    """Read the GitHub credentials from a vault instead of a Kubernetes secret.

    ``githubConfigSecret`` then names the vault entry.

    Ports: VaultConfig
    """

    type: str | None = None
    """Kind of vault; only azure_key_vault is supported."""
    azure_key_vault: AzureKeyVaultConfig | None = None
    """Settings for type azure_key_vault."""
    proxy: ProxyConfig | None = None
    """Proxies for the traffic to the vault."""


class CounterMetric(ArcModel):
    """A listener counter and the labels it carries.

    Ports: CounterMetric
    """

    labels: Annotated[list[str] | None, REQUIRED] = None
    """Label names to publish."""


class GaugeMetric(ArcModel):
    """A listener gauge and the labels it carries.

    Ports: GaugeMetric
    """

    labels: Annotated[list[str] | None, REQUIRED] = None
    """Label names to publish."""


class HistogramMetric(ArcModel):
    """A listener histogram, its labels and buckets.

    Ports: HistogramMetric
    """

    labels: Annotated[list[str] | None, REQUIRED] = None
    """Label names to publish."""
    buckets: list[float] | None = None
    """Upper bounds of the buckets, in the metric's unit (seconds for durations)."""


class MetricsConfig(ArcModel):
    """Which listener metrics to publish, by metric name.

    Ports: MetricsConfig
    """

    counters: dict[str, CounterMetric] | None = None
    """Counters by metric name."""
    gauges: dict[str, GaugeMetric] | None = None
    """Gauges by metric name."""
    histograms: dict[str, HistogramMetric] | None = None
    """Histograms by metric name."""
