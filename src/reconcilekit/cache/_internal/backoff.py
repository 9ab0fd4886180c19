"""The reflector's backoff: exponential with one-sided jitter, reset after a quiet spell.

Ports: k8s.io/apimachinery/pkg/util/wait (backoff.go: Backoff, Jitter,
NewExponentialBackoffManager / delay.go)
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
    """Reflector backoff, in seconds. Defaults are client-go's (reflector.go).

    Ports: reflector.go's backoff manager arguments
    """

    initial: float = 0.8
    factor: float = 2.0
    jitter: float = 1.0
    cap: float = 30.0
    reset_after: float = 120.0


class BackoffManager:
    """Hands out ever longer delays; starts over when none was asked for in ``reset_after`` s.

    Ports: wait.NewExponentialBackoffManager (backoffManager.Backoff)
    """

    def __init__(self, settings: BackoffSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._clock = clock
        self._next = settings.initial
        self._last_reset = clock()

    def delay(self) -> float:
        """The next delay in seconds (jittered)."""
        s = self._settings
        now = self._clock()
        if now - self._last_reset > s.reset_after:
            self._next = s.initial
            self._last_reset = now
        nominal = self._next
        self._next = min(self._next * s.factor, s.cap)
        return jitter(nominal, s.jitter) if s.jitter > 0 else nominal
