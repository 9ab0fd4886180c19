"""The RBAC ARC's two Helm charts grant the controller, as objects, and a controller identity holding only that.

Rules are arc-manager-helm-rbac.md §3.5 (manager ClusterRole, multi-namespace mode), §3.8
(controller-namespace "listener" Role, later master: with pod ``patch``) and §4.2 (the
per-scale-set manager Role in the runner namespace, configmaps ``get`` only with
``githubServerTLS``). The controller runs as a ServiceAccount in the controller namespace,
bound like the charts bind it; its token comes from the TokenRequest API.

Every arc_controllers envtest that runs a controller or a listener uses this identity unless
``ARC_ENVTEST_CHART_RBAC=0`` (`chart_rbac_enabled`); fixtures are still created as admin.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

from arc_controllers.cmd.sim import podidentity
from arc_controllers.cmd.sim.podidentity import request_token
from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.config import RestConfig
from reconcilekit.errors import AlreadyExistsError, NotFoundError

__all__ = [
    "CONTROLLER_SERVICE_ACCOUNT",
    "chart_rbac_enabled",
    "controller_fullname",
    "install_chart_rbac",
    "install_controller_chart_rbac",
    "install_scale_set_chart_rbac",
    "manager_cluster_role_rules",
    "manager_role_rules",
    "scale_set_fullname",
    "service_account_config",
    "service_account_kubeconfig",
    "service_account_token",
    "uninstall_chart_rbac",
]

CONTROLLER_SERVICE_ACCOUNT = "arc-gha-rs-controller"
RBAC = "rbac.authorization.k8s.io"
SA = GroupVersionKind("", "v1", "ServiceAccount")
CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def manager_cluster_role_rules() -> list[dict[str, Any]]:
    """§3.5: ClusterRole ``<fullname>``."""
    a = "actions.github.com"
    return [
        _rule([a], ["autoscalingrunnersets"], CRUD),
        _rule([a], ["autoscalingrunnersets/finalizers"], ["patch", "update"]),
        _rule([a], ["autoscalingrunnersets/status"], ["get", "patch", "update"]),
        _rule([a], ["autoscalinglisteners"], CRUD),
        _rule([a], ["autoscalinglisteners/status"], ["get", "patch", "update"]),
        _rule([a], ["autoscalinglisteners/finalizers"], ["patch", "update"]),
        _rule([a], ["ephemeralrunnersets"], CRUD),
        _rule([a], ["ephemeralrunnersets/status"], ["get", "patch", "update"]),
        _rule([a], ["ephemeralrunnersets/finalizers"], ["patch", "update"]),
        _rule([a], ["ephemeralrunners"], CRUD),
        _rule([a], ["ephemeralrunners/finalizers"], ["patch", "update"]),
        _rule([a], ["ephemeralrunners/status"], ["get", "patch", "update"]),
        _rule([""], ["pods"], ["list", "watch"]),
        _rule([""], ["serviceaccounts"], ["list", "watch"]),
        _rule([RBAC], ["rolebindings"], ["list", "watch"]),
        _rule([RBAC], ["roles"], ["list", "watch", "patch"]),
    ]


def listener_namespace_role_rules() -> list[dict[str, Any]]:
    """§3.8: Role ``<fullname>-listener`` in the controller namespace (later master: pods ``patch``)."""
    return [
        _rule([""], ["pods"], ["create", "delete", "get", "patch"]),
        _rule([""], ["pods/status"], ["get"]),
        _rule([""], ["secrets"], ["create", "delete", "get", "patch", "update"]),
        _rule([""], ["serviceaccounts"], ["create", "delete", "get", "patch", "update"]),
    ]


def manager_role_rules(*, tls: bool = False) -> list[dict[str, Any]]:
    """§4.2: Role ``<fullname>-manager`` in the scale set's namespace."""
    rules = [
        _rule([""], ["pods"], ["create", "delete", "get"]),
        _rule([""], ["pods/status"], ["get"]),
        _rule([""], ["secrets"], ["create", "delete", "get", "list", "patch", "update"]),
        _rule([""], ["serviceaccounts"], ["create", "delete", "get", "list", "patch", "update"]),
        _rule([RBAC], ["rolebindings"], ["create", "delete", "get", "patch", "update"]),
        _rule([RBAC], ["roles"], ["create", "delete", "get", "patch", "update"]),
    ]
    if tls:
        rules.append(_rule([""], ["configmaps"], ["get"]))
    return rules


