"""Request accounting: every API request counted by verb, resource and response code.

Two views of the same counts:

* ``rest_client_requests_total{code, method, host}``, client-go's Prometheus counter, shared by
  every client in the process and registered on demand with `register_metrics`;
* `RequestCounts`, one per client, readable in-process, so a test or a benchmark can say how many
  API calls a piece of work made ("3 patches and 1 get per runner").

Ports: k8s.io/client-go/tools/metrics (RequestResult) and its registration in
controller-runtime's pkg/metrics/client_go_adapter.go
"""

from __future__ import annotations

from collections import Counter as _Tally
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter

    REQUESTS_TOTAL: Counter
    """client-go's request counter; ``code`` is the HTTP status or ``<error>`` when no answer came.

    Created on first use (attribute access or `register_metrics`), with every request counted
    before then: a process that exposes no metrics never imports prometheus_client.
    """

__all__ = ["REQUESTS_TOTAL", "RequestCounts", "RequestKey", "count_request", "register_metrics"]

_counter: Counter | None = None
_uncounted: _Tally[tuple[str, str, str]] = _Tally()
"""Requests seen before the counter existed, by (code, method, host); moved into it when it is made."""

_registered: set[int] = set()


def _requests_total() -> Counter:
    """`REQUESTS_TOTAL`, created (and given the requests counted so far) on first call.

    Python only: prometheus_client costs a process about 1 MiB; a listener never serves it.
    """
    global _counter
    if _counter is None:
        from prometheus_client import Counter

        _counter = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=None,
        )
        for (code, method, host), n in _uncounted.items():
            _counter.labels(code=code, method=method, host=host).inc(n)
        _uncounted.clear()
    return _counter


def __getattr__(name: str) -> object:
    """Python only: `REQUESTS_TOTAL` on first access (PEP 562)."""
    if name == "REQUESTS_TOTAL":
        return _requests_total()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def count_request(code: int | str, method: str, host: str) -> None:
    """Add one request to `REQUESTS_TOTAL`, or to the tally it starts from when it does not exist yet.

    Python only: client-go's RequestResult.Increment.
    """
    if _counter is None:
        _uncounted[(str(code), method, host)] += 1
    else:
        _counter.labels(code=str(code), method=method, host=host).inc()


def register_metrics(registry: CollectorRegistry | None = None) -> None:
    """Expose `REQUESTS_TOTAL` through ``registry``, prometheus_client's default one when None.

    Once per registry; later calls do nothing.

    Python only: the counter is shared, the registry is the process's choice.
    """
    if registry is None:
        from prometheus_client import REGISTRY

        registry = REGISTRY
    if id(registry) not in _registered:
        registry.register(_requests_total())
        _registered.add(id(registry))


class RequestKey(NamedTuple):
    """One cell of the per-client tally."""

    verb: str
    """Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection."""

    resource: str
    """Resource plural with its subresource, e.g. ``pods``, ``ephemeralrunners/status``."""

    code: int | str
    """HTTP status code, or ``"<error>"`` when the request got no answer."""


class RequestCounts:
    """The requests one client made since it was built or last reset.

    Python only: the in-process reading of ``rest_client_requests_total``.
    """

    def __init__(self) -> None:
        self._tally: _Tally[RequestKey] = _Tally()

    def add(self, verb: str, resource: str, code: int | str) -> None:
        """Count one request."""
        self._tally[RequestKey(verb, resource, code)] += 1

    def snapshot(self) -> dict[RequestKey, int]:
        """The counts by (verb, resource, code)."""
        return dict(self._tally)

    def by_verb(self, *, resource: str | None = None) -> dict[str, int]:
        """Totals by verb, over every code; only ``resource`` when given."""
        out: _Tally[str] = _Tally()
        for key, n in self._tally.items():
            if resource is None or key.resource == resource:
                out[key.verb] += n
        return dict(out)

    def total(self) -> int:
        """All requests counted."""
        return sum(self._tally.values())

    def reset(self) -> dict[RequestKey, int]:
        """Start again from zero; return the counts before."""
        before = dict(self._tally)
        self._tally.clear()
        return before

    def __repr__(self) -> str:
        return f"RequestCounts({self.snapshot()!r})"

    def matches(self, expected: Mapping[str, int], *, resource: str | None = None) -> bool:
        """Whether `by_verb` equals ``expected`` exactly."""
        return self.by_verb(resource=resource) == dict(expected)
