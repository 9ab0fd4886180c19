"""Event recorders: core/v1 Events about objects, written in the background.

Get a recorder from the manager, ``mgr.get_event_recorder_for("my-controller")``, and call
``recorder.event(obj, EVENT_TYPE_WARNING, "Forbidden", "cannot create roles")`` in a reconcile:
the call queues and returns. The manager's `EventBroadcaster` writes the Events through
client-go's correlator (similar Events aggregated, repeats counted on one Event, a per-object
spam filter), and a 403 makes it stop writing for that namespace after one info line.
`reconcilekit.testing.FakeRecorder` keeps Events in memory for unit tests.

Named after controller-runtime's ``pkg/recorder``, where ``GetEventRecorderFor`` lives; the
client-go machinery it uses (``tools/record``) is ours too and sits here, with its user.

Ports: sigs.k8s.io/controller-runtime/pkg/recorder and k8s.io/client-go/tools/record
"""

from reconcilekit.recorder._broadcaster import EVENTS_DROPPED_TOTAL, BroadcasterOptions, EventBroadcaster
from reconcilekit.recorder.correlator import CorrelateResult, CorrelatorOptions, EventCorrelator
from reconcilekit.recorder.interfaces import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder, EventSink, Provider

__all__ = [
    "EVENTS_DROPPED_TOTAL",
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "BroadcasterOptions",
    "CorrelateResult",
    "CorrelatorOptions",
    "EventBroadcaster",
    "EventCorrelator",
    "EventRecorder",
    "EventSink",
    "Provider",
]
