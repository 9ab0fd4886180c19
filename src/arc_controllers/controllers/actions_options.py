"""The optional Actions client settings an object asks for: its proxy and its extra root CAs.

``spec.proxy`` becomes a fixed proxy rule (http and https proxy URLs, credentials from
``credentialSecretRef`` secrets, the ``noProxy`` list); ``spec.githubServerTLS`` becomes
the PEM text of a ConfigMap key, trusted besides the system roots. Both are read from
the object's namespace with the reader the caller passes (normally the manager's API
reader: ARC's charts grant no list/watch on secrets or config maps).

Errors are `ClientConfigError`, whose message names the object's setting and the
secret or config map involved, never a proxy URL with its credentials.

Ports: the proxy and root-CA part of SecretResolver.GetActionsService (Kubernetes
secrets only), and TLSConfig.ToCertPool
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from cryptography import x509

from arc_controllers.actions.proxy import ProxyConfig as ProxyRule
from arc_controllers.api.v1alpha1 import CONFIG_MAP, SECRET
from arc_controllers.api.v1alpha1.common import ProxyConfig, TLSConfig
from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey

__all__ = ["ClientConfigError", "ClientOptions", "ObjectReader", "resolve_client_options"]



class ObjectReader(Protocol):
    """**Protocol:** reads one object by kind and key (the manager's API reader has this shape)."""

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        """Python only: the object; raises the client's NotFoundError when it does not exist."""
        ...


class ClientConfigError(ValueError):
    """An object's ``proxy`` or ``githubServerTLS`` cannot be turned into client settings.

    A missing secret or config map is chained as ``__cause__``. The reconcile of that
    object fails (and is retried with backoff); other objects are not affected.

    Python only: Go returns plain wrapped errors here.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientOptions:
    """What `resolve_client_options` found: the settings `arc_controllers.actions.new_client` takes.

    Python only: the resolved half of multiclient.ClientForOptions (ProxyFunc and RootCAs).
    """

    proxy: ProxyRule | None = None
    """The object's proxy rule; ``None`` when the object sets no proxy (the client then
    reads the environment, as Go's default transport does). A set but empty ``proxy``
    gives a rule that proxies nothing, as upstream's ProxyFunc does."""

    root_ca: str = ""
    """PEM certificates to trust besides the system roots; ``""`` for none."""

    def digest(self) -> str:
        """A SHA-256 hex digest of everything here (credentials included, never stored in clear).

        Python only: the client cache compares it to see whether a proxy or CA changed.
        """
        proxy = None if self.proxy is None else [self.proxy.http_proxy, self.proxy.https_proxy, self.proxy.no_proxy]
        text = json.dumps({"proxy": proxy, "root_ca": self.root_ca}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


async def resolve_client_options(
    reader: ObjectReader,
    *,
    namespace: str,
    proxy: Mapping[str, object] | None,
    tls: Mapping[str, object] | None,
) -> ClientOptions:
    """Read what ``proxy`` and ``tls`` (the object's ``spec.proxy`` and ``spec.githubServerTLS``) point at.

    Args:
        reader: reads the credential Secrets and the CA ConfigMap.
        namespace: where they live (the object's namespace).
        proxy: ``spec.proxy`` as JSON, or ``None``.
        tls: ``spec.githubServerTLS`` as JSON, or ``None``.

    Returns:
        The proxy rule (credentials in the URLs' user info) and the CA PEM.

    Raises:
        ClientConfigError: a credential secret or the config map is missing or unreadable,
            a proxy URL does not parse, ``certificateFrom``/``configMapKeyRef`` is missing,
            the key is absent, or its value holds no parsable certificate.

    Ports: SecretResolver.GetActionsService (the proxyFunc and rootCAs blocks)
    """
    rule = None if proxy is None else await _proxy_rule(reader, namespace, proxy)
    root_ca = "" if tls is None else await _root_ca(reader, namespace, tls)
    return ClientOptions(proxy=rule, root_ca=root_ca)


async def _proxy_rule(reader: ObjectReader, namespace: str, raw: Mapping[str, object]) -> ProxyRule:
    """Ports: the proxyFunc block of SecretResolver.GetActionsService, with k8sResolver.proxyCredentials"""
    try:
        config = ProxyConfig.model_validate(raw)
    except ValueError as err:
        raise ClientConfigError(f"invalid proxy config: {_first_line(err)}") from None
    credentials: dict[str, dict[str, bytes]] = {}
    for name in config.credential_secret_names():
        try:
            secret = await reader.get(SECRET, ObjectKey(namespace, name))
        except Exception as err:
            raise ClientConfigError(
                f"failed to resolve proxy credentials: failed to get kubernetes secret {namespace}/{name}: {err}"
            ) from err
        credentials[name] = _decoded(secret)
    try:
        http, https, no_proxy = config.proxy_urls(credentials)
    except (KeyError, ValueError):
        # The message would quote the URL, whose user info may be a password: name the field instead.
        raise ClientConfigError(
            f"failed to parse proxy url: http {_without_user(config.http.url if config.http else None)!r}, "
            f"https {_without_user(config.https.url if config.https else None)!r}"
        ) from None
    return ProxyRule(http_proxy=http, https_proxy=https, no_proxy=no_proxy)


async def _root_ca(reader: ObjectReader, namespace: str, raw: Mapping[str, object]) -> str:
    """Ports: TLSConfig.ToCertPool with the config-map key fetcher of SecretResolver.GetActionsService"""
    try:
        name, key = TLSConfig.model_validate(raw).config_map_key_ref_or_raise()
    except ValueError as err:
        raise ClientConfigError(f"failed to get tls config: {_first_line(err)}") from None
    where = f"key {key!r} in configmap {namespace}/{name}"
    try:
        config_map = await reader.get(CONFIG_MAP, ObjectKey(namespace, name))
    except Exception as err:
        raise ClientConfigError(f"failed to get tls config: failed to fetch {where}: {err}") from err
    pem = (config_map.get("data") or {}).get(key)
    if not pem:
        raise ClientConfigError(f"failed to get tls config: {where} is missing or empty")
    try:
        x509.load_pem_x509_certificates(str(pem).encode())
    except ValueError:
        raise ClientConfigError(f"failed to get tls config: failed to parse certificate ({where})") from None
    return str(pem)


def _decoded(secret: Object) -> dict[str, bytes]:
    """Python only: a Secret's ``data`` base64-decoded."""
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def _without_user(url: str | None) -> str:
    """Python only: ``url`` with any user info dropped (for error messages)."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable>"
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _first_line(err: BaseException) -> str:
    """Python only: the first line of an error's text (pydantic's run to several)."""
    return str(err).splitlines()[0] if str(err) else type(err).__name__