def chart_rbac_enabled() -> bool:
    """Whether controllers and listeners run under chart RBAC: on unless ``ARC_ENVTEST_CHART_RBAC=0``.

    Python only: the opt-out is for debugging (an admin identity hides 403s; see the README).
    """
    return os.environ.get("ARC_ENVTEST_CHART_RBAC", "1").strip().lower() not in ("0", "false", "no", "off")


def controller_fullname(controller_namespace: str) -> str:
    """The controller chart's ``<fullname>`` for a release named after ``controller_namespace``.

    Cluster-scoped names must not collide between tests, so each test's controller is its
    own Helm release ``<controller namespace>`` (fullname ``<release>-gha-rs-controller``).
    """
    return f"{controller_namespace}-gha-rs-controller"[:63].rstrip("-")


def scale_set_fullname(scale_set_name: str) -> str:
    """§4.1: the scale-set chart's ``<fullname>`` = ``<ssn>-gha-rs`` (trunc 63, trailing ``-`` removed)."""
    return f"{scale_set_name}-gha-rs"[:63].rstrip("-")


def scale_set_chart_labels(scale_set_name: str, namespace: str, component: str) -> dict[str, str]:
    """§4.1: the labels the scale-set chart puts on what it renders (chart 0.14.2)."""
    return {
        "helm.sh/chart": "gha-rs-0.14.2",
        "app.kubernetes.io/name": scale_set_name,
        "app.kubernetes.io/instance": scale_set_name,
        "app.kubernetes.io/version": "0.14.2",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/part-of": "gha-rs",
        "actions.github.com/scale-set-name": scale_set_name,
        "actions.github.com/scale-set-namespace": namespace,
        "app.kubernetes.io/component": component,
    }


def _binding(kind: str, name: str, namespace: str | None, sa_namespace: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding" if kind == "ClusterRole" else "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": CONTROLLER_SERVICE_ACCOUNT, "namespace": sa_namespace}],
    }


async def _create(client: Any, obj: dict[str, Any]) -> None:
    """Create ``obj``; one already there is fine (a test may start its controller twice)."""
    try:
        await client.create(obj)
    except AlreadyExistsError:
        pass


async def install_controller_chart_rbac(client: Any, *, controller_namespace: str) -> None:
    """What the ``gha-runner-scale-set-controller`` chart renders for RBAC (§3.4, multi-namespace mode).

    The ServiceAccount (named `CONTROLLER_SERVICE_ACCOUNT`, the chart's ``serviceAccount.name``),
    ClusterRole and ClusterRoleBinding ``<fullname>`` (§3.5) and the Role and RoleBinding
    ``<fullname>-listener`` in the controller namespace (§3.8). No leader-election Role
    (rendered only with ``replicaCount > 1``). Idempotent.
    """
    fullname = controller_fullname(controller_namespace)
    await _create(
        client,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": CONTROLLER_SERVICE_ACCOUNT, "namespace": controller_namespace},
        },
    )
    await _create(
        client,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": fullname},
            "rules": manager_cluster_role_rules(),
        },
    )
    await _create(client, _binding("ClusterRole", fullname, None, controller_namespace))
    listener_role = f"{fullname}-listener"
    await _create(
        client,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": listener_role, "namespace": controller_namespace},
            "rules": listener_namespace_role_rules(),
        },
    )
    await _create(client, _binding("Role", listener_role, controller_namespace, controller_namespace))


