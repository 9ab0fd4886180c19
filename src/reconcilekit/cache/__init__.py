"""Informer-backed caches: shared informers per kind, indexes, and a reader over them.

Ports: sigs.k8s.io/controller-runtime/pkg/cache and client-go tools/cache
"""

from reconcilekit._internal.jsoncopy import deep_copy_json as deep_copy
from reconcilekit.cache._internal.shared_informer import strip_managed_fields
from reconcilekit.cache.informer_cache import (
    CacheNotStartedError,
    InformerCache,
    InformerStaleError,
    ResourceNotCachedError,
    UnknownNamespaceError,
    new_cache,
)
from reconcilekit.cache.interfaces import (
    Cache,
    DeletedFinalStateUnknown,
    IndexFunc,
    Informer,
    Informers,
    ResourceEventHandler,
    ResourceEventHandlerRegistration,
)
from reconcilekit.cache.options import ByObject, Options

__all__ = [
    "ByObject",
    "Cache",
    "CacheNotStartedError",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "Informer",
    "InformerCache",
    "InformerStaleError",
    "Informers",
    "Options",
    "ResourceEventHandler",
    "ResourceEventHandlerRegistration",
    "ResourceNotCachedError",
    "UnknownNamespaceError",
    "deep_copy",
    "new_cache",
    "strip_managed_fields",
]
