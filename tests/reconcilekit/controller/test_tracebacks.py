"""reconcilekit.controller._tracebacks: which reconcile errors carry a traceback."""

from __future__ import annotations

import pytest

from reconcilekit.controller import _tracebacks
from reconcilekit.controller._tracebacks import TracebackLimiter, error_key
from reconcilekit.workqueue import FakeClock


def _raised(message: str) -> RuntimeError:
    try:
        raise RuntimeError(message)
    except RuntimeError as err:
        return err


def test_the_key_is_type_text_and_raising_line() -> None:
    assert error_key(_raised("a")) == error_key(_raised("a"))
    assert error_key(_raised("a")) != error_key(_raised("b"))
    assert error_key(_raised("a")) != error_key(RuntimeError("a"))  # never raised: no line
    assert error_key(_raised("a")) != error_key(ValueError("a"))


def test_an_expired_or_excess_error_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory is bounded: errors past their interval are dropped, and beyond MAX_KEYS the oldest."""
    clock = FakeClock()
    limiter = TracebackLimiter(60.0, clock)
    assert limiter.should_log(_raised("old"))
    clock.advance(61.0)
    assert limiter.should_log(_raised("new"))
    assert len(limiter._logged_at) == 1  # "old" expired and was dropped
    monkeypatch.setattr(_tracebacks, "MAX_KEYS", 3)
    for n in range(5):
        assert limiter.should_log(_raised(f"e{n}"))
    assert len(limiter._logged_at) == 3
    assert limiter.should_log(_raised("e0"))  # forgotten (the oldest): its traceback again
    assert not limiter.should_log(_raised("e4"))
