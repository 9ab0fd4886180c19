"""The EphemeralRunnerSet's proxy secret: the credentials its runners' proxy variables read.

Ports: controllers/actions.github.com/ephemeralrunnerset_controller.go (cleanUpProxySecret,
cleanUpEphemeralRunnerSetProxySecret, reconcileEphemeralRunnerSetProxySecret)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from arc_controllers.api.v1alpha1 import SECRET, objects
from arc_controllers.api.v1alpha1.equality import semantic_equal
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.runnerstates import secret_ref
from arc_controllers.resourcebuilder.runner import (
    new_ephemeral_runner_set_proxy_secret,
    proxy_ephemeral_runner_set_secret_name,
    proxy_secret_data,
)
from reconcilekit.client.interfaces import Client, Object, ObjectKey
from reconcilekit.errors import NotFoundError

__all__ = ["ProxySecrets", "runner_proxy"]

log = structlog.get_logger("EphemeralRunnerSet")  # Go's logr name for this reconciler


def runner_proxy(runner_set: Object) -> Any:
    """Python only: ``spec.ephemeralRunnerSpec.proxy`` of the set, None when no proxy is configured."""
    return (objects.spec(runner_set).get("ephemeralRunnerSpec") or {}).get("proxy")


def _proxy_secret_key(runner_set: Object) -> ObjectKey:
    """Python only: where the set's proxy secret lives."""
    return ObjectKey(objects.namespace(runner_set), proxy_ephemeral_runner_set_secret_name(runner_set))


@dataclass(frozen=True, kw_only=True)
class ProxySecrets:
    """Creates, repairs and deletes the set's proxy secret through ``client``."""

    client: Client

    async def clean_up_proxy_secret(self, runner_set: Object) -> None:
        """Delete the proxy secret by name, if a proxy is configured. Ports: cleanUpProxySecret"""
        if runner_proxy(runner_set) is None:
            return
        key = _proxy_secret_key(runner_set)
        try:
            await self.client.delete(secret_ref(key.namespace, key.name))
        except NotFoundError:
            pass

    async def clean_up_ephemeral_runner_set_proxy_secret(self, runner_set: Object) -> bool:
        """True once the proxy secret is gone (or was never needed).

        Ports: EphemeralRunnerSetReconciler.cleanUpEphemeralRunnerSetProxySecret
        """
        if runner_proxy(runner_set) is None:
            return True
        try:
            secret = await self.client.get(SECRET, _proxy_secret_key(runner_set))
        except NotFoundError:
            return True
        try:
            await self.client.delete(secret)
        except NotFoundError:
            pass
        return False

    async def _proxy_data(self, runner_set: Object, proxy: dict[str, Any]) -> dict[str, bytes]:
        """Python only: read the proxy's credential secrets and build the proxy secret data."""
        namespace = objects.namespace(runner_set)
        credentials: dict[str, dict[str, bytes]] = {}
        for part in ("http", "https"):
            ref = (proxy.get(part) or {}).get("credentialSecretRef")
            if ref and ref not in credentials:
                secret = await self.client.get(SECRET, ObjectKey(namespace, ref))
                credentials[ref] = objects.decoded_secret_data(secret)
        return proxy_secret_data(proxy, credentials)

    async def reconcile_proxy_secret(self, runner_set: Object) -> None:
        """Create the proxy secret, or merge-patch the parts of it that drifted.

        Ports: EphemeralRunnerSetReconciler.reconcileEphemeralRunnerSetProxySecret
        """
        proxy = runner_proxy(runner_set)
        if proxy is None:
            return
        key = _proxy_secret_key(runner_set)
        try:
            live = await self.client.get(SECRET, key)
        except NotFoundError:
            desired = new_ephemeral_runner_set_proxy_secret(runner_set, await self._proxy_data(runner_set, proxy))
            await self.client.create(desired)
            log.info("created EphemeralRunnerSet proxy secret", secret=key.name)
            return
        desired = new_ephemeral_runner_set_proxy_secret(runner_set, await self._proxy_data(runner_set, proxy))
        meta = live["metadata"]
        labels = {**objects.labels(live), **desired["metadata"]["labels"]}
        annotations = {**objects.annotations(live), **desired["metadata"]["annotations"]}
        lazy = LazyCopy(live)
        if not semantic_equal(live.get("data"), desired["data"]):
            lazy.mutate()["data"] = desired["data"]
        if not semantic_equal(meta.get("labels"), labels):
            lazy.mutate()["metadata"]["labels"] = labels
        if not semantic_equal(meta.get("annotations"), annotations):
            lazy.mutate()["metadata"]["annotations"] = annotations
        if lazy.modified():
            await self.client.patch(live, lazy.merge_from())
            log.info("updated EphemeralRunnerSet proxy secret", secret=key.name)
