"""What a reconciler is given and what it answers.

Reconcile is level-based: a `Request` carries only the key of the object that changed,
never the event. The reconciler reads the world and makes it right.

Ports: sigs.k8s.io/controller-runtime/pkg/reconcile (reconcile.go)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reconcilekit.client.interfaces import ObjectKey

__all__ = ["Reconciler", "Request", "Result"]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """The key of the object to reconcile; ``namespace`` is "" for cluster-scoped kinds.

    Ports: reconcile.Request
    """

    namespace: str
    name: str

    @property
    def key(self) -> ObjectKey:
        """The same key as an `ObjectKey`."""
        return ObjectKey(self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What to do with a request after a reconcile that raised nothing.

    Ports: reconcile.Result
    """

    requeue: bool = False
    """Requeue with the rate limiter's backoff (deprecated upstream; prefer ``requeue_after``)."""

    requeue_after: float = 0.0
    """Seconds after which to reconcile again; > 0 wins over ``requeue`` and resets the backoff."""

    priority: int | None = None
    """Priority of the requeue (priority queue only); ``None`` keeps the priority the request had."""

    def is_zero(self) -> bool:
        """True when no field is set. Ports: reconcile.Result.IsZero"""
        return not self.requeue and self.requeue_after <= 0 and self.priority is None


class Reconciler(Protocol):
    """**Protocol:** makes the world match one object's desired state.

    Raise to have the request retried with backoff; raise `reconcilekit.errors.TerminalError`
    to record an error without a retry; return a `Result` to requeue on purpose.

    Example::

        class Echo:
            async def reconcile(self, request: Request) -> Result:
                print("reconciling", request)
                return Result()

    Ports: reconcile.Reconciler
    """

    async def reconcile(self, request: Request, /) -> Result: ...
