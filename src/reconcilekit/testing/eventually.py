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
    """Poll ``condition`` until it returns a truthy value without raising ``AssertionError``.

    Args:
        condition: a function or coroutine function; an ``AssertionError`` it raises counts as
            "not yet" (so plain ``assert`` statements work inside it). Other errors propagate.
            A lambda must return a truthy value; a named function may also return ``None``
            (a block of asserts that all passed).
        timeout: seconds before giving up.
        interval: seconds between polls.
        message: added to the failure.

    Returns:
        The first truthy value.

    Raises:
        AssertionError: still false (or failing) after ``timeout``; carries the last failure.
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = await _check(condition)
            if value or (value is None and last is None and _returns_none(condition)):
                return value
            last = None
        except AssertionError as err:
            last = err
        if time.monotonic() >= deadline:
            detail = f": {last}" if last else ""
            raise AssertionError(f"condition not met within {timeout} s{detail} {message}".rstrip()) from last
        await asyncio.sleep(interval)


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
