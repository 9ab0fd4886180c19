"""Test doubles and fault injection for controllers built on reconcilekit.

* `FakeClient`: an in-memory API server (resource versions, watches, 410 on demand).
* `InterceptorClient`, `ConflictInjector`, `CrashInjector`, `LaggingClient`: wrap any client
  to count requests, inject conflicts, crash a reconcile at an await point, or make a cache lag.
* `FakeRecorder`: an event recorder that keeps Events in memory.
* `eventually`, `consistently`: polling assertions.
* `FaultProxy`: a loopback TCP proxy that blackholes, resets, refuses or stalls the
  connections between a manager and the API server.

See `reconcilekit.testing.faults` for a worked example.

Python only: controller-runtime ships a fake client; the fault kit is ours.
"""

from reconcilekit.testing.eventually import consistently, eventually
from reconcilekit.testing.fake_client import DEFAULT_KINDS_WITHOUT_STATUS, FakeClient, RecordedRequest
from reconcilekit.testing.fake_recorder import FakeRecorder, RecordedEvent
from reconcilekit.testing.faults import (
    CRASHED,
    Call,
    ConflictInjector,
    CrashInjector,
    InterceptorClient,
    LaggingClient,
    SimulatedCrash,
)
from reconcilekit.testing.tcp_proxy import FaultProxy

__all__ = [
    "CRASHED",
    "DEFAULT_KINDS_WITHOUT_STATUS",
    "Call",
    "ConflictInjector",
    "CrashInjector",
    "FakeClient",
    "FakeRecorder",
    "FaultProxy",
    "InterceptorClient",
    "LaggingClient",
    "RecordedEvent",
    "RecordedRequest",
    "SimulatedCrash",
    "consistently",
    "eventually",
]
