"""The client-side field index naming an object's controller owner, shared by the reconcilers.

Ports: resourceOwnerKey and the ``.metadata.controller`` entries of SetupIndexers (indexer.go)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from arc_controllers.api.v1alpha1 import API_VERSION, EPHEMERAL_RUNNER, POD, Kind, objects
from reconcilekit.client.interfaces import Object
from reconcilekit.manager import Manager

__all__ = ["RESOURCE_OWNER_KEY", "controller_owner_index", "setup_runner_indexers"]

RESOURCE_OWNER_KEY = ".metadata.controller"
"""The client-side field index naming an object's controller owner. Ports: resourceOwnerKey"""

_RUNNER_OWNER_KINDS = {
    POD: (Kind.EPHEMERAL_RUNNER, Kind.AUTOSCALING_LISTENER),
    EPHEMERAL_RUNNER: (Kind.EPHEMERAL_RUNNER_SET,),
}


def controller_owner_index(allowed: Iterable[str]) -> Callable[[Object], list[str]]:
    """The index function naming an object's controller owner when it is an ARC object of an ``allowed`` kind.

    Ports: the index functions of SetupIndexers
    """
    kinds = tuple(allowed)

    def extract(obj: Object) -> list[str]:
        ref = objects.controller_reference(obj)
        if ref is not None and ref.get("apiVersion") == API_VERSION and ref.get("kind") in kinds:
            return [str(ref.get("name"))]
        return []

    return extract


async def setup_runner_indexers(mgr: Manager) -> None:
    """Index Pods and EphemeralRunners by their controller owner's name under ``.metadata.controller``.

    Ports: SetupIndexers (the Pod and EphemeralRunner entries)
    """
    cache = mgr.get_cache()
    for gvk, kinds in _RUNNER_OWNER_KINDS.items():
        await cache.index_field(gvk, RESOURCE_OWNER_KEY, controller_owner_index(kinds))
