"""AutoscalingListener reconciler: runs one listener pod with its config, identity and permissions.

For each listener it keeps, in this order, a ServiceAccount, a Role and RoleBinding in the
scale set's namespace (the listener may patch its EphemeralRunnerSet and its runners), an
optional proxy secret, the config secret, and the pod. A failed or evicted pod is
replaced; a ``Stopped`` listener has all of these removed but keeps its object. Secrets are
not watched: after writing one the reconcile carries on in the same pass.

Ports: controllers/actions.github.com/autoscalinglistener_controller.go
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from arc_controllers import constants
from arc_controllers._runner_constants import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
)
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.controllers.helpers import listener_pod_spec_requires_recreation
from arc_controllers.controllers.metrics import publish_listener_down, publish_listener_up
from arc_controllers.controllers.patching import add_finalizer, contains_finalizer, merge_patch, remove_finalizer
from arc_controllers.resourcebuilder.labels import filter_and_merge_labels, merge_annotations
from arc_controllers.resourcebuilder.listener import (
    LISTENER_CONTAINER_NAME,
    ListenerBuildOptions,
    ListenerMetricsServerConfig,
    new_autoscaling_listener_proxy_secret,
    new_scale_set_listener_config,
    new_scale_set_listener_pod,
    new_scale_set_listener_role,
    new_scale_set_listener_role_binding,
    new_scale_set_listener_service_account,
    proxy_listener_secret_name,
    scale_set_listener_config_name,
)
from arc_controllers.resourcebuilder.runner import proxy_secret_data
from reconcilekit.client.interfaces import Client, GroupVersionKind, Object, ObjectKey
from reconcilekit.errors import NotFoundError
from reconcilekit.reconcile import Request, Result

__all__ = ["CONFIG_MAP", "AppConfigResolver", "AutoscalingListenerReconciler"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler (zap's `logger`)

CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")

AppConfigResolver = Callable[[Object], Awaitable[AppConfig]]
"""The GitHub credentials of a scale set (its config secret). Ports: SecretResolver.GetAppConfig"""


def _meta(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["metadata"]``, created when missing."""
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


