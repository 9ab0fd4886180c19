"""Removing what a listener runs on: when it is deleted, and when it is stopped.

Pod, config secret, proxy secret, RoleBinding, Role and ServiceAccount go in that order.
Secrets are not watched, so a secret held by a foreign finalizer is polled for.

Ports: AutoscalingListenerReconciler.cleanupResources
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import POD, ROLE, ROLE_BINDING, SECRET, SERVICE_ACCOUNT, objects
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from arc_controllers.controllers.metrics import publish_listener_down
from arc_controllers.resourcebuilder.listener import proxy_listener_secret_name, scale_set_listener_config_name
from reconcilekit.client.interfaces import GroupVersionKind, Object
from reconcilekit.errors import NotFoundError

__all__ = ["ListenerCleanup"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler


@dataclass(frozen=True, kw_only=True)
class ListenerCleanup:
    """Python only: deletes the listener's children."""

    resources: ListenerResources
    """Reads the children; its client deletes them."""

    async def cleanup_resources(self, listener: Object) -> tuple[bool, float]:
        """Delete pod, config secret, proxy secret, RoleBinding, Role and ServiceAccount, in that order.

        Returns:
            ``(True, 0)`` when all are gone; ``(False, 0.5)`` while a secret is held by a
            foreign finalizer (secrets are not watched); ``(False, 0)`` while a watched
            object is still there.

        Ports: AutoscalingListenerReconciler.cleanupResources
        """
        namespace, name = objects.namespace(listener), objects.name(listener)
        ars_namespace = objects.spec(listener).get("autoscalingRunnerSetNamespace", "")
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
        obj = await self.resources.get(gvk, namespace, name)
        if obj is None:
            return False
        if not objects.is_deleting(obj):
            try:
                await self.resources.client.delete(obj)
            except NotFoundError:
                return False
            log.info("deleted listener resource", kind=gvk.kind, name=name)
        return True

    async def _delete_secret(self, namespace: str, name: str) -> bool:
        """Python only: delete a secret; True once it is gone (it carried no finalizer)."""
        secret = await self.resources.get(SECRET, namespace, name)
        if secret is None:
            return True
        if not objects.is_deleting(secret):
            try:
                await self.resources.client.delete(secret)
            except NotFoundError:
                return True
        return not objects.finalizers(secret)
