"""The event correlator: what a broadcaster does to each Event before it reaches the API server.

Three steps, in client-go's order, for every Event:

1. **Aggregation** (`EventAggregator`): Events that differ only in their message (same source,
   involved object, type and reason) are counted in a window; from the ``max_events``-th distinct
   message (10) within ``max_interval`` seconds (600) of the previous one, they become one
   aggregate Event whose message is ``(combined from similar events): <latest message>``.
2. **Counting** (``_EventLogger``): an Event seen before under the same key is not created again:
   it takes the first occurrence's name and ``firstTimestamp``, ``count`` goes up by one, and the
   result carries the patch (``count``, ``lastTimestamp``, ``message``) that updates it.
3. **Spam filter** (`EventSourceObjectSpamFilter`): a token bucket per source, involved object and
   type: a burst of 25 Events, then one more every 300 s. Filtered Events are dropped (their count
   still goes up, so the next one written carries it).

All three keep their state in LRU caches of 4096 entries. Times come from ``clock``: seconds since
the epoch (`time.time`), injectable for tests.

Ports: k8s.io/client-go/tools/record/events_cache.go
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from reconcilekit._internal.jsoncopy import deep_copy_json
from reconcilekit.client.interfaces import Object

__all__ = [
    "DEFAULT_AGGREGATE_MAX_EVENTS",
    "DEFAULT_AGGREGATE_MAX_INTERVAL",
    "DEFAULT_LRU_CACHE_SIZE",
    "DEFAULT_SPAM_BURST",
    "DEFAULT_SPAM_QPS",
    "CorrelateResult",
    "CorrelatorOptions",
    "EventAggregator",
    "EventCorrelator",
    "EventSourceObjectSpamFilter",
    "aggregate_by_reason",
    "aggregate_message",
    "event_key",
    "format_time",
    "spam_key",
]

DEFAULT_LRU_CACHE_SIZE = 4096
"""Entries each of the three caches keeps. Ports: maxLruCacheEntries"""
DEFAULT_AGGREGATE_MAX_EVENTS = 10
"""Distinct messages of similar Events before they are aggregated. Ports: defaultAggregateMaxEvents"""
DEFAULT_AGGREGATE_MAX_INTERVAL = 600.0
"""Seconds after the last similar Event at which the count starts again. Ports: defaultAggregateIntervalInSeconds"""
DEFAULT_SPAM_BURST = 25
"""Events a source may write about one object at once. Ports: defaultSpamBurst"""
DEFAULT_SPAM_QPS = 1.0 / 300.0
"""Tokens per second the spam filter's bucket refills: one every 5 minutes. Ports: defaultSpamQPS"""

_K = TypeVar("_K")
_V = TypeVar("_V")


def _get(obj: Mapping[str, Any], *path: str) -> str:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def _join(event: Mapping[str, Any], *paths: tuple[str, ...]) -> str:
    return "".join(_get(event, *path) for path in paths)


_SOURCE = (("source", "component"), ("source", "host"))
_OBJECT = (("involvedObject", "kind"), ("involvedObject", "namespace"), ("involvedObject", "name"))
_OBJECT_ID = (("involvedObject", "uid"), ("involvedObject", "apiVersion"))


def event_key(event: Mapping[str, Any]) -> str:
    """The key of an exact Event: source, involved object (with field path), type, reason and message.

    Ports: getEventKey
    """
    return _join(event, *_SOURCE, *_OBJECT, ("involvedObject", "fieldPath"), *_OBJECT_ID, ("type",), ("reason",)) + (
        _get(event, "message")
    )


def spam_key(event: Mapping[str, Any]) -> str:
    """The spam filter's key: source, involved object and type (not reason). Ports: getSpamKey"""
    return _join(event, *_SOURCE, *_OBJECT, *_OBJECT_ID, ("type",))


def aggregate_by_reason(event: Mapping[str, Any]) -> tuple[str, str]:
    """``(aggregate key, local key)``: similar Events share the first, the message is the second.

    Ports: EventAggregatorByReasonFunc
    """
    key = _join(
        event, *_SOURCE, *_OBJECT, *_OBJECT_ID, ("type",), ("reason",), ("reportingComponent",), ("reportingInstance",)
    )
    return key, _get(event, "message")


