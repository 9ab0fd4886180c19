"""Semantic equality for JSON objects: nil, absent and empty collections are the same thing.

A persisted object loses empty lists and maps on the round trip through the API server
(Go's ``omitempty``), so comparing it strictly with a freshly built one reports drift
forever. Every drift check of the runner controllers goes through `semantic_equal`.

Ports: equality.Semantic.DeepEqual as helpers.go uses it (nil ≡ empty), and Go's
maps.Equal (a nil map equals an empty one)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["semantic_equal"]


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, Mapping | list | tuple) and len(value) == 0)


def semantic_equal(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are equal with None ≡ ``{}`` ≡ ``[]`` ≡ an absent key, at any depth.

    Ports: equality.Semantic.DeepEqual (for decoded JSON)
    """
    if _is_empty(a) and _is_empty(b):
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return all(semantic_equal(a.get(key), b.get(key)) for key in a.keys() | b.keys())
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(semantic_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)
