"""reconcilekit.conditions: apimachinery's condition helpers on plain JSON lists."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from reconcilekit import conditions as c

T0 = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 12, 4, 12, 5, 0, tzinfo=UTC)


def ready(status: str, reason: str = "Ok", message: str = "", generation: int | None = None) -> dict[str, Any]:
    return c.new_condition("Ready", status, reason=reason, message=message, observed_generation=generation)


def test_a_new_condition_is_added_with_a_transition_time() -> None:
    conditions: list[dict[str, Any]] = []
    assert c.set_status_condition(conditions, ready("False", "Forbidden", "cannot create roles"), clock=lambda: T0)
    assert conditions == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Forbidden",
            "message": "cannot create roles",
            "lastTransitionTime": "2026-12-04T12:00:00Z",
        }
    ]


def test_the_same_condition_again_changes_nothing() -> None:
    """No change, no status patch: the transition time stays and the call says False."""
    conditions: list[dict[str, Any]] = []
    c.set_status_condition(conditions, ready("False", "Forbidden", "m", 3), clock=lambda: T0)
    assert not c.set_status_condition(conditions, ready("False", "Forbidden", "m", 3), clock=lambda: T1)
    assert conditions[0]["lastTransitionTime"] == "2026-12-04T12:00:00Z"


def test_reason_and_message_change_without_a_transition() -> None:
    conditions: list[dict[str, Any]] = []
    c.set_status_condition(conditions, ready("False", "Forbidden", "a"), clock=lambda: T0)
    assert c.set_status_condition(conditions, ready("False", "InvalidSpec", "b", 2), clock=lambda: T1)
    assert conditions[0]["reason"] == "InvalidSpec"
    assert conditions[0]["message"] == "b"
    assert conditions[0]["observedGeneration"] == 2
    assert conditions[0]["lastTransitionTime"] == "2026-12-04T12:00:00Z"


def test_a_status_change_moves_the_transition_time() -> None:
    conditions: list[dict[str, Any]] = []
    c.set_status_condition(conditions, ready("False", "Forbidden"), clock=lambda: T0)
    assert c.set_status_condition(conditions, ready("True", "Running"), clock=lambda: T1)
    assert conditions[0]["status"] == "True"
    assert conditions[0]["lastTransitionTime"] == "2026-12-04T12:05:00Z"


def test_a_given_transition_time_is_kept() -> None:
    conditions: list[dict[str, Any]] = []
    given = {**ready("True"), "lastTransitionTime": "2020-01-01T00:00:00Z"}
    c.set_status_condition(conditions, given, clock=lambda: T0)
    assert conditions[0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"


def test_find_remove_and_the_predicates() -> None:
    conditions: list[dict[str, Any]] = []
    c.set_status_condition(conditions, ready("True"), clock=lambda: T0)
    c.set_status_condition(conditions, c.new_condition("Degraded", "False", reason="Fine"), clock=lambda: T0)
    assert c.find_status_condition(conditions, "Ready") is conditions[0]
    assert c.find_status_condition(conditions, "Missing") is None
    assert c.find_status_condition(None, "Ready") is None
    assert c.is_status_condition_true(conditions, "Ready")
    assert not c.is_status_condition_false(conditions, "Ready")
    assert c.is_status_condition_false(conditions, "Degraded")
    assert not c.is_status_condition_true(conditions, "Missing")
    assert not c.is_status_condition_false(conditions, "Missing")
    assert c.is_status_condition_present_and_equal(conditions, "Degraded", c.CONDITION_FALSE)
    assert c.remove_status_condition(conditions, "Ready")
    assert not c.remove_status_condition(conditions, "Ready")
    assert [cond["type"] for cond in conditions] == ["Degraded"]