def aggregate_message(event: Mapping[str, Any]) -> str:
    """The message of an aggregate Event. Ports: EventAggregatorByReasonMessageFunc"""
    return "(combined from similar events): " + _get(event, "message")


def format_time(seconds: float) -> str:
    """A ``metav1.Time`` as it goes on the wire: RFC 3339 in UTC, whole seconds. Ports: metav1.Time.MarshalJSON"""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _LRU(Generic[_K, _V]):
    """A bounded map that forgets the least recently used key. Ports: k8s.io/utils/lru.Cache"""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[_K, _V] = OrderedDict()

    def get(self, key: _K) -> _V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def add(self, key: _K, value: _V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self._size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrelatorOptions:
    """How the correlator aggregates, counts and filters. Durations in seconds.

    Attributes:
        lru_cache_size: entries in each cache (4096).
        burst: Events per source, object and type at once (25).
        qps: the spam bucket's refill, tokens per second (1/300: one every 5 minutes).
        max_events: distinct messages of similar Events before aggregation (10).
        max_interval: seconds since the last similar Event after which counting restarts (600).
        clock: seconds since the epoch (`time.time`).
        aggregate_key: ``(aggregate key, local key)`` of an Event (`aggregate_by_reason`).
        aggregate_message: the message of an aggregate Event (`aggregate_message`).
        spam_key: the spam filter's key (`spam_key`).

    Ports: record.CorrelatorOptions (and populateDefaults)
    """

    lru_cache_size: int = DEFAULT_LRU_CACHE_SIZE
    burst: int = DEFAULT_SPAM_BURST
    qps: float = DEFAULT_SPAM_QPS
    max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS
    max_interval: float = DEFAULT_AGGREGATE_MAX_INTERVAL
    clock: Callable[[], float] = time.time
    aggregate_key: Callable[[Mapping[str, Any]], tuple[str, str]] = aggregate_by_reason
    aggregate_message: Callable[[Mapping[str, Any]], str] = aggregate_message
    spam_key: Callable[[Mapping[str, Any]], str] = spam_key

    def __post_init__(self) -> None:
        if self.lru_cache_size < 1 or self.burst < 1 or self.max_events < 1:
            raise ValueError("lru_cache_size, burst and max_events must be at least 1")
        if self.qps <= 0 or self.max_interval <= 0:
            raise ValueError("qps and max_interval must be positive")


@dataclass(slots=True)
class _TokenBucket:
    """Passive token bucket: ``burst`` tokens, ``qps`` a second back. Ports: flowcontrol's passive limiter"""

    burst: int
    qps: float
    tokens: float
    last: float

    def try_accept(self, now: float) -> bool:
        """Take a token if one is there. Ports: tokenBucketPassiveRateLimiter.TryAccept (rate.Limiter.AllowN)"""
        tokens = min(float(self.burst), self.tokens + max(0.0, now - self.last) * self.qps)
        if tokens < 1.0:
            return False
        self.tokens, self.last = tokens - 1.0, max(now, self.last)
        return True


class EventSourceObjectSpamFilter:
    """Throttles how many Events one source writes about one object. Ports: EventSourceObjectSpamFilter"""

    def __init__(self, options: CorrelatorOptions) -> None:
        self._options = options
        self._cache: _LRU[str, _TokenBucket] = _LRU(options.lru_cache_size)

    def filter(self, event: Mapping[str, Any]) -> bool:
        """True if ``event`` must be dropped: its source and object are out of tokens. Ports: Filter"""
        opts = self._options
        key = opts.spam_key(event)
        now = opts.clock()
        bucket = self._cache.get(key) or _TokenBucket(opts.burst, opts.qps, float(opts.burst), now)
        accepted = bucket.try_accept(now)
        self._cache.add(key, bucket)
        return not accepted


@dataclass(slots=True)
class _AggregateRecord:
    local_keys: set[str] = field(default_factory=set)
    last: float = 0.0


class EventAggregator:
    """Folds similar Events (differing only in message) into one aggregate Event. Ports: EventAggregator"""

    def __init__(self, options: CorrelatorOptions) -> None:
        self._options = options
        self._cache: _LRU[str, _AggregateRecord] = _LRU(options.lru_cache_size)

    def aggregate(self, event: Object) -> tuple[Object, str]:
        """``(the Event to write, its cache key)``.

        Below the threshold: ``event`` itself and its `event_key`. From the ``max_events``-th
        distinct message on: a new aggregate Event (count 1, the aggregate message) and the
        aggregate key, so later aggregates update that one Event.

        Ports: EventAggregator.EventAggregate
        """
        opts = self._options
        now = opts.clock()
        aggregate_key, local_key = opts.aggregate_key(event)
        record = self._cache.get(aggregate_key)
        if record is None or now - record.last > opts.max_interval:
            record = _AggregateRecord()
        record.local_keys.add(local_key)
        record.last = now
        self._cache.add(aggregate_key, record)
        if len(record.local_keys) < opts.max_events:
            return event, event_key(event)
        record.local_keys.pop()  # never grow past the threshold
        stamp = format_time(now)
        involved = event.get("involvedObject") or {}
        aggregate: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name', '')}.{int(now * 1e9):x}",
                "namespace": _get(event, "metadata", "namespace"),
            },
            "involvedObject": deep_copy_json(involved),
            "reason": event.get("reason", ""),
            "message": opts.aggregate_message(event),
            "source": deep_copy_json(event.get("source") or {}),
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": event.get("type", ""),
        }
        return aggregate, aggregate_key


