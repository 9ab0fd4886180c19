"""The records of the fake Actions service: runners, jobs, scale sets, sessions, message queues."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from arc_controllers.actions.types import format_go_time

__all__ = [
    "MAX_JOBS_PER_MESSAGE",
    "UNLIMITED",
    "FakeError",
    "FakeJob",
    "FakeRunner",
    "FakeScaleSet",
    "FakeSession",
    "MessageQueue",
    "now",
]

MAX_JOBS_PER_MESSAGE = 50
"""At most this many job messages go into one batched message."""

UNLIMITED = 2**31 - 1


class FakeError(Exception):
    """An Actions exception the routes turn into ``{"typeName", "message"}``."""

    def __init__(self, status: int, type_name: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.type_name = type_name
        self.message = message


def now() -> datetime:
    """The current UTC time, whole seconds."""
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(kw_only=True)
class FakeRunner:
    """A registered runner (agent)."""

    id: int
    name: str
    scale_set_id: int
    jit_secret: str = field(repr=False)
    online: bool = False
    job_request_id: int | None = None

    @property
    def busy(self) -> bool:
        return self.job_request_id is not None

    def reference(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "runnerScaleSetId": self.scale_set_id}


@dataclass(kw_only=True)
class FakeJob:
    """One workflow job request."""

    request_id: int
    job_id: str
    labels: list[str]
    repository_name: str
    owner_name: str
    workflow_ref: str
    display_name: str
    workflow_run_id: int
    event_name: str
    state: str = "queued"
    scale_set_id: int | None = None
    runner_id: int = 0
    runner_name: str = ""
    result: str = ""
    queue_time: datetime = field(default_factory=now)
    scale_set_assign_time: datetime | None = None
    runner_assign_time: datetime | None = None
    finish_time: datetime | None = None

    def message(self, message_type: str, **extra: Any) -> dict[str, Any]:
        """The job message of ``message_type`` (JobMessageBase's fields, then the kind's ``extra``)."""
        zero = "0001-01-01T00:00:00Z"

        def ts(value: datetime | None) -> str:
            return format_go_time(value) if value is not None else zero

        return {
            "messageType": message_type,
            "runnerRequestId": self.request_id,
            "repositoryName": self.repository_name,
            "ownerName": self.owner_name,
            "jobId": self.job_id,
            "jobWorkflowRef": self.workflow_ref,
            "jobDisplayName": self.display_name,
            "workflowRunId": self.workflow_run_id,
            "eventName": self.event_name,
            "requestLabels": list(self.labels),
            "queueTime": ts(self.queue_time),
            "scaleSetAssignTime": ts(self.scale_set_assign_time),
            "runnerAssignTime": ts(self.runner_assign_time),
            "finishTime": ts(self.finish_time),
            **extra,
        }

    def summary(self) -> dict[str, Any]:
        """The control API's view of a job."""
        return {
            "requestId": self.request_id,
            "jobId": self.job_id,
            "state": self.state,
            "scaleSetId": self.scale_set_id,
            "runnerId": self.runner_id,
            "runnerName": self.runner_name,
            "result": self.result,
            "labels": self.labels,
        }


class MessageQueue:
    """Job events waiting to be batched, and batched messages waiting for an ack."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.messages: list[tuple[int, list[dict[str, Any]]]] = []
        self._wake: asyncio.Future[None] | None = None

    def push(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        self.wake()

    def wake(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        self._wake = None

    def waiter(self) -> asyncio.Future[None]:
        if self._wake is None:
            self._wake = asyncio.get_running_loop().create_future()
        return self._wake

    def ack_through(self, message_id: int) -> None:
        self.messages = [(mid, body) for mid, body in self.messages if mid > message_id]

    def delete(self, message_id: int) -> bool:
        before = len(self.messages)
        self.messages = [(mid, body) for mid, body in self.messages if mid != message_id]
        return len(self.messages) != before

    def next(self, new_id: Callable[[], int]) -> tuple[int, list[dict[str, Any]]] | None:
        if not self.messages and self.events:
            batch, self.events = self.events[:MAX_JOBS_PER_MESSAGE], self.events[MAX_JOBS_PER_MESSAGE:]
            self.messages.append((new_id(), batch))
        return self.messages[0] if self.messages else None


@dataclass(kw_only=True)
class FakeScaleSet:
    """A runner scale set, its runner setting and its message queue."""

    id: int
    name: str
    runner_group_id: int
    runner_group_name: str
    labels: list[dict[str, str]]
    disable_update: bool
    created_on: datetime = field(default_factory=now)
    capacity: int = UNLIMITED
    queue: MessageQueue = field(default_factory=MessageQueue)

    def label_names(self) -> set[str]:
        return {label["name"].lower() for label in self.labels}


@dataclass(kw_only=True)
class FakeSession:
    """The one message session of a scale set and its queue token."""

    session_id: str
    scale_set_id: int
    owner_name: str
    queue_token: str = field(repr=False)
    token_expires_at: float
