"""Polling assertions for asynchronous tests: `eventually` and `consistently`.

Python only: Gomega's Eventually/Consistently, which controller-runtime's tests use.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["consistently", "eventually"]

_T = TypeVar("_T")


async def _check(condition: Callable[[], _T | Awaitable[_T]]) -> _T:
    value = condition()
    if inspect.isawaitable(value):
        return await value
    return value


async def eventually(
    condition: Callable[[], _T | Awaitable[_T]],
    *,
    timeout: float = 10.0,  # noqa: ASYNC109 - a polling budget, not a cancellation scope
    interval: float = 0.05,
    message: str = "",
) -> _T:
    """Poll ``condition`` until it returns a truthy value without raising.

    As Gomega's ``Eventually`` retries a function that returns an error, any exception the
    condition raises counts as "not yet": an ``AssertionError`` from a plain ``assert``, and
    equally a ``NotFoundError`` from reading an object the cache has not seen yet. Only
    cancellation (and other non-``Exception`` errors) stops the polling early.

    Args:
        condition: a function or coroutine function. A lambda must return a truthy value;
            a named function may also return ``None`` (a block of asserts that all passed).
        timeout: seconds before giving up.
        interval: seconds between polls.
        message: added to the failure.

    Returns:
        The first truthy value (``None`` for a named function that passed).

    Raises:
        AssertionError: still false or failing after ``timeout``; its text names the last
            exception (type and message) and that exception is chained as ``__cause__``.
    """
    deadline = time.monotonic() + timeout
    none_ok = _returns_none(condition)
    last: Exception | None = None
    while True:
        try:
            value = await _check(condition)
        except Exception as err:  # retried, as Gomega retries an error; reported at the end
            last = err
        else:
            if value or (value is None and none_ok):
                return value
            last = None
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout} s{_describe(last)} {message}".rstrip()) from last
        await asyncio.sleep(interval)


def _describe(err: Exception | None) -> str:
    """``": <the last failure>"``: an assertion by its text, anything else by its type and text too."""
    if err is None:
        return ""
    if isinstance(err, AssertionError):
        return f": {err}" if str(err) else ": AssertionError"
    return f": last error {type(err).__name__}: {err}"


def _returns_none(condition: Callable[..., object]) -> bool:
    """A named function is a block of asserts: returning None means success. A lambda is an expression."""
    return getattr(condition, "__name__", "<lambda>") != "<lambda>"


async def consistently(
    condition: Callable[[], _T | Awaitable[_T]],
    *,
    duration: float = 1.0,
    interval: float = 0.05,
    message: str = "",
) -> None:
    """Check that ``condition`` stays truthy (and does not raise) for ``duration`` seconds.

    A named function (not a lambda) that returns ``None`` passes while it does not raise.

    Raises:
        AssertionError: the condition was false or failed at some poll.
    """
    deadline = time.monotonic() + duration
    none_ok = _returns_none(condition)
    while True:
        value = await _check(condition)
        if not value and not (value is None and none_ok):
            raise AssertionError(f"condition stopped holding {message}".rstrip())
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(interval)
