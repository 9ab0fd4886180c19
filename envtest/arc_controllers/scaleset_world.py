"""A world for the scale set and listener controllers: two namespaces, the fake Actions service, a manager.

Upstream's suites start one manager per spec, with the controller namespace separate
from the scale set's namespace; here each test gets both namespaces, the config secret
holding the fake service's token, and a manager running all four controllers
(`setup_controllers`), by default as the ServiceAccount ARC's Helm charts bind (`chart_rbac`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.api.v1alpha1 import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    CONFIG_MAP,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
)
from arc_controllers.controllers import Controllers, ControllersOptions, setup_controllers
from arc_controllers.resourcebuilder.listener import scale_set_listener_name
from reconcilekit.cache import Options as CacheOptions
from reconcilekit.client import new_client
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.client.patch import raw_patch
from reconcilekit.config import load_rest_config
from reconcilekit.envtest import Environment
from reconcilekit.errors import NotFoundError
from reconcilekit.manager import Options, new_manager

from .chart_rbac import (
    CONTROLLER_SERVICE_ACCOUNT,
    chart_rbac_enabled,
    install_chart_rbac,
    service_account_config,
    uninstall_chart_rbac,
)
from .polling import consistently as consistently  # re-exported for the test modules
from .polling import eventually

ARS = AUTOSCALING_RUNNER_SET
LISTENER = AUTOSCALING_LISTENER
ERS = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunnerSet")
ER = GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunner")
POD = GroupVersionKind("", "v1", "Pod")
SECRET = GroupVersionKind("", "v1", "Secret")
SA = SERVICE_ACCOUNT
MERGE = "application/merge-patch+json"
LISTENER_IMAGE = "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2"
RUNNER_IMAGE = "ghcr.io/actions/actions-runner:latest"

__all__ = [
    "ARS",
    "CONFIG_MAP",
    "ER",
    "ERS",
    "LISTENER",
    "LISTENER_IMAGE",
    "POD",
    "ROLE",
    "ROLE_BINDING",
    "RUNNER_IMAGE",
    "SA",
    "SECRET",
    "World",
    "eventually",
    "follow_listener_uids",
    "owned_tasks",
    "world",
]


@contextlib.asynccontextmanager
async def owned_tasks(*coros: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """Run ``coros`` as tasks for the block (watch followers); each is cancelled and awaited on exit."""
    tasks = [asyncio.create_task(coro, name=f"follower-{n}") for n, coro in enumerate(coros)]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


@dataclass
class World:
    """One test's world: admin client, the scale set and controller namespaces, the fake service."""

    env: Environment
    namespace: str
    controller_namespace: str
    service: FakeActionsService
    client: Any
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    closers: list[Any] = field(default_factory=list)
    controllers: Controllers | None = None
    restricted: bool = False

    @property
    def name(self) -> str:
        """A per-test AutoscalingRunnerSet name (scale set names are global in the fake service)."""
        return "asrs-" + self.namespace.rsplit("-", 1)[-1]

    async def start(
        self,
        *,
        chart_rbac: bool | None = None,
        tls: bool = False,
        wrap_client: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> Controllers:
        """Start a manager with the controllers (all four unless ``enabled`` says otherwise).

        With ``chart_rbac`` (default: on, unless env ``ARC_ENVTEST_CHART_RBAC=0``) the manager
        runs as a ServiceAccount holding only the rules ARC's Helm charts grant (`chart_rbac`):
        the controller chart's, and the scale-set chart's for a release named `name` in
        `namespace` (``tls``: rendered with ``githubServerTLS``).
        ``wrap_client`` wraps the manager's client (e.g. a `reconcilekit.testing.InterceptorClient`
        recording or refusing calls), as upstream hands its reconcilers an interceptor.
        """
        config = await load_rest_config(self.env.kubeconfig_path)
        if chart_rbac is None:
            chart_rbac = chart_rbac_enabled()
        if chart_rbac:
            if not self.restricted:  # a restarted manager reuses the rules installed for the first
                await install_chart_rbac(
                    self.client,
                    controller_namespace=self.controller_namespace,
                    namespace=self.namespace,
                    scale_set_name=self.name,
                    tls=tls,
                )
            config = await service_account_config(
                self.client, config, namespace=self.controller_namespace, name=CONTROLLER_SERVICE_ACCOUNT
            )
            self.restricted = True
        rest = new_client(config)
        self.closers.append(rest)
        client = wrap_client(rest) if wrap_client is not None else rest
        # The cache is held to this test's two namespaces (ARC's single-namespace mode does the
        # same); a cluster-wide cache would also reconcile other tests' leftovers.
        cache = CacheOptions(default_namespaces=[self.namespace, self.controller_namespace])
        mgr = new_manager(
            config, Options(metrics_bind_address="0", uncached=[SECRET, CONFIG_MAP], cache=cache), client=client
        )
        controllers = await setup_controllers(
            mgr,
            ControllersOptions(
                controller_namespace=self.controller_namespace,
                listener_image=LISTENER_IMAGE,
                skip_name_validation=True,
                **options,
            ),
        )
        self.closers.append(controllers)
        self.controllers = controllers
        self.tasks.append(asyncio.create_task(mgr.start(), name=f"manager-{self.namespace}-{len(self.tasks)}"))
        return controllers

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()
        for closer in self.closers:
            with contextlib.suppress(Exception):
                if hasattr(closer, "aclose"):
                    await closer.aclose()
                else:
                    await closer.close()
        self.closers.clear()

    def ars(self, *, name: str | None = None, **spec: Any) -> dict[str, Any]:
        """An AutoscalingRunnerSet like upstream's test fixture: max 10, min 0, one runner container."""
        body: dict[str, Any] = {
            "githubConfigUrl": self.service.config_url(),
            "githubConfigSecret": "github-config-secret",
            "maxRunners": 10,
            "minRunners": 0,
            "template": {"spec": {"containers": [{"name": "runner", "image": RUNNER_IMAGE}]}},
        }
        body.update(spec)
        return {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "AutoscalingRunnerSet",
            "metadata": {"name": name or self.name, "namespace": self.namespace},
            "spec": body,
        }

    async def get(self, gvk: GroupVersionKind, name: str, namespace: str | None = None) -> dict[str, Any]:
        got: dict[str, Any] = await self.client.get(gvk, ObjectKey(namespace or self.namespace, name))
        return got

    async def find(self, gvk: GroupVersionKind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return await self.get(gvk, name, namespace)
        except NotFoundError:
            return None

    async def listener_of(self, ars: dict[str, Any]) -> dict[str, Any] | None:
        return await self.find(LISTENER, scale_set_listener_name(ars), self.controller_namespace)

    async def listeners(self) -> list[dict[str, Any]]:
        return list((await self.client.list(LISTENER, namespace=self.controller_namespace)).items)

    async def patch(self, obj: dict[str, Any], body: dict[str, Any], *, status: bool = False) -> dict[str, Any]:
        writer = self.client.status() if status else self.client
        patched: dict[str, Any] = await writer.patch(obj, raw_patch(MERGE, json.dumps(body)))
        return patched

    async def purge(self) -> None:
        """Upstream's cleanup helper, then delete: finalizers off and every ARC object gone.

        Without a namespace controller (envtest) a deleted namespace keeps its objects,
        and the next test's cluster-wide manager would reconcile them.
        """
        for gvk, namespace in (
            (ARS, self.namespace),
            (LISTENER, self.controller_namespace),
            (ERS, self.namespace),
            (ER, self.namespace),
        ):
            with contextlib.suppress(Exception):
                for obj in (await self.client.list(gvk, namespace=namespace)).items:
                    with contextlib.suppress(Exception):
                        if obj["metadata"].get("finalizers"):
                            await self.patch(obj, {"metadata": {"finalizers": None}})
                        await self.client.delete(obj)


async def follow_listener_uids(w: World, resource_version: str, *, added: list[str], deleted: list[str]) -> None:
    """Append the UID of every listener ADDED / DELETED in the controller namespace after ``resource_version``."""
    async for event in w.client.watch(LISTENER, namespace=w.controller_namespace, resource_version=resource_version):
        if event.type == "ADDED":
            added.append(event.object["metadata"]["uid"])
        elif event.type == "DELETED":
            deleted.append(event.object["metadata"]["uid"])


@pytest_asyncio.fixture(loop_scope="session")
async def world(
    envtest_environment: Environment, arc_crds: None, namespace: str, actions_service: FakeActionsService
) -> AsyncIterator[World]:
    config = await load_rest_config(envtest_environment.kubeconfig_path)
    client = new_client(config)
    controller_namespace = await envtest_environment.create_namespace(prefix="arc-system-")
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "github-config-secret", "namespace": namespace},
            "data": {"github_token": base64.b64encode(actions_service.github.pat.encode()).decode()},
        }
    )
    w = World(envtest_environment, namespace, controller_namespace, actions_service, client)
    try:
        yield w
    finally:
        await w.stop()
        await w.purge()
        if w.restricted:
            await uninstall_chart_rbac(client, controller_namespace=controller_namespace)
        with contextlib.suppress(Exception):
            await envtest_environment.delete_namespace(controller_namespace)
        await client.close()
