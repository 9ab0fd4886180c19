"""Semantic equality for desired-versus-persisted comparisons: nil and empty alike, quantities by value.

A desired object built by a controller and the same object read back from the API
server differ in spelling, not meaning: an ``env: []`` comes back absent, a
``memory: 1024Mi`` may come back as ``1Gi``. Comparing them strictly reports drift
forever. `semantic_equal` compares meaning:

* ``None``, an absent key, ``[]`` and ``{}`` are equal to each other inside JSON
  (Go: nil and empty slices and maps);
* one of our models (a Go pointer to a struct) is a pointer: ``None`` differs
  from a present, even empty, model, so ``ephemeralRunnerMetadata: {}`` versus
  no metadata is a change (#4695); this holds for the arguments themselves
  (``semantic_equal(None, ResourceMeta())`` is False) and for model-typed fields;
* Kubernetes quantities compare by value (``"1000m" == "1" == 1``,
  ``"1Gi" == "1024Mi"``) where the Kubernetes schema puts a quantity: values of
  ``limits``, ``requests`` and ``overhead`` maps, and ``sizeLimit`` and ``divisor``;
* everything else is exact: ``""`` is not absent, ``0`` is not absent, ``true`` is
  not ``1``; ``1`` and ``1.0`` are the same JSON number.

It never raises, whatever JSON (or other Python values) it is given, and it does
not recurse, so depth is no limit.

Ports: k8s.io/apimachinery/pkg/api/equality.Semantic.DeepEqual (as ARC's helpers.go uses it)
Differs: inside embedded Kubernetes types (plain JSON here) an empty object also
equals an absent one; Go, knowing the types, tells a nil struct pointer from an
empty struct. Neither spelling changes what the API server does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

from pydantic import BaseModel

__all__ = ["QUANTITY_KEYS", "QUANTITY_MAP_KEYS", "parse_quantity", "semantic_derivative", "semantic_equal"]

QUANTITY_MAP_KEYS: Final = frozenset({"limits", "requests", "overhead"})
"""Keys whose value is a map of resource name to quantity (ResourceList)."""
QUANTITY_KEYS: Final = frozenset({"sizeLimit", "divisor"})
"""Keys whose value is a single quantity."""
_OPAQUE_MAP_KEYS: Final = frozenset(
    {"labels", "annotations", "nodeSelector", "matchLabels", "userAnnotations", "volumeAttributes", "options"}
)
"""Free-form string maps: their keys are user data, so quantity keys inside them mean nothing."""
_SPECIAL_KEYS: Final = QUANTITY_MAP_KEYS | QUANTITY_KEYS | _OPAQUE_MAP_KEYS

_PLAIN, _QUANTITY_MAP, _OPAQUE = 0, 1, 2
_CONTAINERS: Final = (dict, list)
_JSON_TYPES: Final = frozenset({dict, list, str, int, float, bool, type(None)})
_MISSING: Final = object()

_QUANTITY_RE: Final = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE]?)|[eE]([+-]?\d+))$")
_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NANO: Final = 10**9


@lru_cache(maxsize=4096)
def _parse_quantity_text(text: str) -> Fraction | None:
    match = _QUANTITY_RE.match(text.strip())
    if match is None:
        return None
    sign, number, binary, decimal, exponent = match.groups()
    if exponent is not None and len(exponent.lstrip("+-")) > 4:
        return None  # 1e100000 is no resource amount; do not build a huge integer for it
    value = Fraction(number)
    if binary is not None:
        value *= _BINARY[binary]
    elif exponent is not None:
        value *= Fraction(10) ** int(exponent)
    else:
        value *= _DECIMAL[decimal or ""]
    if sign == "-":
        value = -value
    # Kubernetes keeps quantities to nano precision, rounding away from zero.
    scaled = value * _NANO
    if scaled.denominator != 1:
        rounded = math.ceil(abs(scaled))
        value = Fraction(rounded if scaled > 0 else -rounded, _NANO)
    return value


def parse_quantity(value: Any) -> Fraction | None:
    """The exact value of a Kubernetes quantity, or None when ``value`` is not one.

    Args:
        value: A quantity string (``"500m"``, ``"1Gi"``, ``"1e3"``) or a JSON number.

    Returns:
        The amount as a fraction, rounded up to nano precision as the API server
        does; None for anything that does not parse (never raises).

    Ports: k8s.io/apimachinery/pkg/api/resource.ParseQuantity (value only; the format is dropped)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return _parse_quantity_text(repr(value))
    if isinstance(value, str) and len(value) <= 64:
        return _parse_quantity_text(value)
    return None


