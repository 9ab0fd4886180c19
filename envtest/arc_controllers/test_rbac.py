"""RBAC enforced by the real API server: the controller holds only what ARC's two Helm charts grant it,
and the listener only the Role the controller made for it.

arc-manager-helm-rbac.md §3.5, §3.8, §4.2 (controller) and §5.2 (listener). These tests
check the identities themselves; every other arc_controllers envtest runs its controllers
and listeners the same way by default (``ARC_ENVTEST_CHART_RBAC=0`` opts out).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from arc_controllers.listener.scaler import Scaler
from arc_controllers.resourcebuilder.listener import scale_set_listener_name
from reconcilekit.cache import Options as CacheOptions
from reconcilekit.cache import new_cache
from reconcilekit.client import new_client
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.client.patch import raw_patch
from reconcilekit.config import load_rest_config
from reconcilekit.errors import ForbiddenError

from .chart_rbac import CONTROLLER_SERVICE_ACCOUNT, install_chart_rbac, scale_set_fullname, service_account_config
from .conftest import Harness
from .scaleset_world import ARS, ER, ERS, POD, ROLE, ROLE_BINDING, SA, SECRET, World, eventually, world

__all__ = ["world"]

CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")


@dataclass(frozen=True)
class _JobStarted:
    """The fields of a JobStarted message the scaler reads."""

    runner_name: str
    runner_request_id: int = 7
    repository_name: str = "repo"
    owner_name: str = "owner"
    job_id: str = "job-1"
    job_workflow_ref: str = "owner/repo/.github/workflows/ci.yaml@refs/heads/main"
    job_display_name: str = "build"
    workflow_run_id: int = 42
    event_name: str = "push"
    queue_time: datetime | None = None
    scale_set_assign_time: datetime | None = None
    runner_assign_time: datetime | None = None


async def _running(w: World) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        ars = await w.get(ARS, w.name)
        status = ars.get("status") or {}
        ok = status.get("phase") == "Running" and status.get("observedGeneration") == ars["metadata"]["generation"]
        return ars if ok else None

    result: dict[str, Any] = await eventually(check)
    return result


async def test_controller_with_only_chart_rbac_runs_a_scale_set_lifecycle(world: World) -> None:
    w = world
    await w.start(chart_rbac=True)
    admin = await load_rest_config(w.env.kubeconfig_path)
    restricted = new_client(
        await service_account_config(w.client, admin, namespace=w.controller_namespace, name=CONTROLLER_SERVICE_ACCOUNT)
    )
    w.closers.append(restricted)
    # the identity really is restricted: no config maps without TLS, no secrets outside the two namespaces
    with pytest.raises(ForbiddenError):
        await restricted.list(CONFIG_MAP, namespace=w.namespace)
    with pytest.raises(ForbiddenError):
        await restricted.list(SECRET, namespace="kube-system")
    with pytest.raises(ForbiddenError):
        await restricted.list(SECRET, namespace=w.controller_namespace)

    await w.client.create(w.ars())
    ars = await _running(w)
    listener_name = scale_set_listener_name(ars)

    async def listener_pod() -> dict[str, Any] | None:
        return await w.find(POD, listener_name, w.controller_namespace)

    await eventually(listener_pod)
    template = {"spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:2.330.0"}]}}
    ars = await w.patch(ars, {"spec": {"template": template, "maxRunners": 3}})

    async def updated() -> bool:
        ers = await w.get(ERS, w.name)
        listener = await w.listener_of(ars)
        return (
            int(ers["spec"].get("actionableRevision") or 0) >= 1
            and listener is not None
            and listener["spec"]["maxRunners"] == 3
        )

    await eventually(updated)
    await _running(w)
    await w.client.delete(await w.get(ARS, w.name))

    async def gone() -> bool:
        return await w.find(ARS, w.name) is None and await w.find(ERS, w.name) is None and not await w.listeners()

    await eventually(gone)


async def test_controller_with_only_chart_rbac_releases_the_charts_manager_role(world: World) -> None:
    """Spec §5.9 with the chart's own objects: the ``<ssn>-gha-rs-manager`` Role and RoleBinding
    that grant the controller its rights in the namespace, both carrying
    ``actions.github.com/cleanup-protection``, are released after the scale set is deleted.

    The RoleBinding's finalizer goes first (the Role it binds grants ``rolebindings patch``);
    once it is gone the namespace Role no longer applies, so taking the Role's finalizer off
    needs the ClusterRole's ``roles patch`` (arc-manager-helm-rbac.md §3.5), which is what
    this test pins: narrowed to list/watch, that patch is refused (403) and the scale set
    never goes.
    """
    w = world
    await w.start(chart_rbac=True)
    manager = f"{scale_set_fullname(w.name)}-manager"
    role = await w.get(ROLE, manager)
    binding = await w.get(ROLE_BINDING, manager)
    assert role["metadata"]["finalizers"] == ["actions.github.com/cleanup-protection"]
    assert binding["metadata"]["finalizers"] == ["actions.github.com/cleanup-protection"]
    assert binding["subjects"][0]["name"] == CONTROLLER_SERVICE_ACCOUNT
    body = w.ars()
    body["metadata"]["annotations"] = {
        "actions.github.com/cleanup-manager-role-name": manager,
        "actions.github.com/cleanup-manager-role-binding": manager,
    }
    await w.client.create(body)
    ars = await _running(w)
    # helm uninstall: the scale set and the chart's objects are deleted together
    await w.client.delete(ars)
    await w.client.delete(binding)
    await w.client.delete(role)

    async def all_gone() -> bool:
        return (
            await w.find(ARS, w.name) is None
            and await w.find(ROLE_BINDING, manager) is None
            and await w.find(ROLE, manager) is None
        )

    await eventually(all_gone, within=30)


async def test_listener_with_only_its_role_scales_and_records_jobs(world: World) -> None:
    w = world
    await w.start(chart_rbac=True, enabled=("autoscalingrunnerset", "autoscalinglistener"))
    await w.client.create(w.ars())
    ars = await _running(w)
    name = scale_set_listener_name(ars)

    async def ready() -> bool:
        return all(
            [
                await w.find(SA, name, w.controller_namespace),
                await w.find(ROLE, name),
                await w.find(ROLE_BINDING, name),
                await w.find(POD, name, w.controller_namespace),
            ]
        )

    await eventually(ready)
    admin = await load_rest_config(w.env.kubeconfig_path)
    listener_client = new_client(
        await service_account_config(w.client, admin, namespace=w.controller_namespace, name=name)
    )
    w.closers.append(listener_client)

    # the listener's own calls (cmd/ghalistener/scaler): patch the set, get and patch its runners' status
    scaler = Scaler(listener_client, namespace=w.namespace, runner_set_name=w.name, min_runners=0, max_runners=10)
    await scaler.handle_desired_runner_count(2)
    assert (await w.get(ERS, w.name))["spec"]["replicas"] == 2
    runner = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": "runner-1", "namespace": w.namespace},
        "spec": {
            "githubConfigUrl": w.service.config_url(),
            "githubConfigSecret": "github-config-secret",
            "runnerScaleSetId": int(ars["metadata"]["annotations"]["runner-scale-set-id"]),
            "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}]},
        },
    }
    await w.client.create(runner)
    await scaler.handle_job_started(_JobStarted(runner_name="runner-1"))
    status = (await w.get(ER, "runner-1")).get("status") or {}
    assert (status.get("phase"), status.get("jobId"), status.get("workflowRunId")) == ("Running", "job-1", 42)

    # and nothing else: another set, listing runners, secrets
    other = await w.client.create(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": "other", "namespace": w.namespace},
            "spec": {
                "replicas": 0,
                "patchID": 0,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": "x",
                    "githubConfigSecret": "y",
                    "runnerScaleSetId": 1,
                    "spec": {"containers": [{"name": "runner", "image": "x"}]},
                },
            },
        }
    )
    with pytest.raises(ForbiddenError):
        await listener_client.patch(other, raw_patch("application/merge-patch+json", '{"spec":{"replicas":1}}'))
    with pytest.raises(ForbiddenError):
        await listener_client.list(ER, namespace=w.namespace)
    with pytest.raises(ForbiddenError):
        await listener_client.get(SECRET, ObjectKey(w.namespace, "github-config-secret"))
    with pytest.raises(ForbiddenError):
        await listener_client.get(ERS, ObjectKey(w.namespace, w.name))


async def test_a_forbidden_watch_is_logged_at_error_level_and_never_syncs(world: World) -> None:
    """An informer on a kind the charts do not let the controller list fails loudly, not silently.

    ConfigMaps in the scale set's namespace: the charts grant ``get`` at most (with
    githubServerTLS), never list or watch. Each refused cycle is an error-level
    ``list and watch forbidden`` line naming the kind and namespace; the informer never
    reports synced (a manager would hit its cache-sync timeout), while Pods, which the
    ClusterRole grants, sync.
    """
    w = world
    await install_chart_rbac(
        w.client, controller_namespace=w.controller_namespace, namespace=w.namespace, scale_set_name=w.name
    )
    w.restricted = True  # the fixture removes the ClusterRole and its binding
    admin = await load_rest_config(w.env.kubeconfig_path)
    restricted = new_client(
        await service_account_config(w.client, admin, namespace=w.controller_namespace, name=CONTROLLER_SERVICE_ACCOUNT)
    )
    w.closers.append(restricted)
    with capture_logs() as events:
        cache = new_cache(restricted, CacheOptions(default_namespaces=[w.namespace]))
        config_maps = await cache.get_informer(CONFIG_MAP)
        pods = await cache.get_informer(POD)
        task = asyncio.create_task(cache.start(), name="forbidden-cache")
        try:

            async def refused_twice() -> bool:
                return cache.informer_stats(CONFIG_MAP)[w.namespace].forbidden >= 2

            await eventually(refused_twice, within=30)
            assert pods.has_synced()
            assert not config_maps.has_synced()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    refused = [e for e in events if e["log_level"] == "error" and e["event"].startswith("list and watch forbidden")]
    assert len(refused) >= 2
    assert {(e["gvk"], e["namespace"]) for e in refused} == {(str(CONFIG_MAP), w.namespace)}
    assert 'cannot list resource "configmaps"' in refused[0]["error"]
    assert cache.informer_stats(POD)[w.namespace].forbidden == 0


async def test_harness_grants_config_map_get_only_when_a_ca_bundle_is_there(harness: Harness) -> None:
    """The ERS/ER harness renders the scale-set chart with githubServerTLS when the test put a ConfigMap
    (the CA bundle) in the namespace before starting: ``get`` on it, still no ``list``."""
    h = harness
    await h.client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "root-ca", "namespace": h.namespace},
            "data": {"ca.crt": "x"},
        }
    )
    restricted = new_client(await h.controller_config())
    h.clients.append(restricted)
    if h.controller_namespace is None:
        pytest.skip("ARC_ENVTEST_CHART_RBAC=0: the harness runs as admin")
    assert (await restricted.get(CONFIG_MAP, ObjectKey(h.namespace, "root-ca")))["data"] == {"ca.crt": "x"}
    with pytest.raises(ForbiddenError):
        await restricted.list(CONFIG_MAP, namespace=h.namespace)
