"""Status conditions in the ``metav1.Condition`` shape, on plain JSON lists.

A condition is a dict with ``type``, ``status`` (``"True"``, ``"False"`` or ``"Unknown"``),
``reason`` (UpperCamelCase, for machines), ``message`` (for people), ``lastTransitionTime``
(RFC 3339, second precision) and ``observedGeneration``. The list lives at
``status.conditions`` and is keyed by ``type`` (``x-kubernetes-list-type: map``).

`set_status_condition` keeps ``lastTransitionTime`` when the status does not change, so a
reconcile that writes the same condition again changes nothing and needs no status patch
(its return value says whether anything changed).

Example::

    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    changed = set_status_condition(
        conditions,
        {"type": "Ready", "status": "False", "reason": "Forbidden", "message": "cannot create roles"},
    )

Ports: k8s.io/apimachinery/pkg/api/meta/conditions.go (SetStatusCondition,
RemoveStatusCondition, FindStatusCondition, IsStatusConditionTrue, IsStatusConditionFalse,
IsStatusConditionPresentAndEqual)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableSequence, Sequence
from datetime import UTC, datetime
from typing import Any, Final

__all__ = [
    "CONDITION_FALSE",
    "CONDITION_TRUE",
    "CONDITION_UNKNOWN",
    "Condition",
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "new_condition",
    "remove_status_condition",
    "set_status_condition",
]

CONDITION_TRUE: Final = "True"
"""Ports: metav1.ConditionTrue"""
CONDITION_FALSE: Final = "False"
"""Ports: metav1.ConditionFalse"""
CONDITION_UNKNOWN: Final = "Unknown"
"""Ports: metav1.ConditionUnknown"""

Condition = dict[str, Any]
"""One condition: ``type``, ``status``, ``reason``, ``message``, ``lastTransitionTime``, ``observedGeneration``."""


def _now() -> datetime:
    """Python only: the default clock (aware UTC)."""
    return datetime.now(UTC)


def _rfc3339(t: datetime) -> str:
    """Python only: ``metav1.Time``'s wire form, second precision with ``Z``."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_condition(
    type: str, status: str, *, reason: str, message: str = "", observed_generation: int | None = None
) -> Condition:
    """Python only: a condition without ``lastTransitionTime`` (`set_status_condition` stamps it).

    Args:
        type: the condition's key, UpperCamelCase (``"Ready"``).
        status: `CONDITION_TRUE`, `CONDITION_FALSE` or `CONDITION_UNKNOWN`.
        reason: why, UpperCamelCase (``"Forbidden"``); the API server requires one.
        message: for people; may be empty.
        observed_generation: the ``metadata.generation`` the condition was computed from.
    """
    condition: Condition = {"type": type, "status": status, "reason": reason, "message": message}
    if observed_generation is not None:
        condition["observedGeneration"] = observed_generation
    return condition


def set_status_condition(
    conditions: MutableSequence[Condition],
    new: Mapping[str, Any],
    *,
    clock: Callable[[], datetime] = _now,
) -> bool:
    """Add ``new`` or update the condition of its type in place; True when anything changed.

    ``lastTransitionTime`` changes only when ``status`` changes (or the condition is new); a
    ``lastTransitionTime`` given in ``new`` is used instead of now. ``reason``, ``message`` and
    ``observedGeneration`` are taken from ``new`` whatever the status.

    Args:
        conditions: the ``status.conditions`` list, changed in place.
        new: the condition to set (a `new_condition` or any dict of that shape).
        clock: now, aware UTC (tests pass a fixed one).

    Ports: meta.SetStatusCondition
    """
    stamp = str(new.get("lastTransitionTime") or _rfc3339(clock()))
    existing = find_status_condition(conditions, str(new["type"]))
    if existing is None:
        added = dict(new)
        added["lastTransitionTime"] = stamp
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = stamp
        changed = True
    for key in ("reason", "message", "observedGeneration"):
        if key in new and existing.get(key) != new[key]:
            existing[key] = new[key]
            changed = True
    return changed


def remove_status_condition(conditions: MutableSequence[Condition], condition_type: str) -> bool:
    """Remove the condition of ``condition_type``; True when there was one.

    Ports: meta.RemoveStatusCondition
    """
    for index, condition in enumerate(conditions):
        if condition.get("type") == condition_type:
            del conditions[index]
            return True
    return False


def find_status_condition(conditions: Sequence[Condition] | None, condition_type: str) -> Condition | None:
    """The condition of ``condition_type`` (the list's own dict, not a copy), or None.

    Ports: meta.FindStatusCondition
    """
    for condition in conditions or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def is_status_condition_true(conditions: Sequence[Condition] | None, condition_type: str) -> bool:
    """The condition is present with status ``"True"``. Ports: meta.IsStatusConditionTrue"""
    return is_status_condition_present_and_equal(conditions, condition_type, CONDITION_TRUE)


def is_status_condition_false(conditions: Sequence[Condition] | None, condition_type: str) -> bool:
    """The condition is present with status ``"False"``. Ports: meta.IsStatusConditionFalse"""
    return is_status_condition_present_and_equal(conditions, condition_type, CONDITION_FALSE)


def is_status_condition_present_and_equal(
    conditions: Sequence[Condition] | None, condition_type: str, status: str
) -> bool:
    """The condition is present with exactly ``status``. Ports: meta.IsStatusConditionPresentAndEqual"""
    condition = find_status_condition(conditions, condition_type)
    return condition is not None and condition.get("status") == status
