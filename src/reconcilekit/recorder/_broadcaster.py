"""The event broadcaster: a bounded queue of Events and the one task that writes them.

Recorders put Events on the queue and return at once; a full queue drops the new Event and counts
it. The writer task (`EventBroadcaster.start`, run by the manager) takes Events in order, passes
each through the `EventCorrelator`, and creates it or, for a repeat, patches the existing Event's
``count``, ``lastTimestamp`` and ``message`` (falling back to a create when that Event is gone).
A write that got no answer is tried again up to 12 times, 10 s apart (the first wait jittered);
one the server refused is not. On stop, whatever is still queued is written once each within
``flush_timeout``; Events recorded after that are dropped.

A 403 ends recording for that namespace: one info line, then Events for the namespace are dropped
without a request. After ``forbidden_retry_after`` seconds one Event probes again (quietly); if it
is written, recording resumes with an info line. Only that namespace: RBAC on Events is granted
per namespace, and one refusal says nothing about the others.

Ports: k8s.io/client-go/tools/record/event.go (eventBroadcasterImpl: StartRecordingToSink,
recordToSink, recordEvent; recorderImpl) and controller-runtime's pkg/internal/recorder
(Provider's stop-then-drop)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from prometheus_client import Counter

from reconcilekit._internal import json as _json
from reconcilekit.client.interfaces import Object
from reconcilekit.client.patch import STRATEGIC_MERGE_PATCH, raw_patch
from reconcilekit.errors import APIStatusError, ForbiddenError, NotFoundError, is_already_exists
from reconcilekit.metrics import REGISTRY
from reconcilekit.recorder._event import make_event, object_reference
from reconcilekit.recorder.correlator import CorrelatorOptions, EventCorrelator
from reconcilekit.recorder.interfaces import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder, EventSink

__all__ = ["EVENTS_DROPPED_TOTAL", "BroadcasterOptions", "EventBroadcaster"]

log = structlog.get_logger("reconcilekit.recorder")

EVENTS_DROPPED_TOTAL = Counter(
    "reconcilekit_events_dropped_total",
    "Events recorded but never written, by reason: queue_full, forbidden, rejected, retries_exhausted, stopped.",
    ["reason"],
    registry=None,
)
"""Python only: what client-go reports only in its log."""

_registered = False


def _register_metrics() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(EVENTS_DROPPED_TOTAL)
        _registered = True


@dataclass(frozen=True, slots=True, kw_only=True)
class BroadcasterOptions:
    """How the broadcaster queues and writes Events. Durations in seconds.

    Attributes:
        queue_size: Events queued at most; a full queue drops the new one (1000).
        max_tries: writes of one Event that got no answer before it is given up (12).
        retry_sleep: seconds between those tries; the first wait is a random part of it (10).
        flush_timeout: seconds the writer has on stop to write what is still queued (5).
        forbidden_retry_after: seconds a namespace whose Events were refused with 403 stays
            quiet before one Event probes again (600).
        correlator: aggregation, counting and the spam filter.

    Ports: record's maxQueuedEvents, maxTriesPerEvent, defaultSleepDuration and
    WithCorrelatorOptions; flush_timeout and forbidden_retry_after are Python only.
    """

    queue_size: int = 1000
    max_tries: int = 12
    retry_sleep: float = 10.0
    flush_timeout: float = 5.0
    forbidden_retry_after: float = 600.0
    correlator: CorrelatorOptions = field(default_factory=CorrelatorOptions)

    def __post_init__(self) -> None:
        if self.queue_size < 1 or self.max_tries < 1:
            raise ValueError("queue_size and max_tries must be at least 1")
        if self.retry_sleep < 0 or self.flush_timeout < 0 or self.forbidden_retry_after < 0:
            raise ValueError("retry_sleep, flush_timeout and forbidden_retry_after must not be negative")


class EventBroadcaster:
    """Writes the Events of its recorders to ``sink`` from one owned task; a manager runnable.

    Args:
        sink: where Events go (the manager's direct client).
        options: see `BroadcasterOptions`.
        clock: seconds since the epoch for timestamps, the correlator and the quiet period
            (defaults to the correlator options' clock, `time.time`).

    Ports: record.eventBroadcasterImpl with StartRecordingToSink
    """

    def __init__(
        self, sink: EventSink, options: BroadcasterOptions | None = None, *, clock: Callable[[], float] | None = None
    ) -> None:
        opts = options or BroadcasterOptions()
        self._options = opts
        self._clock = clock or opts.correlator.clock
        self._correlator = EventCorrelator(dataclasses.replace(opts.correlator, clock=self._clock))
        self._sink = sink
        self._queue: asyncio.Queue[Object] = asyncio.Queue(maxsize=opts.queue_size)
        self._quiet_until: dict[str, float] = {}
        self._started = False
        self._stopped = False
        self._in_flight: asyncio.Task[None] | None = None
        self._dropping = False
        self.dropped: dict[str, int] = {}
        """Events lost so far, by reason (the labels of `EVENTS_DROPPED_TOTAL`)."""
        _register_metrics()

    def new_recorder(self, component: str) -> EventRecorder:
        """A recorder whose Events name ``component`` as their source. Ports: NewRecorder"""
        return _Recorder(self, component, self._clock)

    def need_leader_election(self) -> bool:
        """False: every replica records Events, leader or not."""
        return False

    def action_or_drop(self, event: Object) -> bool:
        """Queue ``event``; False when it was dropped (queue full, or stopped). Ports: Broadcaster.ActionOrDrop"""
        if self._stopped:
            self._drop("stopped")
            return False
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            if not self._dropping:
                log.warning("event queue full; dropping events", queue_size=self._options.queue_size)
            self._dropping = True
            self._drop("queue_full")
            return False
        self._dropping = False
        return True

    async def start(self) -> None:
        """Write queued Events until cancelled, then flush what is left (bounded) and stop.

        Raises:
            RuntimeError: started twice.
        """
        if self._started:
            raise RuntimeError("event broadcaster already started")
        self._started = True
        try:
            while True:
                event = await self._queue.get()
                # a write of its own, shielded: a stop lets the Event in hand finish in the flush
                self._in_flight = asyncio.create_task(
                    self._record_to_sink(event, max_tries=self._options.max_tries), name="event-broadcaster-write"
                )
                await asyncio.shield(self._in_flight)
                self._in_flight = None
        except asyncio.CancelledError:
            await self._flush()
            raise
        finally:
            self._stopped = True

    async def _flush(self) -> None:
        """Python only: finish the write in hand, then write what is queued (one try each), within ``flush_timeout``."""
        self._stopped = True
        in_flight, self._in_flight = self._in_flight, None
        pending = [self._queue.get_nowait() for _ in range(self._queue.qsize())]
        written = 0
        try:
            async with asyncio.timeout(self._options.flush_timeout):
                if in_flight is not None:
                    await in_flight
                    in_flight = None
                for event in pending:
                    await self._record_to_sink(event, max_tries=1)
                    written += 1
        except TimeoutError:
            lost = len(pending) - written
            if in_flight is not None:
                in_flight.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await in_flight
                lost += 1
            self.dropped["stopped"] = self.dropped.get("stopped", 0) + lost
            EVENTS_DROPPED_TOTAL.labels("stopped").inc(lost)
            log.warning("event broadcaster stopped with events unwritten", unwritten=lost)

    def _drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        EVENTS_DROPPED_TOTAL.labels(reason).inc()

    async def _record_to_sink(self, event: Object, *, max_tries: int) -> None:
        """Correlate, then write with retries. Ports: eventBroadcasterImpl.recordToSink"""
        namespace = str(event["metadata"].get("namespace") or "")
        until = self._quiet_until.get(namespace)
        if until is not None and self._clock() < until:
            self._drop("forbidden")
            return
        result = self._correlator.correlate(event)
        if result.skip or result.event is None:
            return
        for tries in range(1, max_tries + 1):
            if await self._record(result.event, result.patch):
                return
            if tries < max_tries:
                delay = self._options.retry_sleep
                await asyncio.sleep(delay * random.random() if tries == 1 else delay)
        self._drop("retries_exhausted")
        log.error("unable to write event (retry limit exceeded)", **_describe(event))

    async def _record(self, event: Object, patch: Mapping[str, Any] | None) -> bool:
        """One write; True when done with the Event (written or refused for good). Ports: recordEvent"""
        verb = "create" if patch is None else "patch"
        try:
            stored = None
            if patch is not None:
                try:
                    stored = await self._sink.patch(event, raw_patch(STRATEGIC_MERGE_PATCH, _json.dumps(patch)))
                except NotFoundError:
                    verb = "create"
            if stored is None:
                event["metadata"].pop("resourceVersion", None)
                stored = await self._sink.create(event)
        except ForbiddenError as err:
            self._forbidden(event, verb, err)
            return True
        except APIStatusError as err:
            self._drop("rejected")
            terminating = any(c.get("type") == "NamespaceTerminating" for c in err.causes)
            report = log.debug if is_already_exists(err) or terminating else log.error
            report("server rejected event (will not retry)", error=str(err), **_describe(event))
            return True
        except Exception as err:  # no answer (transport, timeout): worth another try
            log.warning("unable to write event (may retry after sleeping)", error=repr(err), **_describe(event))
            return False
        self._correlator.update_state(stored)
        namespace = str(event["metadata"].get("namespace") or "")
        if self._quiet_until.pop(namespace, None) is not None:
            log.info("events are written again", namespace=namespace)
        return True

    def _forbidden(self, event: Object, verb: str, err: ForbiddenError) -> None:
        """Go quiet for the Event's namespace; say so once.

        Beyond: client-go logs every refused Event at error level; ARC's chart grants no rights on
        events, so that would be an error line per Event for a setting nobody got wrong (issue 19).
        """
        self._drop("forbidden")
        namespace = str(event["metadata"].get("namespace") or "")
        probing = namespace in self._quiet_until
        self._quiet_until[namespace] = self._clock() + self._options.forbidden_retry_after
        if probing:
            log.debug("events still forbidden", namespace=namespace, verb=verb)
            return
        log.info(
            "events forbidden; not recording events in this namespace",
            namespace=namespace,
            verb=verb,
            component=event.get("source", {}).get("component", ""),
            retry_after_s=self._options.forbidden_retry_after,
            error=err.message,
        )


def _describe(event: Object) -> dict[str, str]:
    involved = event.get("involvedObject") or {}
    return {
        "object": f"{involved.get('kind', '')} {involved.get('namespace', '')}/{involved.get('name', '')}",
        "reason": str(event.get("reason", "")),
        "event_type": str(event.get("type", "")),
    }


class _Recorder:
    """An `EventRecorder` that queues on its broadcaster. Ports: record.recorderImpl"""

    def __init__(self, broadcaster: EventBroadcaster, component: str, clock: Callable[[], float]) -> None:
        self._broadcaster = broadcaster
        self._component = component
        self._clock = clock

    def event(self, obj: Any, type: str, reason: str, message: str, /) -> None:
        """Ports: recorderImpl.Event"""
        self._generate(obj, None, type, reason, message)

    def eventf(self, obj: Any, type: str, reason: str, message: str, /, *args: object) -> None:
        """Ports: recorderImpl.Eventf"""
        self._generate(obj, None, type, reason, _format(message, args))

    def annotated_event(
        self, obj: Any, annotations: Mapping[str, str], type: str, reason: str, message: str, /
    ) -> None:
        """Ports: recorderImpl.AnnotatedEventf"""
        self._generate(obj, annotations, type, reason, message)

    def _generate(self, obj: Any, annotations: Mapping[str, str] | None, type: str, reason: str, message: str) -> None:
        """Build the Event and queue it; a bad object or type is logged, never raised. Ports: generateEvent"""
        try:
            ref = object_reference(obj)
        except ValueError as err:
            log.error("could not construct reference, will not report event", error=str(err), reason=reason)
            return
        if type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            log.error("unsupported event type", event_type=type, reason=reason)
            return
        event = make_event(
            ref,
            type=type,
            reason=reason,
            message=message,
            component=self._component,
            now=self._clock(),
            annotations=annotations,
        )
        log.debug(
            "event", event_type=type, reason=reason, object=f"{ref['kind']} {ref.get('namespace', '')}/{ref['name']}"
        )
        self._broadcaster.action_or_drop(event)


def _format(message: str, args: tuple[object, ...]) -> str:
    """``message % args``; a template that does not fit its arguments keeps them, unformatted."""
    if not args:
        return message
    try:
        return message % args
    except (TypeError, ValueError):
        log.error("event message does not fit its arguments", message=message)
        return " ".join([message, *map(str, args)])
