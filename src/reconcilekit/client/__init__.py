"""Reading and writing Kubernetes objects: the client roles, patches and the REST client.

Ports: sigs.k8s.io/controller-runtime/pkg/client
"""

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
