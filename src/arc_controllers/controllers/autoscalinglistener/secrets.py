"""The listener's two secrets: the proxy secret and the config secret.

Secrets are not watched: after writing one the reconcile carries on in the same pass. The
config secret embeds the GitHub credentials (unless a vault holds them), the listener's
settings and the scale set's CA certificate; the pod records its resourceVersion, so a
changed config recreates the pod.

Ports: AutoscalingListenerReconciler.Reconcile (the proxy-secret and config-secret blocks),
createProxySecret, createSecretsForListener and certificate
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from arc_controllers.api.v1alpha1 import CONFIG_MAP, SECRET, objects
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.resourcebuilder.listener import (
    ListenerMetricsServerConfig,
    new_autoscaling_listener_proxy_secret,
    new_scale_set_listener_config,
    proxy_listener_secret_name,
    scale_set_listener_config_name,
)
from arc_controllers.resourcebuilder.runner import proxy_secret_data
from reconcilekit.client.interfaces import Object, ObjectKey

__all__ = ["AppConfigResolver", "ListenerSecrets"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler

AppConfigResolver = Callable[[Object], Awaitable[AppConfig]]
"""The GitHub credentials of a scale set (its config secret). Ports: SecretResolver.GetAppConfig"""


@dataclass(frozen=True, kw_only=True)
class ListenerSecrets:
    """Python only: creates and keeps the listener's proxy and config secrets."""

    resources: ListenerResources
    """Reads and creates the secrets; merges their metadata."""

    app_config: AppConfigResolver
    """Reads a scale set's GitHub credentials for the listener's config."""

    async def reconcile_proxy_secret(self, listener: Object) -> None:
        """Create the proxy secret from ``spec.proxy`` or fix its metadata; carries on either way.

        The data of an existing secret is not derived again.

        Ports: AutoscalingListenerReconciler.Reconcile, the proxy-secret block, and createProxySecret
        """
        client = self.resources.client
        namespace = objects.namespace(listener)
        live = await self.resources.get(SECRET, namespace, proxy_listener_secret_name(listener))
        if live is not None:
            desired = new_autoscaling_listener_proxy_secret(listener, objects.decoded_secret_data(live))
            if self.resources.metadata_differs(live, desired):
                await self.resources.update_metadata(live, desired)
            return
        spec = objects.spec(listener)
        proxy = spec["proxy"]
        credentials: dict[str, dict[str, bytes]] = {}
        for server in (proxy.get("http"), proxy.get("https")):
            ref = (server or {}).get("credentialSecretRef")
            if ref and ref not in credentials:
                secret = await client.get(SECRET, ObjectKey(spec.get("autoscalingRunnerSetNamespace", ""), ref))
                credentials[ref] = objects.decoded_secret_data(secret)
        desired = new_autoscaling_listener_proxy_secret(listener, proxy_secret_data(proxy, credentials))
        await client.create(desired)
        log.info("created listener proxy secret", secret=desired["metadata"]["name"])

    async def certificate(self, ars: Object) -> str:
        """The PEM the scale set's ``githubServerTLS`` names (ConfigMap in its namespace); "" when unset.

        Raises:
            ValueError: ``certificateFrom`` or ``configMapKeyRef`` is missing, or the key is absent.

        Ports: AutoscalingListenerReconciler.certificate
        """
        tls = objects.spec(ars).get("githubServerTLS")
        if tls is None:
            return ""
        source = tls.get("certificateFrom")
        if source is None:
            raise ValueError("githubServerTLS.certificateFrom is not specified")
        ref = source.get("configMapKeyRef")
        if ref is None:
            raise ValueError("githubServerTLS.certificateFrom.configMapKeyRef is not specified")
        config_map = await self.resources.client.get(CONFIG_MAP, ObjectKey(objects.namespace(ars), ref.get("name", "")))
        data = config_map.get("data") or {}
        if ref.get("key") not in data:
            raise ValueError(f"key {ref.get('key')!r} is missing in config map {ref.get('name')!r}")
        return str(data[ref["key"]])

    async def reconcile_config_secret(
        self, listener: Object, ars: Object, metrics: ListenerMetricsServerConfig | None
    ) -> Object:
        """Create the config secret, or patch labels, annotations and data that drifted; returns the live secret.

        The returned object carries the resourceVersion after any write, which the pod
        records, so a changed config recreates the pod.

        Ports: AutoscalingListenerReconciler.Reconcile, the config-secret block, and createSecretsForListener
        """
        client = self.resources.client
        app_config = None if objects.spec(listener).get("vaultConfig") is not None else await self.app_config(ars)
        cert = await self.certificate(ars)
        desired = new_scale_set_listener_config(listener, app_config, metrics, cert, options=self.resources.options)
        live = await self.resources.get(SECRET, objects.namespace(listener), scale_set_listener_config_name(listener))
        if live is None:
            created = await client.create(desired)
            log.info("created listener config secret", secret=desired["metadata"]["name"])
            return created
        labels, annotations = self.resources.merged(live, desired)
        data_changed = objects.secret_data(live) != desired["data"]
        if data_changed or self.resources.metadata_differs(live, desired):
            lazy = LazyCopy(live)
            target = lazy.mutate()
            objects.mutable_meta(target)["labels"] = labels
            objects.mutable_meta(target)["annotations"] = annotations
            target["data"] = desired["data"]
            await client.patch(live, lazy.merge_from())
            log.info("updated listener config secret", secret=objects.name(live))
        return live
