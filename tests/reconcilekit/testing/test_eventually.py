"""eventually retries a condition that raises (as Gomega's Eventually retries an error) and names the last failure."""

from __future__ import annotations

import asyncio

import pytest

from reconcilekit.errors import NotFoundError
from reconcilekit.testing import consistently, eventually


async def test_a_condition_that_raises_until_the_cache_catches_up_is_retried_issue_16() -> None:
    """A NotFoundError (the cache has not seen the object yet) is "not yet", not a failure."""
    calls = 0

    def cache_caught_up() -> None:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise NotFoundError(404, "NotFound", 'ephemeralrunners "r-1" not found')

    await eventually(cache_caught_up, interval=0.01)
    assert calls == 3


async def test_the_timeout_reports_the_last_exception_and_chains_it() -> None:
    async def never() -> bool:
        raise NotFoundError(404, "NotFound", 'configmaps "a" not found')

    with pytest.raises(AssertionError, match=r'last error NotFoundError: .*configmaps "a" not found') as failure:
        await eventually(never, timeout=0.1, interval=0.01, message="(cache)")
    assert isinstance(failure.value.__cause__, NotFoundError)
    assert str(failure.value).endswith("(cache)")


async def test_the_timeout_reports_a_failed_assert_by_its_text() -> None:
    def check() -> None:
        assert 1 == 2, "one is not two"

    with pytest.raises(AssertionError, match=r"within 0.05 s: one is not two"):
        await eventually(check, timeout=0.05, interval=0.01)


async def test_a_falsy_lambda_times_out_without_a_cause() -> None:
    with pytest.raises(AssertionError, match=r"^condition not met within 0.05 s$") as failure:
        await eventually(lambda: False, timeout=0.05, interval=0.01)
    assert failure.value.__cause__ is None


async def test_a_named_function_returning_none_passes_at_once_even_after_a_failure() -> None:
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1
        assert calls > 1

    await eventually(check, interval=0.01)
    assert calls == 2


async def test_the_first_truthy_value_is_returned() -> None:
    values = iter([0, None, [], "found"])
    assert await eventually(lambda: next(values), interval=0.0) == "found"


async def test_cancellation_is_not_swallowed() -> None:
    task = asyncio.create_task(eventually(lambda: False, timeout=30, interval=0.01))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_consistently_still_fails_on_an_error() -> None:
    def check() -> None:
        raise NotFoundError(404, "NotFound", "gone")

    with pytest.raises(NotFoundError):
        await consistently(check, duration=0.05, interval=0.01)
