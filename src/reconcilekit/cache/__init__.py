"""Informer-backed caches: shared informers per kind, indexes, and a reader over them.

Ports: sigs.k8s.io/controller-runtime/pkg/cache and client-go tools/cache
"""

from reconcilekit.cache.interfaces import (
    Cache,
    DeletedFinalStateUnknown,
    IndexFunc,
    Informer,
    Informers,
    ResourceEventHandler,
    ResourceEventHandlerRegistration,
)

__all__ = [
    "Cache",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "Informer",
    "Informers",
    "ResourceEventHandler",
    "ResourceEventHandlerRegistration",
]
