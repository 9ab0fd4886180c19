"""The reflector's backoff: exponential, jittered inside its cap, reset by success or a quiet spell.

client-go's reflector adds up to 100 % jitter *after* capping the nominal delay, so its
"30 s cap" hands out delays up to 60 s, and it starts over only after 2 minutes without a
delay request, so an informer that recovered keeps its escalated delay for its next hiccup.
Here every delay stays at or under the cap, jitter included, and the reflector calls
`BackoffManager.reset` once a list and a watch worked.

Ports: k8s.io/apimachinery/pkg/util/wait (backoff.go: Backoff, Jitter,
NewExponentialBackoffManager / delay.go), with the cap applied after the jitter (issue 16)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["BackoffManager", "BackoffSettings", "jitter"]


def jitter(duration: float, max_factor: float) -> float:
    """``duration + U[0,1) * max_factor * duration`` (``max_factor <= 0`` means 1.0).

    Ports: wait.Jitter
    """
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + random.random() * max_factor * duration


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffSettings:
    """Reflector backoff, in seconds.

    Attributes:
        initial: the first delay (0.8 s, client-go's).
        factor: each delay's nominal value is the previous one's times this (2.0).
        jitter: a delay is drawn from ``[nominal, nominal × (1 + jitter))`` (1.0), then
            kept under the cap (see `BackoffManager.delay`).
        cap: no delay exceeds this, jitter included (30 s, client-go's nominal cap).
        unreachable_cap: no delay after a connection-level failure (refused, reset or timed
            out before any answer) exceeds this (8 s). Nobody is listening then, so retrying
            costs the server nothing, and a restarted API server is seen within this long of
            coming back instead of up to ``cap`` later.
        reset_after: start over from ``initial`` when no delay was asked for in this long (120 s).

    Ports: reflector.go's backoff manager arguments (``unreachable_cap`` is ours, issue 16)
    """

    initial: float = 0.8
    factor: float = 2.0
    jitter: float = 1.0
    cap: float = 30.0
    unreachable_cap: float = 8.0
    reset_after: float = 120.0


class BackoffManager:
    """Hands out ever longer delays, never above the cap; starts over on `reset` or after a quiet spell.

    Ports: wait.NewExponentialBackoffManager (backoffManager.Backoff)
    """

    def __init__(self, settings: BackoffSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._clock = clock
        self._next = settings.initial
        self._last_reset = clock()

    @property
    def cap(self) -> float:
        """Seconds no delay exceeds."""
        return self._settings.cap

    def delay(self, *, unreachable: bool = False) -> float:
        """The next delay in seconds, at most the cap (``unreachable_cap`` when ``unreachable``).

        The nominal delay ``n`` grows by ``factor`` per call. While ``n × (1 + jitter)`` fits
        under the cap the delay is uniform in ``[n, n × (1 + jitter))`` (client-go's); once it
        does not, the range shrinks to ``[cap / (1 + jitter), cap]``, so delays near the cap
        stay spread out (replicas that failed together do not retry together) and never
        exceed it.
        """
        s = self._settings
        now = self._clock()
        if now - self._last_reset > s.reset_after:
            self.reset()
        nominal = self._next
        self._next = min(self._next * s.factor, s.cap)
        cap = min(s.cap, s.unreachable_cap) if unreachable else s.cap
        spread = 1.0 + max(s.jitter, 0.0)
        low = min(nominal, cap / spread)
        high = min(nominal * spread, cap)
        return low + random.random() * (high - low)

    def reset(self) -> None:
        """Start over from ``initial`` (after a list and a watch worked)."""
        self._next = self._settings.initial
        self._last_reset = self._clock()
