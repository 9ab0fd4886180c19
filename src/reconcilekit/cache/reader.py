"""Reads served from informers' indexers: gets, lists with selectors and indexes, copies.

Ports: sigs.k8s.io/controller-runtime/pkg/cache/internal/cache_reader.go (CacheReader)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from reconcilekit._internal.jsoncopy import deep_copy_json
from reconcilekit._internal.selectors import parse_exact_fields, parse_label_selector
from reconcilekit.cache._internal.indexer import NAMESPACE_INDEX
from reconcilekit.cache._internal.shared_informer import SharedIndexInformer
from reconcilekit.cache.interfaces import IndexFunc
from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, ObjectList
from reconcilekit.errors import NotFoundError

__all__ = [
    "ALL_NAMESPACES_PREFIX",
    "CONTINUE_NOT_SUPPORTED",
    "field_index_func",
    "field_index_name",
    "get_object",
    "list_objects",
    "not_found",
]

ALL_NAMESPACES_PREFIX = "__all_namespaces"
"""Field-index values for cross-namespace lookups are ``"__all_namespaces/<value>"``."""

CONTINUE_NOT_SUPPORTED = "continue-not-supported"
"""The ``continue`` of a cached list cut short by ``limit``: the cache cannot page."""


def field_index_name(field: str) -> str:
    """``"field:<field>"``. Ports: cache_reader.go FieldIndexName"""
    return f"field:{field}"


def field_index_func(extract: IndexFunc, *, cluster_scoped: bool) -> IndexFunc:
    """Wrap ``extract`` so it yields ``"<ns>/<v>"`` and ``"__all_namespaces/<v>"`` values.

    Ports: informer_cache.go IndexField's indexFunc (KeyToNamespacedKey)
    """

    def index(obj: Object) -> list[str]:
        values = extract(obj)
        if cluster_scoped:
            return [f"{ALL_NAMESPACES_PREFIX}/{v}" for v in values]
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        out: list[str] = []
        for v in values:
            out.append(f"{ALL_NAMESPACES_PREFIX}/{v}")
            out.append(f"{namespace}/{v}" if namespace else v)
        return out

    return index


def not_found(gvk: GroupVersionKind, name: str) -> NotFoundError:
    """The NotFound the cache raises: its "resource" is the kind, as upstream.

    Ports: cache_reader.go Get's apierrors.NewNotFound(GroupResource{Resource: Kind})
    """
    resource = f"{gvk.kind}.{gvk.group}" if gvk.group else gvk.kind
    return NotFoundError(
        404,
        "NotFound",
        f'{resource} "{name}" not found',
        details={"name": name, "group": gvk.group, "kind": gvk.kind},
    )


def _out(obj: Object, gvk: GroupVersionKind, copy: bool) -> Object:
    if not copy:
        return obj
    out = deep_copy_json(obj)
    out.setdefault("apiVersion", gvk.api_version)
    out.setdefault("kind", gvk.kind)
    return out


def get_object(
    informer: SharedIndexInformer, gvk: GroupVersionKind, key: ObjectKey, *, cluster_scoped: bool, copy: bool
) -> Object:
    """The cached object named ``key`` (a deep copy unless ``copy`` is false).

    Raises:
        NotFoundError: not cached (absent, or hidden by the cache's selectors).

    Ports: CacheReader.Get
    """
    store_key = key.name if cluster_scoped or not key.namespace else f"{key.namespace}/{key.name}"
    obj = informer.indexer.get(store_key)
    if obj is None:
        raise not_found(gvk, key.name)
    return _out(obj, gvk, copy)


def _candidates(
    informer: SharedIndexInformer, namespace: str | None, field_terms: Sequence[tuple[str, str]]
) -> Iterable[Object]:
    indexer = informer.indexer
    if field_terms:
        field, value = field_terms[0]
        name = field_index_name(field)
        if not indexer.has_index(name):
            raise ValueError(f"index with name {name} does not exist")
        lookup = f"{namespace}/{value}" if namespace else f"{ALL_NAMESPACES_PREFIX}/{value}"
        found = indexer.by_index(name, lookup)
        rest = field_terms[1:]
        if not rest:
            return found
        checks: list[tuple[IndexFunc, str]] = []
        for f, v in rest:
            fn = indexer.index_func(field_index_name(f))
            if fn is None:
                raise ValueError(f"index with name {field_index_name(f)} does not exist")
            checks.append((fn, f"{namespace}/{v}" if namespace else f"{ALL_NAMESPACES_PREFIX}/{v}"))
        return [o for o in found if all(want in fn(o) for fn, want in checks)]
    if namespace:
        return (
            indexer.by_index(NAMESPACE_INDEX, namespace)
            if indexer.has_index(NAMESPACE_INDEX)
            else [o for o in indexer.values() if (o.get("metadata") or {}).get("namespace") == namespace]
        )
    return list(indexer.values())


def list_objects(
    informers: Sequence[SharedIndexInformer],
    gvk: GroupVersionKind,
    *,
    namespace: str | None,
    labels: Mapping[str, str] | str | None,
    fields: Mapping[str, str] | str | None,
    limit: int | None,
    continue_token: str | None,
    copy: bool,
) -> ObjectList:
    """Cached objects matching the selectors, from one or more informers (merged in order).

    Raises:
        ValueError: ``continue_token`` given ("continue list option is not supported by the
            cache"), a non-exact field selector, or a field with no index.

    Ports: CacheReader.List (and multiNamespaceCache.List's merge)
    """
    if continue_token:
        raise ValueError("continue list option is not supported by the cache")
    selector = parse_label_selector(labels)
    field_terms = parse_exact_fields(fields)
    items: list[Object] = []
    truncated = False
    for informer in informers:
        for obj in _candidates(informer, namespace, field_terms):
            if not selector.matches(obj):
                continue
            if limit is not None and limit > 0 and len(items) >= limit:
                truncated = True
                break
            items.append(_out(obj, gvk, copy))
        if truncated:
            break
    rv = informers[0].last_sync_resource_version if len(informers) == 1 else ""
    return ObjectList(items=items, resource_version=rv, continue_token=CONTINUE_NOT_SUPPORTED if truncated else None)
