"""A pod's Kubernetes identity, as the kubelet hands it to the pod's containers.

The kubelet asks the API server for a token of the pod's ServiceAccount (the TokenRequest
API, ``POST serviceaccounts/<name>/token``), bound to the pod, and mounts it into the
containers. arc-sim's listener processes read ``KUBECONFIG`` instead of a mounted token,
so here the token goes into a kubeconfig: the cluster (server URL and CA) of the
simulator's own kubeconfig, with that user swapped for the ServiceAccount's token. The
listener then holds exactly the rights the RBAC in its namespace gives that ServiceAccount.

Python only: stands in for the kubelet's projected service-account token volume.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from reconcilekit.client.interfaces import Client
from reconcilekit.errors import is_not_found

__all__ = [
    "TOKEN_SECONDS",
    "ServiceAccountMissingError",
    "pod_kubeconfig",
    "pod_service_account",
    "request_token",
    "service_account_kubeconfig",
]

TOKEN_SECONDS = 3600
"""Lifetime of a minted token, in seconds (the API server's minimum is 600)."""


class ServiceAccountMissingError(LookupError):
    """The pod's ServiceAccount does not exist (yet): its token cannot be minted."""


def pod_service_account(pod: Mapping[str, Any]) -> str:
    """``spec.serviceAccountName`` of ``pod``; ``default`` when unset, as the API server defaults it."""
    return str((pod.get("spec") or {}).get("serviceAccountName") or "default")


async def request_token(
    client: Client, *, namespace: str, name: str, pod: Mapping[str, Any] | None = None, seconds: int = TOKEN_SECONDS
) -> str:
    """A TokenRequest token for ServiceAccount ``namespace/name``, valid ``seconds``.

    With ``pod`` (a Pod with ``metadata.name`` and ``uid``) the token is bound to it: the
    API server stops accepting it once the pod is gone, as with a kubelet-mounted token.
    The token is a credential: never log it.

    Raises:
        ServiceAccountMissingError: no such ServiceAccount.
        reconcilekit.errors.APIError: any other refusal of the request.
    """
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
    spec: dict[str, Any] = {"expirationSeconds": seconds}
    if pod is not None:
        meta = pod.get("metadata") or {}
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    try:
        answer = await client.sub_resource("token").create(account, request)
    except Exception as err:
        if is_not_found(err):
            raise ServiceAccountMissingError(f'serviceaccount "{namespace}/{name}" not found') from None
        raise
    token = (answer.get("status") or {}).get("token")
    if not token:
        raise ValueError(f"the TokenRequest for serviceaccount {namespace}/{name} returned no token")
    return str(token)


async def pod_kubeconfig(client: Client, pod: Mapping[str, Any], *, base: Path, dest: Path) -> Path:
    """Write ``dest`` (mode 0600): ``base``'s cluster, authenticated as ``pod``'s ServiceAccount.

    The token is minted for the pod's ``spec.serviceAccountName`` in the pod's namespace
    and bound to the pod (`request_token`).

    Raises:
        ServiceAccountMissingError: the pod's ServiceAccount does not exist.
        ValueError: ``base`` has no cluster to reuse.
    """
    namespace = str(pod["metadata"]["namespace"])
    account = pod_service_account(pod)
    return await service_account_kubeconfig(client, namespace=namespace, name=account, base=base, dest=dest, pod=pod)


async def service_account_kubeconfig(
    client: Client, *, namespace: str, name: str, base: Path, dest: Path, pod: Mapping[str, Any] | None = None
) -> Path:
    """Write ``dest`` (mode 0600): ``base``'s cluster, authenticated as ServiceAccount ``namespace/name``.

    The token comes from `request_token` (bound to ``pod`` when one is given).

    Raises:
        ServiceAccountMissingError: no such ServiceAccount.
        ValueError: ``base`` has no cluster to reuse.
    """
    token = await request_token(client, namespace=namespace, name=name, pod=pod)
    await asyncio.to_thread(_write_token_kubeconfig, base, dest, f"system:serviceaccount:{namespace}:{name}", token)
    return dest


def _write_token_kubeconfig(base: Path, dest: Path, user: str, token: str) -> None:
    """Python only: ``base``'s current cluster with one user holding ``token``; written 0600."""
    config = yaml.safe_load(base.read_text(encoding="utf-8")) or {}
    contexts = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or []}
    current = contexts.get(config.get("current-context")) or next(iter(contexts.values()), {})
    clusters = {c.get("name"): c for c in config.get("clusters") or []}
    cluster = clusters.get(current.get("cluster")) or next(iter(clusters.values()), None)
    if cluster is None:
        raise ValueError(f"kubeconfig {base} has no cluster")
    out = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": cluster["name"], "user": user}}],
        "current-context": user,
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        # JSON is YAML; a listener reads it without importing yaml, as in a cluster (issue 20)
        f.write(json.dumps(out, indent=2))
