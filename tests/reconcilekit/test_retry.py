"""retry_on_conflict and on_error: attempts, sleeps and the error that comes out."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from reconcilekit.errors import AlreadyExistsError, ConflictError, InternalError, from_status
from reconcilekit.retry import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, jitter, on_error, retry_on_conflict


class _Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def _conflict(n: int = 0) -> ConflictError:
    return ConflictError(409, "Conflict", f"the object has been modified ({n})")


def test_defaults_match_client_go() -> None:
    assert Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1) == DEFAULT_RETRY
    assert Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1) == DEFAULT_BACKOFF


def test_jitter_is_one_sided() -> None:
    assert jitter(1.0, 0.1, rand=lambda: 0.0) == 1.0
    assert jitter(1.0, 0.1, rand=lambda: 0.999) == pytest.approx(1.0999)
    assert jitter(2.0, 0.0, rand=lambda: 0.5) == 3.0  # max_factor <= 0 means 1.0


def test_delays_grow_by_factor_and_stop_at_cap() -> None:
    b = Backoff(duration=1.0, factor=2.0, steps=10, cap=5.0)
    assert list(itertools.islice(b.delays(), 6)) == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    steps_out = Backoff(duration=1.0, factor=3.0, steps=2)
    assert list(itertools.islice(steps_out.delays(), 4)) == [1.0, 3.0, 9.0, 9.0]


async def test_default_retry_calls_five_times_with_four_sleeps_and_returns_the_last_conflict() -> None:
    sleeps = _Sleeps()
    calls = 0

    async def fn() -> None:
        nonlocal calls
        calls += 1
        raise _conflict(calls)

    with pytest.raises(ConflictError, match=r"\(5\)"):
        await retry_on_conflict(DEFAULT_RETRY, fn, sleep=sleeps, rand=lambda: 0.5)
    assert calls == 5
    assert sleeps.calls == pytest.approx([0.0105] * 4)


async def test_default_backoff_sleeps_10_50_250_ms_plus_jitter() -> None:
    sleeps = _Sleeps()

    async def fn() -> None:
        raise _conflict()

    with pytest.raises(ConflictError):
        await retry_on_conflict(DEFAULT_BACKOFF, fn, sleep=sleeps, rand=lambda: 0.999)
    assert sleeps.calls == pytest.approx([0.010999, 0.054995, 0.274975])


async def test_success_after_conflicts_returns_the_value() -> None:
    sleeps = _Sleeps()
    results = iter([_conflict(), _conflict(), "done"])

    async def fn() -> str:
        r = next(results)
        if isinstance(r, Exception):
            raise r
        return r

    assert await retry_on_conflict(DEFAULT_RETRY, fn, sleep=sleeps, rand=lambda: 0.0) == "done"
    assert sleeps.calls == [0.010, 0.010]


@pytest.mark.parametrize(
    "error",
    [
        AlreadyExistsError(409, "AlreadyExists", "taken"),
        InternalError(500, "InternalError", "boom"),
        ValueError("not an API error"),
    ],
)
async def test_a_non_conflict_is_raised_at_once(error: Exception) -> None:
    sleeps = _Sleeps()
    calls = 0

    async def fn() -> None:
        nonlocal calls
        calls += 1
        raise error

    with pytest.raises(type(error)):
        await retry_on_conflict(DEFAULT_RETRY, fn, sleep=sleeps)
    assert calls == 1
    assert sleeps.calls == []


async def test_an_unknown_reason_with_409_is_a_conflict() -> None:
    sleeps = _Sleeps()
    err = from_status(409, {"kind": "Status", "reason": "SomethingNew", "code": 409})
    calls = 0

    async def fn() -> None:
        nonlocal calls
        calls += 1
        raise err

    with pytest.raises(type(err)):
        await retry_on_conflict(Backoff(steps=2, duration=0.001), fn, sleep=sleeps)
    assert calls == 2


async def test_on_error_uses_the_given_predicate() -> None:
    sleeps = _Sleeps()
    attempts: list[int] = []

    async def fn() -> int:
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError
        return len(attempts)

    assert await on_error(DEFAULT_BACKOFF, lambda e: isinstance(e, TimeoutError), fn, sleep=sleeps) == 3
    assert len(sleeps.calls) == 2


async def test_one_step_means_one_call_and_no_sleep() -> None:
    sleeps = _Sleeps()

    async def fn() -> None:
        raise _conflict()

    with pytest.raises(ConflictError):
        await retry_on_conflict(Backoff(steps=1, duration=1.0), fn, sleep=sleeps)
    assert sleeps.calls == []


async def test_zero_steps_is_refused() -> None:
    async def fn() -> None:  # pragma: no cover - never called
        return None

    with pytest.raises(ValueError, match="steps"):
        await retry_on_conflict(Backoff(steps=0), fn)


async def test_sleeps_are_cancellable() -> None:
    """Cancelling the caller during a backoff sleep stops the retry at once."""
    calls = 0

    async def fn() -> None:
        nonlocal calls
        calls += 1
        raise _conflict()

    task = asyncio.create_task(retry_on_conflict(Backoff(steps=3, duration=60.0), fn), name="retry-under-test")
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == 1


def test_negative_values_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        Backoff(duration=-1.0)