async def install_scale_set_chart_rbac(
    client: Any, *, controller_namespace: str, namespace: str, scale_set_name: str, tls: bool = False
) -> None:
    """What the ``gha-runner-scale-set`` chart renders for the controller (§4.1, §4.2). Idempotent.

    Role and RoleBinding ``<ssn>-gha-rs-manager`` in the scale set's namespace, with the chart's
    labels (component ``manager-role`` / ``manager-role-binding``) and its
    ``actions.github.com/cleanup-protection`` finalizer; the binding's subject is the
    controller's ServiceAccount (``controllerServiceAccount``). ``configmaps get`` only with
    ``tls`` (``githubServerTLS``). Every scale set of a namespace gets its own pair with the
    same rules, as ``helm install`` per scale set does.
    """
    name = f"{scale_set_fullname(scale_set_name)}-manager"
    finalizers = ["actions.github.com/cleanup-protection"]
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": scale_set_chart_labels(scale_set_name, namespace, "manager-role"),
            "finalizers": finalizers,
        },
        "rules": manager_role_rules(tls=tls),
    }
    binding = _binding("Role", name, namespace, controller_namespace)
    binding["metadata"]["labels"] = scale_set_chart_labels(scale_set_name, namespace, "manager-role-binding")
    binding["metadata"]["finalizers"] = finalizers
    await _create(client, role)
    await _create(client, binding)


async def install_chart_rbac(
    client: Any,
    *,
    controller_namespace: str,
    namespace: str | None,
    scale_set_name: str | None = None,
    tls: bool = False,
) -> None:
    """Both charts' RBAC for one controller and (when ``namespace`` is given) one scale set. Idempotent.

    ``scale_set_name`` defaults to ``namespace``'s name (the release name a test would pick).
    """
    await install_controller_chart_rbac(client, controller_namespace=controller_namespace)
    if namespace is not None:
        await install_scale_set_chart_rbac(
            client,
            controller_namespace=controller_namespace,
            namespace=namespace,
            scale_set_name=scale_set_name or namespace,
            tls=tls,
        )


async def uninstall_chart_rbac(client: Any, *, controller_namespace: str) -> None:
    """Delete the cluster-scoped ClusterRole and ClusterRoleBinding (namespaced objects go with their test)."""
    fullname = controller_fullname(controller_namespace)
    for kind in ("ClusterRoleBinding", "ClusterRole"):
        obj = {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": {"name": fullname}}
        with contextlib.suppress(NotFoundError):
            await client.delete(obj)


async def service_account_token(client: Any, *, namespace: str, name: str, seconds: int = 3600) -> str:
    """A TokenRequest token for ServiceAccount ``namespace/name`` (default 1 hour)."""
    return await request_token(client, namespace=namespace, name=name, seconds=seconds)


async def service_account_config(client: Any, admin: RestConfig, *, namespace: str, name: str) -> RestConfig:
    """A REST config authenticating as ServiceAccount ``namespace/name`` (a TokenRequest token, 1 hour)."""
    token = await service_account_token(client, namespace=namespace, name=name)
    return dataclasses.replace(admin, cert_file=None, key_file=None, cert_data=None, key_data=None, bearer_token=token)


async def service_account_kubeconfig(
    client: Any, admin_kubeconfig: Path, dest: Path, *, namespace: str, name: str
) -> Path:
    """Write ``dest``: the admin kubeconfig's cluster, authenticated as ServiceAccount ``namespace/name``.

    For processes (``arc-controller``, ``arc-listener``) that read ``KUBECONFIG``. Mode 0600.
    The same writer arc-sim's kubelet uses for listener pods.
    """
    return await podidentity.service_account_kubeconfig(
        client, namespace=namespace, name=name, base=admin_kubeconfig, dest=dest
    )
