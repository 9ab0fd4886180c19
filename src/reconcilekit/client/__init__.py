"""Reading and writing Kubernetes objects: the client roles, patches and the REST client.

Objects are plain dicts; a write refreshes the dict it was given::

    config = await load_rest_config()                      # reconcilekit.config
    async with new_client(config, field_owner="my-controller") as client:
        runner = await client.get(EPHEMERAL_RUNNER, ObjectKey("arc-runners", "r-1"))
        patch = merge_from_with_optimistic_lock(runner)    # snapshot + the read's resourceVersion
        runner["status"]["phase"] = "Running"
        await client.status().patch(runner, patch)         # 409 if someone wrote since the read
        client.counts.by_verb()                            # {"discovery": 1, "get": 1, "patch": 1}

Ports: sigs.k8s.io/controller-runtime/pkg/client
"""

from typing import TYPE_CHECKING, Any

from reconcilekit.client.apiutil import RESTMapper, RESTMapping
from reconcilekit.client.client import DEFAULT_TIMEOUT, RestClient, SubResourceRestClient, new_client
from reconcilekit.client.interfaces import (
    Client,
    GroupVersionKind,
    GroupVersionResource,
    Object,
    ObjectKey,
    ObjectList,
    Patch,
    Reader,
    StatusClient,
    SubResourceClient,
    SubResourceClientConstructor,
    WatchEvent,
    WatchEventType,
    WithWatch,
    Writer,
    object_key_from_object,
)
from reconcilekit.client.metrics import RequestCounts, RequestKey
from reconcilekit.client.patch import (
    apply,
    json_patch,
    json_patch_from,
    merge,
    merge_from,
    merge_from_with_optimistic_lock,
    raw_patch,
    strategic_merge_from,
)

if TYPE_CHECKING:
    from reconcilekit.client.typed import TypedClient

__all__ = [
    "DEFAULT_TIMEOUT",
    "Client",
    "GroupVersionKind",
    "GroupVersionResource",
    "Object",
    "ObjectKey",
    "ObjectList",
    "Patch",
    "RESTMapper",
    "RESTMapping",
    "Reader",
    "RequestCounts",
    "RequestKey",
    "RestClient",
    "StatusClient",
    "SubResourceClient",
    "SubResourceClientConstructor",
    "SubResourceRestClient",
    "TypedClient",
    "WatchEvent",
    "WatchEventType",
    "WithWatch",
    "Writer",
    "apply",
    "json_patch",
    "json_patch_from",
    "merge",
    "merge_from",
    "merge_from_with_optimistic_lock",
    "new_client",
    "object_key_from_object",
    "raw_patch",
    "strategic_merge_from",
]


def __getattr__(name: str) -> Any:
    """`TypedClient` on first use: it imports pydantic, which a JSON-only process (the listener) never loads.

    Python only: keeps ≈ 5 MiB of pydantic out of processes that use plain dicts (issue 20).
    """
    if name == "TypedClient":
        from reconcilekit.client.typed import TypedClient

        return TypedClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
