"""The RBAC ARC's two Helm charts grant the controller, as objects, and a controller identity holding only that.

Rules are arc-manager-helm-rbac.md §3.5 (manager ClusterRole, multi-namespace mode), §3.8
(controller-namespace "listener" Role, later master: with pod ``patch``) and §4.2 (the
per-scale-set manager Role in the runner namespace, configmaps ``get`` only with
``githubServerTLS``). The controller runs as a ServiceAccount in the controller namespace,
bound like the charts bind it; its token comes from the TokenRequest API.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.config import RestConfig

__all__ = [
    "CONTROLLER_SERVICE_ACCOUNT",
    "install_chart_rbac",
    "manager_cluster_role_rules",
    "manager_role_rules",
    "service_account_config",
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


async def install_chart_rbac(client: Any, *, controller_namespace: str, namespace: str, tls: bool = False) -> None:
    """Create the controller ServiceAccount and what both charts bind to it (names as the charts render them)."""
    fullname = f"arc-{controller_namespace}"
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": CONTROLLER_SERVICE_ACCOUNT, "namespace": controller_namespace},
        }
    )
    await client.create(
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": fullname},
            "rules": manager_cluster_role_rules(),
        }
    )
    await client.create(_binding("ClusterRole", fullname, None, controller_namespace))
    listener_role = f"{fullname}-listener"
    await client.create(
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": listener_role, "namespace": controller_namespace},
            "rules": listener_namespace_role_rules(),
        }
    )
    await client.create(_binding("Role", listener_role, controller_namespace, controller_namespace))
    manager = f"{namespace}-gha-rs-manager"
    await client.create(
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": manager, "namespace": namespace},
            "rules": manager_role_rules(tls=tls),
        }
    )
    await client.create(_binding("Role", manager, namespace, controller_namespace))


async def service_account_config(client: Any, admin: RestConfig, *, namespace: str, name: str) -> RestConfig:
    """A REST config authenticating as ServiceAccount ``namespace/name`` (a TokenRequest token, 1 hour)."""
    sa = await client.get(SA, _key(namespace, name))
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    answer = await client.sub_resource("token").create(sa, request)
    token = answer["status"]["token"]
    return dataclasses.replace(admin, cert_file=None, key_file=None, cert_data=None, key_data=None, bearer_token=token)


def _key(namespace: str, name: str) -> Any:
    from reconcilekit.client.interfaces import ObjectKey

    return ObjectKey(namespace, name)
