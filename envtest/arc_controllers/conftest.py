"""Fixtures for the runner controllers on a real API server: CRDs, the fake Actions service, a manager.

Upstream's suites start one manager per spec with the fake multi-client; here each test
gets a namespace, a config secret with the fake service's token, a scale set registered
in the fake service, and a manager running the controllers it asks for: by default as
the ServiceAccount ARC's Helm charts bind, in a controller namespace of its own, holding
only the charts' rules (`chart_rbac`; ``ARC_ENVTEST_CHART_RBAC=0`` runs it as admin).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_asyncio

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.controllers import ephemeralrunner, ephemeralrunnerset
from arc_controllers.controllers.actions_seam import SecretActionsClientFactory
from arc_controllers.controllers.indexers import setup_runner_indexers
from reconcilekit.cache import Options as CacheOptions
from reconcilekit.client import new_client
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.client.patch import raw_patch
from reconcilekit.config import load_rest_config
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.envtest import Environment
from reconcilekit.manager import Options, new_manager

from .chart_rbac import (
    CONTROLLER_SERVICE_ACCOUNT,
    chart_rbac_enabled,
    install_chart_rbac,
    service_account_config,
    uninstall_chart_rbac,
)
from .polling import consistently as consistently  # re-exported for the test modules
from .polling import eventually as eventually

CRDS = Path(__file__).resolve().parents[2] / "config" / "crd"


def setup_ephemeral_runner_set_reconciler(
    mgr: Any, *, actions: Any, skip_name_validation: bool = False
) -> ephemeralrunnerset.EphemeralRunnerSetReconciler:
    """The EphemeralRunnerSet reconciler on ``mgr``, as the manager builds it (default concurrency)."""
    reconciler = ephemeralrunnerset.EphemeralRunnerSetReconciler(
        client=mgr.get_client(), api_reader=mgr.get_api_reader(), actions=actions
    )
    reconciler.setup_with_manager(
        mgr,
        options=ControllerOptions(
            max_concurrent_reconciles=ephemeralrunnerset.DEFAULT_CONCURRENCY, skip_name_validation=skip_name_validation
        ),
    )
    return reconciler


def setup_ephemeral_runner_reconciler(
    mgr: Any, *, actions: Any, skip_name_validation: bool = False, **fields: Any
) -> ephemeralrunner.EphemeralRunnerReconciler:
    """The EphemeralRunner reconciler on ``mgr`` with its own unregistration queue (default concurrency).

    ``fields`` are further reconciler fields (e.g. ``failed_recycle_age``).
    """
    reconciler = ephemeralrunner.EphemeralRunnerReconciler(
        client=mgr.get_client(), actions=actions, unregistration_queue=None, **fields
    )
    reconciler.setup_with_manager(
        mgr,
        options=ControllerOptions(
            max_concurrent_reconciles=ephemeralrunner.DEFAULT_CONCURRENCY, skip_name_validation=skip_name_validation
        ),
    )
    return reconciler


ERS = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunnerSet")
ER = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunner")
POD = GroupVersionKind("", "v1", "Pod")
SECRET = GroupVersionKind("", "v1", "Secret")
CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
MERGE = "application/merge-patch+json"


@pytest_asyncio.fixture(loop_scope="session", scope="session")
async def arc_crds(envtest_environment: Environment) -> None:
    await envtest_environment.install_crds([CRDS])


@pytest_asyncio.fixture(loop_scope="session", scope="session")
async def actions_service() -> AsyncIterator[FakeActionsService]:
    async with FakeActionsService() as svc:
        yield svc


@dataclass
class Harness:
    """One test's world: a direct client, the namespace, the scale set id, and a way to run controllers."""

    env: Environment
    namespace: str
    service: FakeActionsService
    scale_set_id: int
    client: Any
    managers: list[asyncio.Task[None]] = field(default_factory=list)
    factories: list[SecretActionsClientFactory] = field(default_factory=list)
    clients: list[Any] = field(default_factory=list)
    controller_namespace: str | None = None
    """Where the controller's ServiceAccount lives (chart RBAC only; created by the first `start`)."""
    actions_requests: list[dict[str, Any]] = field(default_factory=list)
    """Every Actions client the controllers asked for: the object's kind, name and whether it was deleting."""

    async def controller_config(self, *, tls: bool | None = None) -> Any:
        """The REST config the controllers run with: chart RBAC's ServiceAccount, or admin when opted out.

        The ServiceAccount gets the controller chart's rules and the scale-set chart's manager
        Role in `namespace` (release ``set``, like `runner_set`'s default name), rendered with
        ``githubServerTLS`` (ConfigMap ``get``) when ``tls``; ``None``: when the namespace
        already holds a ConfigMap (a test that put a CA bundle there before starting).
        """
        config = await load_rest_config(self.env.kubeconfig_path)
        if not chart_rbac_enabled():
            return config
        if self.controller_namespace is None:
            self.controller_namespace = await self.env.create_namespace(prefix="arc-system-")
        if tls is None:
            tls = bool((await self.client.list(CONFIG_MAP, namespace=self.namespace)).items)
        await install_chart_rbac(
            self.client,
            controller_namespace=self.controller_namespace,
            namespace=self.namespace,
            scale_set_name="set",
            tls=tls,
        )
        return await service_account_config(
            self.client, config, namespace=self.controller_namespace, name=CONTROLLER_SERVICE_ACCOUNT
        )

    async def release_deleting_runners(self) -> None:
        """Upstream's finalizer-stripping helper, run in a loop: with no runner controller, a deleted
        runner's finalizers are dropped so the deletion completes."""
        while True:
            with contextlib.suppress(Exception):
                for obj in (await self.client.list(ER, namespace=self.namespace)).items:
                    finalizers = obj["metadata"].get("finalizers") or []
                    kept = [f for f in finalizers if not f.startswith("ephemeralrunner.actions.github.com/")]
                    if obj["metadata"].get("deletionTimestamp") and kept != finalizers:
                        body = json.dumps({"metadata": {"finalizers": kept or None}})
                        await self.client.patch(obj, raw_patch(MERGE, body))
            await asyncio.sleep(0.2)

    async def start(
        self,
        *,
        runner_set: bool = True,
        runner: bool = True,
        client: Any = None,
        tls: bool | None = None,
        runner_fields: dict[str, Any] | None = None,
    ) -> Any:
        """Start a manager running the chosen reconcilers; returns the manager.

        Without the runner controller, deleted runners are released by `release_deleting_runners`.
        The manager runs as `controller_config` says (chart RBAC unless opted out; ``tls`` is
        passed on); a ``client`` given here is used as is. ``runner_fields`` are given to the
        EphemeralRunner reconciler (e.g. ``failed_recycle_age``).
        """
        if not runner:
            self.managers.append(
                asyncio.create_task(self.release_deleting_runners(), name=f"strip-finalizers-{self.namespace}")
            )
        config = await self.controller_config(tls=tls)
        if client is None:
            client = new_client(config)
        self.clients.append(client)
        # One namespace per manager, as upstream's createNamespace does: a cluster-wide cache
        # would hand this test's runner controller the leftover runners of earlier tests'
        # terminating namespaces (JIT registrations, 403s on their secrets, delayed work).
        options = Options(
            metrics_bind_address="0", uncached=[SECRET], cache=CacheOptions(default_namespaces=[self.namespace])
        )
        mgr = new_manager(config, options, client=client)
        factory = SecretActionsClientFactory(mgr.get_api_reader())
        self.factories.append(factory)

        async def actions(obj: dict[str, Any]) -> Any:
            meta = obj.get("metadata") or {}
            asked = {"kind": obj.get("kind"), "name": meta.get("name"), "deleting": bool(meta.get("deletionTimestamp"))}
            self.actions_requests.append(asked)
            return await factory(obj)

        await setup_runner_indexers(mgr)
        if runner_set:
            setup_ephemeral_runner_set_reconciler(mgr, actions=actions, skip_name_validation=True)
        if runner:
            setup_ephemeral_runner_reconciler(mgr, actions=actions, skip_name_validation=True, **(runner_fields or {}))
        task = asyncio.create_task(mgr.start(), name=f"manager-{self.namespace}-{len(self.managers)}")
        self.managers.append(task)
        return mgr

    async def stop(self) -> None:
        for task in self.managers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.managers.clear()
        for factory in self.factories:
            await factory.aclose()
        self.factories.clear()
        for client in self.clients:
            await client.close()
        self.clients.clear()

    def runner_set(self, *, replicas: int = 0, patch_id: int = 0, name: str = "set", **spec: Any) -> dict[str, Any]:
        runner_spec = {
            "githubConfigUrl": self.service.config_url(),
            "githubConfigSecret": "github-config",
            "runnerScaleSetId": self.scale_set_id,
            "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}]},
        }
        runner_spec.update(spec.pop("ephemeralRunnerSpec", {}))
        return {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    "actions.github.com/scale-set-name": name,
                    "actions.github.com/scale-set-namespace": self.namespace,
                },
            },
            "spec": {"replicas": replicas, "patchID": patch_id, "ephemeralRunnerSpec": runner_spec, **spec},
        }

    async def runners(self, name: str = "set") -> list[dict[str, Any]]:
        listed = await self.client.list(ER, namespace=self.namespace)
        return [
            r
            for r in listed.items
            if any(ref.get("name") == name for ref in r["metadata"].get("ownerReferences") or [])
        ]

    async def get(self, gvk: GroupVersionKind, name: str) -> dict[str, Any]:
        got: dict[str, Any] = await self.client.get(gvk, ObjectKey(self.namespace, name))
        return got

    async def patch_spec(self, gvk: GroupVersionKind, name: str, spec: dict[str, Any]) -> None:
        obj = await self.get(gvk, name)
        await self.client.patch(obj, raw_patch(MERGE, json.dumps({"spec": spec})))

    async def patch_status(self, gvk: GroupVersionKind, name: str, status: dict[str, Any]) -> None:
        obj = await self.get(gvk, name)
        await self.client.status().patch(obj, raw_patch(MERGE, json.dumps({"status": status})))