@dataclass(frozen=True, slots=True)
class _Observation:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


class _EventLogger:
    """Counts occurrences of each Event and prepares the patch of a repeat. Ports: eventLogger"""

    def __init__(self, options: CorrelatorOptions) -> None:
        self._cache: _LRU[str, _Observation] = _LRU(options.lru_cache_size)

    def observe(self, event: Object, key: str) -> tuple[Object, dict[str, Any] | None]:
        """``(the Event to write, the patch for an existing one or None)``. Ports: eventLogger.eventObserve"""
        observed = deep_copy_json(event)
        patch: dict[str, Any] | None = None
        last = self._cache.get(key)
        if last is not None and last.count > 0:
            meta = observed.setdefault("metadata", {})
            meta["name"] = last.name
            meta["resourceVersion"] = last.resource_version
            observed["firstTimestamp"] = last.first_timestamp
            observed["count"] = last.count + 1
            patch = {"count": observed["count"], "lastTimestamp": observed.get("lastTimestamp")}
            if observed.get("message"):
                patch["message"] = observed["message"]
        self._remember(key, observed)
        return observed, patch

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Remember what the server stored. Ports: eventLogger.updateState"""
        self._remember(event_key(event), event)

    def _remember(self, key: str, event: Mapping[str, Any]) -> None:
        meta = event.get("metadata") or {}
        self._cache.add(
            key,
            _Observation(
                count=int(event.get("count") or 0),
                first_timestamp=str(event.get("firstTimestamp") or ""),
                name=str(meta.get("name") or ""),
                resource_version=str(meta.get("resourceVersion") or ""),
            ),
        )


@dataclass(frozen=True, slots=True)
class CorrelateResult:
    """What to do with one Event.

    Attributes:
        event: the Event after correlation (``None`` when skipped).
        patch: for a repeat, the fields to patch on the existing Event (``count``,
            ``lastTimestamp``, ``message``); ``None`` means create.
        skip: drop the Event (the spam filter refused it).

    Ports: EventCorrelateResult
    """

    event: Object | None
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """Aggregates, counts and filters Events before they are written.

    Not safe across threads; a broadcaster calls it from its one writer task.

    Ports: EventCorrelator (NewEventCorrelatorWithOptions)
    """

    def __init__(self, options: CorrelatorOptions | None = None) -> None:
        opts = options or CorrelatorOptions()
        self._aggregator = EventAggregator(opts)
        self._logger = _EventLogger(opts)
        self._spam_filter = EventSourceObjectSpamFilter(opts)

    def correlate(self, event: Object) -> CorrelateResult:
        """Aggregate, count, then filter ``event`` (which is not changed). Ports: EventCorrelate"""
        aggregated, key = self._aggregator.aggregate(event)
        observed, patch = self._logger.observe(aggregated, key)
        if self._spam_filter.filter(observed):
            return CorrelateResult(None, skip=True)
        return CorrelateResult(observed, patch)

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Record the Event as the server stored it (its name, resourceVersion, count). Ports: UpdateState"""
        self._logger.update_state(event)
