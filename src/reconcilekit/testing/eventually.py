"""Polling assertions for asynchronous tests: `eventually` and `consistently`.

Python only: Gomega's Eventually/Consistently, which controller-runtime's tests use.
"""

from __future__ import annotations

import asyncio
import dis
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import types

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

    Each call is bounded by the time left: a condition that hangs past ``timeout`` is
    cancelled, and that ``TimeoutError`` is the last error reported.

    ``None`` means success only for a block of asserts: a named function (or a
    ``functools.partial`` or bound method of one) whose code never returns a value, only
    falls off its end or says a bare ``return``. A function that has any ``return <value>``
    (``return obj if ready else None``) and every lambda must return a truthy value;
    ``None`` from them is "not yet". A callable without code (an object with
    ``__call__``) keeps the name rule: with a ``__name__`` ``None`` passes, without one not.

    Args:
        condition: a function or coroutine function, see above for when ``None`` passes.
        timeout: seconds before giving up; also bounds each call of ``condition``.
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
        left = max(deadline - time.monotonic(), 0.0)
        try:
            bound = asyncio.timeout(left)
            try:
                async with bound:
                    value = await _check(condition)
            except TimeoutError as err:
                if not bound.expired():
                    raise  # the condition's own TimeoutError
                raise TimeoutError(f"one call of the condition ran past the {left:.2f} s left") from err
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
    """Whether ``None`` from ``condition`` means success: a named block of asserts that never returns a value.

    A lambda is an expression, so ``None`` from it is "not yet". So is ``None`` from a named function
    whose code has any ``return <value>``: ``return obj if ready else None`` says ``None`` is not ready.
    """
    func: object = condition
    while True:
        if isinstance(func, functools.partial):
            func = func.func
        elif inspect.ismethod(func):
            func = func.__func__
        else:
            break
    name = getattr(func, "__name__", None) or getattr(condition, "__name__", "<lambda>")
    if name == "<lambda>":
        return False
    code = getattr(func, "__code__", None)
    if code is None:
        return True
    return not _returns_a_value(code)


def _returns_a_value(code: types.CodeType) -> bool:
    """Whether ``code`` has a ``return <value>``: a return of anything but the constant ``None``.

    Reads the bytecode: ``RETURN_CONST`` of a constant other than ``None`` (Python 3.12+), or
    ``RETURN_VALUE`` not right after ``LOAD_CONST None`` (a bare ``return`` and the implicit one
    at the end load ``None`` first), or one a branch jumps to. An explicit ``return None`` reads
    as a bare ``return``. A bare ``return`` inside ``try``/``finally`` or ``with``
    may compile to something else and so count as returning a value: ``None`` from such a
    function is "not yet", the safe side.
    """
    previous: dis.Instruction | None = None
    for instruction in dis.get_instructions(code):
        if instruction.opname == "RETURN_CONST" and instruction.argval is not None:
            return True
        if instruction.opname == "RETURN_VALUE" and (
            instruction.is_jump_target  # reached from a branch too: `return x if ready else None`
            or previous is None
            or not (previous.opname == "LOAD_CONST" and previous.argval is None)
        ):
            return True
        previous = instruction
    return False


async def consistently(
    condition: Callable[[], _T | Awaitable[_T]],
    *,
    duration: float = 1.0,
    interval: float = 0.05,
    message: str = "",
) -> None:
    """Check that ``condition`` stays truthy (and does not raise) for ``duration`` seconds.

    ``None`` passes by the rule of `eventually`: from a named block of asserts that never returns
    a value, not from a lambda or a function with a ``return <value>``.

    Raises:
        AssertionError: the condition returned a false value at some poll.
        Exception: the condition raised at some poll; its own exception propagates unchanged (a
            failed ``assert`` is an ``AssertionError`` with its text; a ``NotFoundError`` stays one).
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
