"""eventually retries a condition that raises (as Gomega's Eventually retries an error) and names the last failure."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

from reconcilekit.errors import NotFoundError
from reconcilekit.testing import consistently, eventually
from reconcilekit.testing.eventually import _returns_none


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


async def test_a_named_condition_that_returns_a_value_treats_none_as_not_yet_issue_16() -> None:
    """``return obj if ready else None`` says None is "not ready": it must not pass on the first poll."""
    calls = 0

    async def applied() -> str | None:
        nonlocal calls
        calls += 1
        return "obj" if calls >= 3 else None

    assert await eventually(applied, interval=0.0) == "obj"
    assert calls == 3


async def test_a_named_condition_with_a_value_return_times_out_on_none() -> None:
    seen: list[object] = []

    def found() -> object:
        return seen[0] if seen else None

    with pytest.raises(AssertionError, match=r"^condition not met within 0.05 s$"):
        await eventually(found, timeout=0.05, interval=0.01)


async def test_a_partial_and_a_bound_method_follow_the_function_they_wrap() -> None:
    class Probe:
        def __init__(self) -> None:
            self.calls = 0

        def ready(self) -> bool | None:
            self.calls += 1
            return True if self.calls >= 2 else None

        def check(self, limit: int) -> None:
            self.calls += 1
            assert self.calls >= limit

    probe = Probe()
    assert await eventually(probe.ready, interval=0.0) is True
    assert probe.calls == 2
    probe.calls = 0
    await eventually(functools.partial(probe.check, 2), interval=0.0)
    assert probe.calls == 2


def test_which_conditions_may_pass_with_none() -> None:
    def asserts(x: int) -> None:
        if x:
            return
        assert x

    async def async_asserts() -> None:
        assert True

    def value(x: int) -> int | None:
        return x if x else None

    class Callable:
        def __call__(self) -> None:
            return None

    assert _returns_none(asserts)
    assert _returns_none(async_asserts)
    assert _returns_none(functools.partial(asserts, 1))
    assert not _returns_none(value)
    assert not _returns_none(functools.partial(value, 1))
    assert not _returns_none(lambda: None)
    assert _returns_none(Callable().__call__)
    assert not _returns_none(Callable())  # no __code__ and no __name__: the old rule, as a lambda


async def test_a_hanging_condition_is_cut_at_the_timeout_issue_16() -> None:
    """One call of the condition may not outlive the budget: a 5 s hang fails at 0.3 s."""

    async def hangs() -> bool:
        await asyncio.sleep(5)
        return True

    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"last error TimeoutError: one call of the condition ran past") as failure:
        await eventually(hangs, timeout=0.3, interval=0.01)
    assert time.monotonic() - started < 2.0
    assert isinstance(failure.value.__cause__, TimeoutError)


async def test_the_conditions_own_timeout_error_is_reported_as_is() -> None:
    def times_out() -> bool:
        raise TimeoutError("request timed out")

    with pytest.raises(AssertionError, match=r"last error TimeoutError: request timed out"):
        await eventually(times_out, timeout=0.05, interval=0.01)