def _spec(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["spec"]``, or an empty dict."""
    spec: dict[str, Any] = obj.get("spec") or {}
    return spec


def _deleting(obj: Object) -> bool:
    """Python only: whether ``metadata.deletionTimestamp`` is set."""
    return bool(_meta(obj).get("deletionTimestamp"))


def _decoded(secret: Object) -> dict[str, bytes]:
    """Python only: a secret's data, base64-decoded."""
    return {key: base64.b64decode(value) for key, value in (secret.get("data") or {}).items()}


@dataclass(kw_only=True)
class AutoscalingListenerReconciler:
    """Ports: AutoscalingListenerReconciler"""

    client: Client
    """Reads from the informer cache (secrets and config maps uncached), writes to the API server."""

    app_config: AppConfigResolver
    """Reads a scale set's GitHub credentials for the listener's config."""

    listener_metrics_addr: str = "0"
    """``host:port`` the listener serves metrics on; ``"0"`` turns them off. Ports: ListenerMetricsAddr"""

    listener_metrics_endpoint: str = "/metrics"
    """Ports: ListenerMetricsEndpoint"""

    listener_options: ListenerBuildOptions = field(default_factory=ListenerBuildOptions)
    """Label exclusions, log level and format, entrypoint."""

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: AutoscalingListenerReconciler.Reconcile

        Go's guards in Go's order; each branch is a method below.
        """
        try:
            listener = await self.client.get(AUTOSCALING_LISTENER, request.key)
        except NotFoundError:
            return Result()

        if _deleting(listener):
            return await self._finalize(listener)
        if not contains_finalizer(listener, constants.AUTOSCALING_LISTENER_FINALIZER_NAME):
            return await self._add_finalizer(listener)
        spec = _spec(listener)
        try:
            ars = await self.client.get(
                AUTOSCALING_RUNNER_SET,
                ObjectKey(spec.get("autoscalingRunnerSetNamespace", ""), spec.get("autoscalingRunnerSetName", "")),
            )
        except NotFoundError:
            return await self._delete_orphan(listener)
        if spec.get("phase") == "Stopped":
            return await self._stop(listener)

        service_account = await self._get(SERVICE_ACCOUNT, _meta(listener)["namespace"], _meta(listener)["name"])
        if service_account is None:
            return await self._create_service_account(listener)
        if await self._service_account_drifted(listener, service_account):
            return Result()
        role = await self._get(ROLE, spec.get("autoscalingRunnerSetNamespace", ""), _meta(listener)["name"])
        if role is None:
            return await self._create(new_scale_set_listener_role(listener, options=self.listener_options))
        if await self._role_drifted(listener, role):
            return Result()
        binding = await self._get(ROLE_BINDING, spec.get("autoscalingRunnerSetNamespace", ""), _meta(listener)["name"])
        if binding is None:
            desired = new_scale_set_listener_role_binding(
                listener, role, service_account, options=self.listener_options
            )
            return await self._create(desired)
        if await self._metadata_drifted(
            binding, new_scale_set_listener_role_binding(listener, role, service_account, options=self.listener_options)
        ):
            return Result()

        if spec.get("proxy") is not None:
            await self._reconcile_proxy_secret(listener)
        metrics = self._metrics_config()
        config_secret = await self._reconcile_config_secret(listener, ars, metrics)
        return await self._reconcile_pod(listener, config_secret, service_account, metrics)

    # -- lifecycle -----------------------------------------------------------------

    async def _add_finalizer(self, listener: Object) -> Result:
        """Ports: AutoscalingListenerReconciler.Reconcile, the "add finalizer" branch"""
        async with merge_patch(self.client, listener) as obj:
            add_finalizer(obj, constants.AUTOSCALING_LISTENER_FINALIZER_NAME)
        log.info("added finalizer", autoscalinglistener=_meta(listener)["name"])
        return Result()

    async def _finalize(self, listener: Object) -> Result:
        """Remove everything the listener runs on, then drop the finalizer.

        Ports: AutoscalingListenerReconciler.Reconcile, the deletion branch
        """
        if not contains_finalizer(listener, constants.AUTOSCALING_LISTENER_FINALIZER_NAME):
            return Result()
        done, delay = await self._cleanup_resources(listener)
        if not done:
            return Result(requeue_after=delay)
        try:
            async with merge_patch(self.client, listener) as obj:
                remove_finalizer(obj, constants.AUTOSCALING_LISTENER_FINALIZER_NAME)
        except NotFoundError:
            pass
        log.info("removed finalizer", autoscalinglistener=_meta(listener)["name"])
        return Result()

    async def _delete_orphan(self, listener: Object) -> Result:
        """The scale set is gone: delete this listener.

        Ports: AutoscalingListenerReconciler.Reconcile, the missing-AutoscalingRunnerSet branch
        """
        log.info("autoscaling runner set is gone; deleting the listener", autoscalinglistener=_meta(listener)["name"])
        try:
            await self.client.delete(listener)
        except NotFoundError:
            pass
        return Result()

    async def _stop(self, listener: Object) -> Result:
        """A stopped listener keeps its object and finalizer but runs nothing.

        Ports: AutoscalingListenerReconciler.Reconcile, the Stopped branch
        """
        done, delay = await self._cleanup_resources(listener)
        if not done:
            return Result(requeue_after=delay)
        return Result()

    async def _cleanup_resources(self, listener: Object) -> tuple[bool, float]:
        """Delete pod, config secret, proxy secret, RoleBinding, Role and ServiceAccount, in that order.

        Returns:
            ``(True, 0)`` when all are gone; ``(False, 0.5)`` while a secret is held by a
            foreign finalizer (secrets are not watched); ``(False, 0)`` while a watched
            object is still there.

        Ports: AutoscalingListenerReconciler.cleanupResources
        """
        meta, spec = _meta(listener), _spec(listener)
        namespace, name = meta["namespace"], meta["name"]
        ars_namespace = spec.get("autoscalingRunnerSetNamespace", "")
        waiting_on_watched = False
        waiting_on_secret = False
        if await self._delete_if_present(POD, namespace, name):
            waiting_on_watched = True
        else:
            with contextlib.suppress(ValueError):
                publish_listener_down(listener)
        for secret_name in (scale_set_listener_config_name(listener), proxy_listener_secret_name(listener)):
            if not await self._delete_secret(namespace, secret_name):
                waiting_on_secret = True
        for gvk, ns in ((ROLE_BINDING, ars_namespace), (ROLE, ars_namespace), (SERVICE_ACCOUNT, namespace)):
            if await self._delete_if_present(gvk, ns, name):
                waiting_on_watched = True
        if waiting_on_secret:
            return False, constants.LISTENER_SECRET_FINALIZER_POLL
        if waiting_on_watched:
            return False, 0.0
        return True, 0.0

    async def _delete_if_present(self, gvk: GroupVersionKind, namespace: str, name: str) -> bool:
        """Python only: delete the object unless it is deleting already; True when it still existed."""
        obj = await self._get(gvk, namespace, name)
        if obj is None:
            return False
        if not _deleting(obj):
            try:
                await self.client.delete(obj)
            except NotFoundError:
                return False
            log.info("deleted listener resource", kind=gvk.kind, name=name)
        return True

    async def _delete_secret(self, namespace: str, name: str) -> bool:
        """Python only: delete a secret; True once it is gone (it carried no finalizer)."""
        secret = await self._get(SECRET, namespace, name)
        if secret is None:
            return True
        if not _deleting(secret):
            try:
                await self.client.delete(secret)
            except NotFoundError:
                return True
        return not _meta(secret).get("finalizers")

    async def _get(self, gvk: GroupVersionKind, namespace: str, name: str) -> Object | None:
        """Python only: the object, or None when it does not exist."""
        try:
            return await self.client.get(gvk, ObjectKey(namespace, name))
        except NotFoundError:
            return None

    async def _create(self, desired: Object) -> Result:
        """Python only: create a watched child; its create event brings the next step."""
        await self.client.create(desired)
        log.info("created listener resource", kind=desired["kind"], name=desired["metadata"]["name"])
        return Result()

    # -- children -----------------------------------------------------------------

    async def _create_service_account(self, listener: Object) -> Result:
        """Ports: AutoscalingListenerReconciler.createServiceAccountForListener"""
        return await self._create(new_scale_set_listener_service_account(listener, options=self.listener_options))

    def _merged(self, live: Object, desired: Object) -> tuple[dict[str, str], dict[str, str]]:
        """Python only: desired labels and annotations merged over the live ones (foreign keys survive)."""
        labels = filter_and_merge_labels(
            _meta(live).get("labels"),
            _meta(desired).get("labels"),
            self.listener_options.exclude_label_propagation_prefixes,
        )
        annotations = merge_annotations(_meta(live).get("annotations"), _meta(desired).get("annotations"))
        return labels or {}, annotations or {}

    def _metadata_differs(self, live: Object, desired: Object) -> bool:
        """Python only: whether merged labels/annotations differ from the live ones."""
        labels, annotations = self._merged(live, desired)
        return labels != (_meta(live).get("labels") or {}) or annotations != (_meta(live).get("annotations") or {})

    async def _metadata_drifted(self, live: Object, desired: Object) -> bool:
        """Patch merged labels and annotations onto ``live`` when they differ; True when patched.

        Ports: the metadata-update blocks of AutoscalingListenerReconciler.Reconcile
        (ServiceAccount, RoleBinding, proxy secret, pod)
        """
        if not self._metadata_differs(live, desired):
            return False
        labels, annotations = self._merged(live, desired)
        async with merge_patch(self.client, live) as obj:
            _meta(obj)["labels"] = labels
            _meta(obj)["annotations"] = annotations
        log.info("updated listener resource metadata", kind=live.get("kind"), name=_meta(live)["name"])
        return True

    async def _service_account_drifted(self, listener: Object, service_account: Object) -> bool:
        """Ports: AutoscalingListenerReconciler.Reconcile, the ServiceAccount update block"""
        desired = new_scale_set_listener_service_account(listener, options=self.listener_options)
        return await self._metadata_drifted(service_account, desired)

    async def _role_drifted(self, listener: Object, role: Object) -> bool:
        """Labels, annotations and rules (semantic, #4695); True when patched.

        Ports: AutoscalingListenerReconciler.Reconcile, the Role update block
        """
        desired = new_scale_set_listener_role(listener, options=self.listener_options)
        rules_modified = not semantic_equal(role.get("rules"), desired.get("rules"))
        if not rules_modified and not self._metadata_differs(role, desired):
            return False
        labels, annotations = self._merged(role, desired)
        async with merge_patch(self.client, role) as obj:
            _meta(obj)["labels"] = labels
            _meta(obj)["annotations"] = annotations
            if rules_modified:
                obj["rules"] = desired["rules"]
        log.info("updated listener role", role=_meta(role)["name"])
        return True

    async def _reconcile_proxy_secret(self, listener: Object) -> None:
        """Create the proxy secret from ``spec.proxy`` or fix its metadata; carries on either way.

        The data of an existing secret is not derived again.

        Ports: AutoscalingListenerReconciler.Reconcile, the proxy-secret block, and createProxySecret
        """
        namespace = _meta(listener)["namespace"]
        live = await self._get(SECRET, namespace, proxy_listener_secret_name(listener))
        if live is not None:
            await self._metadata_drifted(live, new_autoscaling_listener_proxy_secret(listener, _decoded(live)))
            return
        spec = _spec(listener)
        proxy = spec["proxy"]
        credentials: dict[str, dict[str, bytes]] = {}
        for server in (proxy.get("http"), proxy.get("https")):
            ref = (server or {}).get("credentialSecretRef")
            if ref and ref not in credentials:
                secret = await self.client.get(SECRET, ObjectKey(spec.get("autoscalingRunnerSetNamespace", ""), ref))
                credentials[ref] = _decoded(secret)
        desired = new_autoscaling_listener_proxy_secret(listener, proxy_secret_data(proxy, credentials))
        await self.client.create(desired)
        log.info("created listener proxy secret", secret=desired["metadata"]["name"])

    def _metrics_config(self) -> ListenerMetricsServerConfig | None:
        """Ports: AutoscalingListenerReconciler.Reconcile, the metrics-config block"""
        if self.listener_metrics_addr == "0":
            return None
        return ListenerMetricsServerConfig(addr=self.listener_metrics_addr, endpoint=self.listener_metrics_endpoint)

    async def _certificate(self, ars: Object) -> str:
        """The PEM the scale set's ``githubServerTLS`` names (ConfigMap in its namespace); "" when unset.

        Raises:
            ValueError: ``certificateFrom`` or ``configMapKeyRef`` is missing, or the key is absent.

        Ports: AutoscalingListenerReconciler.certificate
        """
        tls = _spec(ars).get("githubServerTLS")
        if tls is None:
            return ""
        source = tls.get("certificateFrom")
        if source is None:
            raise ValueError("githubServerTLS.certificateFrom is not specified")
        ref = source.get("configMapKeyRef")
        if ref is None:
            raise ValueError("githubServerTLS.certificateFrom.configMapKeyRef is not specified")
        config_map = await self.client.get(CONFIG_MAP, ObjectKey(_meta(ars)["namespace"], ref.get("name", "")))
        data = config_map.get("data") or {}
        if ref.get("key") not in data:
            raise ValueError(f"key {ref.get('key')!r} is missing in config map {ref.get('name')!r}")
        return str(data[ref["key"]])

    async def _reconcile_config_secret(
        self, listener: Object, ars: Object, metrics: ListenerMetricsServerConfig | None
    ) -> Object:
        """Create the config secret, or patch labels, annotations and data that drifted; returns the live secret.

        The returned object carries the resourceVersion after any write, which the pod
        records, so a changed config recreates the pod.

        Ports: AutoscalingListenerReconciler.Reconcile, the config-secret block, and createSecretsForListener
        """
        app_config = None if _spec(listener).get("vaultConfig") is not None else await self.app_config(ars)
        cert = await self._certificate(ars)
        desired = new_scale_set_listener_config(listener, app_config, metrics, cert, options=self.listener_options)
        live = await self._get(SECRET, _meta(listener)["namespace"], scale_set_listener_config_name(listener))
        if live is None:
            created = await self.client.create(desired)
            log.info("created listener config secret", secret=desired["metadata"]["name"])
            return created
        labels, annotations = self._merged(live, desired)
        data_changed = (live.get("data") or {}) != desired["data"]
        if data_changed or self._metadata_differs(live, desired):
            async with merge_patch(self.client, live) as obj:
                _meta(obj)["labels"] = labels
                _meta(obj)["annotations"] = annotations
                obj["data"] = desired["data"]
            log.info("updated listener config secret", secret=_meta(live)["name"])
        return live

    async def _reconcile_pod(
        self,
        listener: Object,
        config_secret: Object,
        service_account: Object,
        metrics: ListenerMetricsServerConfig | None,
    ) -> Result:
        """Create the pod; replace it when its spec or config drifted or it died; else fix its metadata.

        Ports: AutoscalingListenerReconciler.Reconcile, the pod block, and createListenerPod
        """
        desired = new_scale_set_listener_pod(
            listener, config_secret, service_account, metrics, options=self.listener_options
        )
        live = await self._get(POD, _meta(listener)["namespace"], _meta(listener)["name"])
        if live is None:
            try:
                publish_listener_down(listener)
            except ValueError as err:
                log.error("config URL cannot be parsed; the listener could never start", error=str(err))
                return Result()
            await self.client.create(desired)
            log.info("created listener pod", pod=desired["metadata"]["name"])
            return Result()
        if listener_pod_spec_requires_recreation(live, desired):
            log.info("listener pod spec or config changed; recreating it", pod=_meta(live)["name"])
            return await self._delete_listener_pod(live, listener)
        if _listener_pod_is_dead(live):
            log.info("listener pod is dead; recreating it", pod=_meta(live)["name"])
            return await self._delete_listener_pod(live, listener)
        if _deleting(live):
            return Result()
        if await self._metadata_drifted(live, desired):
            return Result()
        self._publish_running(listener, live)
        return Result()

    @staticmethod
    def _publish_running(listener: Object, pod: Object) -> None:
        """Publish listener-up once the ``listener`` container runs (no status is written).

        Ports: AutoscalingListenerReconciler.Reconcile, the running-metric block
        """
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            if container.get("name") == LISTENER_CONTAINER_NAME and (container.get("state") or {}).get("running"):
                try:
                    publish_listener_up(listener)
                except ValueError:
                    return

    async def _delete_listener_pod(self, pod: Object, listener: Object) -> Result:
        """Ports: AutoscalingListenerReconciler.deleteListenerPod"""
        try:
            publish_listener_down(listener)
        except ValueError as err:  # only logged, as upstream
            log.error("could not publish listener down", error=str(err))
        if not _deleting(pod):
            try:
                await self.client.delete(pod)
            except NotFoundError:
                pass
        return Result()


def _listener_pod_is_dead(pod: Object) -> bool:
    """Evicted, or its ``listener`` container terminated (restart policy Never: it will not come back).

    Ports: listenerPodIsDead (#4680; without the [UNCONFIRMED] 15 s restart delay)
    """
    status = pod.get("status") or {}
    if status.get("reason") == "Evicted":
        return True
    for container in status.get("containerStatuses") or []:
        if container.get("name") == LISTENER_CONTAINER_NAME and (container.get("state") or {}).get("terminated"):
            return True
    return False