def _is_empty(value: Any) -> bool:
    return value is None or ((type(value) is dict or type(value) is list) and not value)


def _scalar_equal(a: Any, b: Any, quantity: bool) -> bool:
    if quantity:
        qa, qb = parse_quantity(a), parse_quantity(b)
        if qa is not None and qb is not None:
            return qa == qb
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        if ta is float and tb is float and math.isnan(a) and math.isnan(b):
            return True
        return bool(a == b)
    if ta is not tb:
        return False
    try:
        return bool(a == b)
    except Exception:  # an exotic non-JSON value whose __eq__ fails: not equal, as promised never raise
        return False


_MODEL_TYPES: dict[type, bool] = {}


def _is_model(tp: type) -> bool:
    known = _MODEL_TYPES.get(tp)
    if known is None:
        known = _MODEL_TYPES[tp] = issubclass(tp, BaseModel)
    return known


def _as_json(value: Any) -> Any:
    return value.model_dump(by_alias=True, exclude_none=True) if _is_model(type(value)) else value


def semantic_equal(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` mean the same object (see the module docstring for the rules).

    Args:
        a, b: JSON values (dicts, lists, str, int, float, bool, None), our
            pydantic models, or a mix of both at any depth.

    Returns:
        True when they are semantically equal. Never raises.

    Ports: equality.Semantic.DeepEqual
    """
    stack: list[tuple[Any, Any, int]] = [(a, b, _PLAIN)]
    push, pop = stack.append, stack.pop
    while stack:
        x, y, ctx = pop()
        if x is y:
            continue
        tx, ty = type(x), type(y)
        if x is None and ty is dict:
            x, tx = {}, dict  # absent equals an object whose every field is empty, at any depth
        elif y is None and tx is dict:
            y, ty = {}, dict
        if tx is dict and ty is dict:
            found = 0
            for key, vx in x.items():
                vy = y.get(key, _MISSING)
                if vy is _MISSING:
                    vy = None
                else:
                    found += 1
                if vx is vy:
                    continue
                tvx, tvy = type(vx), type(vy)
                if (tvx is str or (tvx is int and tvy is int)) and ctx != _QUANTITY_MAP and key not in QUANTITY_KEYS:
                    if tvy is not tvx or vx != vy:  # exact: "" is not absent, "1" is not 1
                        return False
                    continue
                if ctx == _PLAIN and key not in _SPECIAL_KEYS:
                    push((vx, vy, _PLAIN))
                else:
                    push((vx, vy, _child_context(ctx, key, vx, vy)))
            if found < len(y) and not _push_keys_only_in_y(x, y, ctx, push):
                return False
            continue
        if tx is list and ty is list:
            if len(x) != len(y):
                return False
            child = _OPAQUE if ctx == _OPAQUE else _PLAIN
            for vx, vy in zip(x, y):
                if vx is vy:
                    continue
                if type(vx) is str and type(vy) is str:
                    if vx != vy:
                        return False
                    continue
                push((vx, vy, child))
            continue
        if _is_empty(x) and _is_empty(y):
            continue
        x_model = tx not in _JSON_TYPES and _is_model(tx)
        y_model = ty not in _JSON_TYPES and _is_model(ty)
        if x_model or y_model:
            if x is None or y is None:
                return False  # a pointer to a struct: nil differs from present, even from empty
            if tx is ty:
                stack.extend((getattr(x, name), getattr(y, name), _PLAIN) for name in tx.model_fields)
                push((x.__pydantic_extra__ or None, y.__pydantic_extra__ or None, _PLAIN))
            else:
                push((_as_json(x), _as_json(y), ctx))
            continue
        if tx in _CONTAINERS or ty in _CONTAINERS:
            return False
        if not _scalar_equal(x, y, ctx == _QUANTITY_MAP):
            return False
    return True


def _push_keys_only_in_y(
    x: dict[str, Any], y: dict[str, Any], ctx: int, push: Callable[[tuple[Any, Any, int]], None]
) -> bool:
    """Python only: compare the keys only ``y`` has with absent (equal only when empty throughout).

    Pushes the nested objects still to compare; False as soon as a non-empty non-object value decides.
    """
    for key in y.keys() - x.keys():
        vy = y[key]
        if _is_empty(vy):
            continue
        if type(vy) is not dict:
            return False
        plain = ctx == _PLAIN and key not in _SPECIAL_KEYS
        push((None, vy, _PLAIN if plain else _child_context(ctx, key, None, vy)))
    return True


def _child_context(ctx: int, key: Any, vx: Any, vy: Any) -> int:
    """How to compare the value under ``key`` of a dict compared in context ``ctx``."""
    if ctx == _OPAQUE:
        return _OPAQUE
    if ctx == _QUANTITY_MAP:
        return _QUANTITY_MAP  # the value of a resource name: a quantity
    if key in QUANTITY_MAP_KEYS and (type(vx) is dict or type(vy) is dict):
        return _QUANTITY_MAP
    if key in QUANTITY_KEYS:
        return _QUANTITY_MAP  # a single quantity: compared like a quantity-map value
    if key in _OPAQUE_MAP_KEYS:
        return _OPAQUE
    return _PLAIN


def semantic_derivative(desired: Any, current: Any) -> bool:
    """Whether ``current`` agrees with everything ``desired`` sets; what ``desired`` leaves unset is ignored.

    Used to compare a desired pod spec with the live pod, whose API-server
    defaults (``dnsPolicy``, ``terminationMessagePath``, ...) must not count as
    drift. ``desired`` fields that are absent, ``None``, ``""`` or empty
    collections are ignored; maps compare only ``desired``'s keys; lists must
    have the same length and compare item by item; quantities compare by value
    (as in `semantic_equal`); other values are exact. Never raises.

    Args:
        desired: The JSON (or model) we would write.
        current: The JSON (or model) the API server holds.

    Returns:
        True when nothing ``desired`` sets differs in ``current``.

    Ports: equality.Semantic.DeepDerivative
    Differs: Go ignores only nil slices and maps on the desired side; with JSON we
    cannot tell an empty list from an absent one, so both are ignored.
    """
    stack: list[tuple[Any, Any, int]] = [(_as_json(desired), _as_json(current), _PLAIN)]
    push, pop = stack.append, stack.pop
    while stack:
        d, c, ctx = pop()
        if d is c or d is None or (type(d) is str and not d) or (type(d) in _CONTAINERS and not d):
            continue
        td, tc = type(d), type(c)
        if td is dict:
            if tc is not dict:
                return False
            for key, vd in d.items():
                push((_as_json(vd), _as_json(c.get(key)), _child_context(ctx, key, vd, c.get(key))))
            continue
        if td is list:
            if tc is not list or len(d) != len(c):
                return False
            child = _OPAQUE if ctx == _OPAQUE else _PLAIN
            stack.extend((_as_json(vd), _as_json(vc), child) for vd, vc in zip(d, c))
            continue
        if not _scalar_equal(d, c, ctx == _QUANTITY_MAP):
            return False
    return True