@pytest_asyncio.fixture(loop_scope="session")
async def harness(
    envtest_environment: Environment, arc_crds: None, namespace: str, actions_service: FakeActionsService
) -> AsyncIterator[Harness]:
    config = await load_rest_config(envtest_environment.kubeconfig_path)
    client = new_client(config)
    token = actions_service.github.pat
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "github-config", "namespace": namespace},
            "data": {"github_token": base64.b64encode(token.encode()).decode()},
        }
    )
    scale_set = actions_service.state.create_scale_set({"name": namespace, "runnerGroupId": 1})
    h = Harness(envtest_environment, namespace, actions_service, scale_set.id, client)
    try:
        yield h
    finally:
        await h.stop()
        await strip_finalizers(h)
        if h.controller_namespace is not None:
            await uninstall_chart_rbac(client, controller_namespace=h.controller_namespace)
            with contextlib.suppress(Exception):
                await envtest_environment.delete_namespace(h.controller_namespace)
        await client.close()


async def strip_finalizers(h: Harness) -> None:
    """Upstream's helper: runner finalizers are stripped so namespaces can go (no runner controller)."""
    for gvk in (ER, ERS):
        with contextlib.suppress(Exception):
            for obj in (await h.client.list(gvk, namespace=h.namespace)).items:
                if obj["metadata"].get("finalizers"):
                    await h.client.patch(obj, raw_patch(MERGE, json.dumps({"metadata": {"finalizers": None}})))
