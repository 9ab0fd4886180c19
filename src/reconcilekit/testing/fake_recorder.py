"""A recorder that keeps Events in memory, for unit tests of reconcilers that record Events.

Example::

    recorder = FakeRecorder()
    reconciler = MyReconciler(client, recorder=recorder)
    await reconciler.reconcile(request)
    assert recorder.strings() == ["Warning Forbidden cannot create roles in arc-runners"]

Ports: k8s.io/client-go/tools/record (fake.go FakeRecorder)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind, Object
from reconcilekit.client.patch import to_json_tree
from reconcilekit.recorder import EventRecorder

__all__ = ["FakeRecorder", "RecordedEvent"]


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One Event a `FakeRecorder` was given.

    Attributes:
        object: the object it is about, as given (a JSON object or a model).
        type: ``Normal`` or ``Warning``.
        reason, message: as given (``eventf``'s message already formatted).
        annotations: those of ``annotated_event``, else empty.

    Python only: client-go's fake keeps strings; this keeps the parts too.
    """

    object: Any
    type: str
    reason: str
    message: str
    annotations: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        """``"<type> <reason> <message>"``, client-go's FakeRecorder line."""
        return f"{self.type} {self.reason} {self.message}"

    @property
    def kind(self) -> str:
        """The object's kind ("" when it has none)."""
        tree: Object = to_json_tree(self.object)
        try:
            return GroupVersionKind.of(tree).kind
        except ValueError:
            return ""


class FakeRecorder:
    """An `reconcilekit.recorder.EventRecorder` that appends every Event to `events`; nothing is written.

    Unlike the real recorder there is no correlation or spam filter: every call is kept.

    Ports: record.FakeRecorder
    """

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []
        """Every Event recorded, oldest first."""

    def event(self, obj: Any, type: str, reason: str, message: str, /) -> None:
        """Keep the Event. Ports: FakeRecorder.Event"""
        self.events.append(RecordedEvent(obj, type, reason, message))

    def eventf(self, obj: Any, type: str, reason: str, message: str, /, *args: object) -> None:
        """Keep the Event with ``message % args``. Ports: FakeRecorder.Eventf"""
        self.events.append(RecordedEvent(obj, type, reason, message % args if args else message))

    def annotated_event(
        self, obj: Any, annotations: Mapping[str, str], type: str, reason: str, message: str, /
    ) -> None:
        """Keep the Event and its annotations. Ports: FakeRecorder.AnnotatedEventf"""
        self.events.append(RecordedEvent(obj, type, reason, message, dict(annotations)))

    def strings(self) -> list[str]:
        """The Events as client-go's fake writes them: ``"<type> <reason> <message>"``."""
        return [str(e) for e in self.events]

    def clear(self) -> None:
        """Forget every Event kept so far."""
        self.events.clear()


def _conforms(r: FakeRecorder) -> EventRecorder:  # pragma: no cover - checked by mypy, never called
    """Python only: mypy proves FakeRecorder is an EventRecorder."""
    return r
