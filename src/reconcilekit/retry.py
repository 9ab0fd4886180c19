"""Retrying a write that lost a race: `retry_on_conflict` and `on_error` with client-go's backoffs.

The function retried must read the object afresh on every call (from the API reader, or
accepting the cache's staleness) and build its write from that read; a retry of a write built
on the read that just lost would only conflict again. Pair it with an optimistic-lock patch or
an update: a plain merge patch carries no resourceVersion, never conflicts, and so is never
retried.

Ports: k8s.io/client-go/util/retry (util.go) and the Backoff of k8s.io/apimachinery/pkg/util/wait
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Final, TypeVar

from reconcilekit.errors import is_conflict

__all__ = ["DEFAULT_BACKOFF", "DEFAULT_RETRY", "Backoff", "jitter", "on_error", "retry_on_conflict"]

_T = TypeVar("_T")


def jitter(duration: float, max_factor: float, *, rand: Callable[[], float] = random.random) -> float:
    """``duration`` plus a uniform ``[0, max_factor)`` share of itself; ``max_factor <= 0`` means 1.0.

    Ports: wait.Jitter
    """
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + rand() * max_factor * duration


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """How long to sleep between attempts, and how many attempts there are.

    Ports: wait.Backoff
    """

    duration: float = 0.0
    """Seconds of the first sleep."""

    factor: float = 0.0
    """Each sleep is the previous one times this (before jitter); ``0`` keeps it constant."""

    jitter: float = 0.0
    """Each sleep gets up to this share of itself added at random; ``0`` adds nothing."""

    steps: int = 0
    """Attempts in all (so ``steps - 1`` sleeps in a retry loop)."""

    cap: float = 0.0
    """Seconds no sleep grows beyond; reaching it ends the sequence's growth. ``0`` means no cap."""

    def __post_init__(self) -> None:
        if self.duration < 0 or self.factor < 0 or self.jitter < 0 or self.cap < 0:
            raise ValueError("backoff duration, factor, jitter and cap must not be negative")

    def delays(self, *, rand: Callable[[], float] = random.random) -> Iterator[float]:
        """The successive sleeps in seconds; after ``steps`` of them the last one repeats.

        Ports: wait.Backoff.Step, called repeatedly on one copy
        """
        duration, steps = self.duration, self.steps
        while True:
            if steps < 1:
                yield jitter(duration, self.jitter, rand=rand) if self.jitter > 0 else duration
                continue
            steps -= 1
            current = duration
            if self.factor != 0:
                duration *= self.factor
                if self.cap > 0 and duration > self.cap:
                    duration, steps = self.cap, 0
            yield jitter(current, self.jitter, rand=rand) if self.jitter > 0 else current


DEFAULT_RETRY: Final = Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
"""Up to 5 attempts with 4 sleeps, each in [10, 11) ms: for conflicts with other writers. Ports: retry.DefaultRetry"""

DEFAULT_BACKOFF: Final = Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)
"""Up to 4 attempts, sleeps in [10, 11), [50, 55), [250, 275) ms: for slower faults. Ports: retry.DefaultBackoff"""


async def on_error(
    backoff: Backoff,
    retriable: Callable[[Exception], bool],
    fn: Callable[[], Awaitable[_T]],
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> _T:
    """Call ``fn`` until it returns, raises a non-retriable error, or ``backoff.steps`` calls were made.

    Args:
        backoff: at most ``backoff.steps`` calls; the sleeps between them follow `Backoff.delays`.
            There is no sleep after the last call.
        retriable: says whether an error from ``fn`` is worth another call.
        fn: a coroutine function with no arguments.
        sleep: awaited with each delay in seconds; cancellable (asyncio.sleep by default).
        rand: the jitter's random source in [0, 1), for tests.

    Returns:
        What ``fn`` returned on its first call that did not raise.

    Raises:
        Exception: the last retriable error when every call failed with one; any other error
            from ``fn`` at once and unchanged.
        ValueError: ``backoff.steps`` is below 1 (Go would call nothing and report success).

    Ports: retry.OnError
    """
    if backoff.steps < 1:
        raise ValueError("backoff.steps must be at least 1")
    delays = backoff.delays(rand=rand)
    for attempt in range(backoff.steps):
        try:
            return await fn()
        except Exception as err:
            if not retriable(err) or attempt == backoff.steps - 1:
                raise
        await sleep(next(delays))
    raise AssertionError("unreachable")  # pragma: no cover


async def retry_on_conflict(
    backoff: Backoff,
    fn: Callable[[], Awaitable[_T]],
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    rand: Callable[[], float] = random.random,
) -> _T:
    """Call ``fn`` again each time it raises a conflict (`is_conflict`), sleeping as ``backoff`` says.

    ``fn`` must read the object afresh on every call: a write built from the read that just
    lost the race would only conflict again. AlreadyExists (also 409) is not a conflict.

    Returns:
        What ``fn`` returned on its first call that did not conflict.

    Raises:
        ConflictError: the last conflict, when every call conflicted.
        Exception: any other error from ``fn``, at once and unchanged.

    Ports: retry.RetryOnConflict
    """
    return await on_error(backoff, is_conflict, fn, sleep=sleep, rand=rand)
