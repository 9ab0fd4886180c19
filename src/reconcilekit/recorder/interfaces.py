"""The recorder's roles: what a reconciler records Events through, and what gives it a recorder.

An object passed to a recorder is a JSON object (``apiVersion``, ``kind``, ``metadata``) or a
pydantic model of one; the Event names it in ``involvedObject`` and goes to its namespace
(``default`` for a cluster-scoped object).

Ports: sigs.k8s.io/controller-runtime/pkg/recorder (recorder.go) over
k8s.io/client-go/tools/record (event.go EventRecorder, EventSink)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from reconcilekit.client.interfaces import Object, Patch

__all__ = ["EVENT_TYPE_NORMAL", "EVENT_TYPE_WARNING", "EventRecorder", "EventSink", "Provider"]

EVENT_TYPE_NORMAL: Final = "Normal"
"""Nothing is wrong: information. Ports: corev1.EventTypeNormal"""
EVENT_TYPE_WARNING: Final = "Warning"
"""Something may be wrong. Ports: corev1.EventTypeWarning"""


class EventRecorder(Protocol):
    """**Protocol:** records core/v1 Events about an object, without ever blocking or raising.

    A call only queues the Event; the broadcaster writes it later from its own task. A full
    queue, a refused write (403 included) or a stopped broadcaster loses the Event, never the
    reconcile. ``type`` is `EVENT_TYPE_NORMAL` or `EVENT_TYPE_WARNING`; ``reason`` is a short
    UpperCamelCase word for machines (``"Created"``, ``"Forbidden"``); ``message`` is for people.

    Example::

        recorder = mgr.get_event_recorder_for("autoscalingrunnerset-controller")
        recorder.event(runner_set, EVENT_TYPE_WARNING, "Forbidden", "cannot create roles in arc-runners")

    Ports: record.EventRecorder
    """

    def event(self, obj: Any, type: str, reason: str, message: str, /) -> None:
        """Record an Event about ``obj``. Ports: EventRecorder.Event"""
        ...

    def eventf(self, obj: Any, type: str, reason: str, message: str, /, *args: object) -> None:
        """Record an Event whose message is ``message % args`` (printf style). Ports: EventRecorder.Eventf"""
        ...

    def annotated_event(
        self, obj: Any, annotations: Mapping[str, str], type: str, reason: str, message: str, /
    ) -> None:
        """Record an Event that carries ``annotations`` in its metadata. Ports: EventRecorder.AnnotatedEventf"""
        ...


class Provider(Protocol):
    """**Protocol:** hands out recorders by name. Ports: recorder.Provider (GetEventRecorderFor)"""

    def get_event_recorder_for(self, name: str, /) -> EventRecorder:
        """A recorder whose Events name ``name`` as ``source.component`` and ``reportingComponent``."""
        ...


class EventSink(Protocol):
    """**Protocol:** where a broadcaster writes Events; any `reconcilekit.client.Writer` is one.

    Ports: record.EventSink (Create, Patch)
    """

    async def create(self, obj: Object, /) -> Object:
        """POST the Event; returns it as stored."""
        ...

    async def patch(self, obj: Object, patch: Patch, /) -> Object:
        """PATCH the Event named by ``obj``; returns it as stored."""
        ...
