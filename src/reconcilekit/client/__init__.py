"""Reading and writing Kubernetes objects: the client roles, patches and the REST client.

Ports: sigs.k8s.io/controller-runtime/pkg/client
"""

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

__all__ = [
    "Client",
    "GroupVersionKind",
    "GroupVersionResource",
    "Object",
    "ObjectKey",
    "ObjectList",
    "Patch",
    "Reader",
    "StatusClient",
    "SubResourceClient",
    "SubResourceClientConstructor",
    "WatchEvent",
    "WatchEventType",
    "WithWatch",
    "Writer",
    "object_key_from_object",
]
