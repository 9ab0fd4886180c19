"""A store of objects by key, with named indexes kept current on every change.

Ports: k8s.io/client-go/tools/cache (store.go, thread_safe_store.go, index.go)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from reconcilekit.cache.interfaces import IndexFunc
from reconcilekit.client.interfaces import Object

__all__ = ["NAMESPACE_INDEX", "Indexer", "meta_namespace_index", "object_key"]

NAMESPACE_INDEX = "namespace"
"""The index every cache informer has: namespace → keys. Ports: cache.NamespaceIndex"""


def object_key(obj: Mapping[str, object]) -> str:
    """``"<namespace>/<name>"``, or ``"<name>"`` for a cluster-scoped object.

    Ports: cache.MetaNamespaceKeyFunc
    """
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise ValueError("object has no metadata")
    name = meta.get("name") or ""
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def meta_namespace_index(obj: Object) -> list[str]:
    """The object's namespace ("" for cluster-scoped). Ports: cache.MetaNamespaceIndexFunc"""
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


class Indexer:
    """Objects by key plus named indexes (index name → value → keys).

    Not thread-safe: it lives on one event loop and is changed only by its informer.

    Ports: cache.Indexer (threadSafeMap and storeIndex)
    """

    __slots__ = ("_index_funcs", "_indices", "_items")

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Object] = {}
        self._index_funcs: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._index_funcs}

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Object | None:
        """The object stored under ``key``, or ``None``. Ports: Indexer.GetByKey"""
        return self._items.get(key)

    def keys(self) -> list[str]:
        """Every key. Ports: Indexer.ListKeys"""
        return list(self._items)

    def snapshot(self) -> dict[str, Object]:
        """A shallow copy of the key → object map."""
        return dict(self._items)

    def values(self) -> Iterator[Object]:
        """Every object (live view: do not change the store while iterating). Ports: Indexer.List"""
        return iter(self._items.values())

    def put(self, key: str, obj: Object) -> Object | None:
        """Add or replace ``key``; returns the previous object. Ports: threadSafeMap.Update"""
        old = self._items.get(key)
        self._items[key] = obj
        if self._index_funcs:
            self._update_indices(key, old, obj)
        return old

    def delete(self, key: str) -> Object | None:
        """Remove ``key``; returns the removed object or ``None``. Ports: threadSafeMap.Delete"""
        old = self._items.pop(key, None)
        if old is not None and self._index_funcs:
            self._update_indices(key, old, None)
        return old

    def replace(self, items: Mapping[str, Object]) -> None:
        """Swap the whole content for ``items`` and rebuild every index. Ports: threadSafeMap.Replace"""
        self._items = dict(items)
        self._indices = {name: {} for name in self._index_funcs}
        for key, obj in self._items.items():
            self._update_indices(key, None, obj)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes and back-fill them from the stored objects.

        Raises:
            ValueError: an index of that name exists already ("indexer conflict").

        Ports: storeIndex.addIndexers
        """
        clash = sorted(set(indexers) & set(self._index_funcs))
        if clash:
            raise ValueError(f"indexer conflict: {clash}")
        for name, fn in indexers.items():
            self._index_funcs[name] = fn
            index: dict[str, set[str]] = {}
            self._indices[name] = index
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)

    def has_index(self, name: str) -> bool:
        """True when an index called ``name`` exists."""
        return name in self._index_funcs

    def index_func(self, name: str) -> IndexFunc | None:
        """The function behind index ``name``, if any."""
        return self._index_funcs.get(name)

    def by_index(self, name: str, value: str) -> list[Object]:
        """Objects whose index ``name`` yields ``value``.

        Raises:
            KeyError: no index called ``name``.

        Ports: Indexer.ByIndex
        """
        keys = self._indices[name].get(value, ())
        return [self._items[k] for k in sorted(keys)]

    def index_keys(self, name: str, value: str) -> set[str]:
        """Keys whose index ``name`` yields ``value``. Ports: Indexer.IndexKeys"""
        return set(self._indices[name].get(value, ()))

    def _update_indices(self, key: str, old: Object | None, new: Object | None) -> None:
        for name, fn in self._index_funcs.items():
            index = self._indices[name]
            old_values: Iterable[str] = fn(old) if old is not None else ()
            new_values: Iterable[str] = fn(new) if new is not None else ()
            if old is not None and new is not None:
                old_set, new_set = set(old_values), set(new_values)
                if old_set == new_set:
                    continue
                old_values, new_values = old_set - new_set, new_set - old_set
            for value in old_values:
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)
