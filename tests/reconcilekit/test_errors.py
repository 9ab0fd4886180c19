"""reconcilekit.errors: the Status-to-error mapping and apimachinery's predicates."""

from __future__ import annotations

import json

import pytest

from reconcilekit import errors


def status(code: int, reason: str, **extra: object) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": "m",
            **extra,
        }
    ).encode()


def test_already_exists_is_not_a_conflict() -> None:
    """A 409 with reason AlreadyExists is AlreadyExists, never a conflict."""
    err = errors.from_status(409, status(409, "AlreadyExists"))
    assert isinstance(err, errors.AlreadyExistsError)
    assert errors.is_already_exists(err)
    assert not errors.is_conflict(err)


def test_unknown_reason_falls_back_to_the_code() -> None:
    """An unknown reason with 409 counts as a conflict; a known other reason does not."""
    assert errors.is_conflict(errors.from_status(409, status(409, "SomethingNew")))
    assert errors.is_conflict(errors.from_status(409, b"not json"))
    assert not errors.is_conflict(errors.from_status(409, status(409, "Invalid")))


def test_too_many_requests_matches_any_429() -> None:
    """IsTooManyRequests is true for code 429 whatever the reason, and keeps Retry-After."""
    err = errors.from_status(429, status(429, "Other"), retry_after=3)
    assert errors.is_too_many_requests(err)
    with_details = errors.from_status(429, status(429, "TooManyRequests", details={"retryAfterSeconds": 2}))
    assert isinstance(with_details, errors.TooManyRequestsError)
    assert with_details.retry_after == 2


def test_predicates_see_through_cause_chains() -> None:
    """An API error wrapped as ``__cause__`` is still recognised."""
    outer = RuntimeError("wrapped")
    outer.__cause__ = errors.from_status(404, status(404, "NotFound"))
    assert errors.is_not_found(outer)
    assert errors.ignore_not_found(outer) is None


@pytest.mark.parametrize(("reason", "expired", "gone"), [("Expired", True, False), ("Gone", False, True)])
def test_expired_and_gone_are_distinct(reason: str, expired: bool, gone: bool) -> None:
    """IsResourceExpired is reason Expired only; IsGone is reason Gone (or unknown + 410)."""
    err = errors.from_status(410, status(410, reason))
    assert errors.is_resource_expired(err) is expired
    assert errors.is_gone(err) is gone
