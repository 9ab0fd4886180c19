"""The message loop: one message session, a long poll, ack-then-handle, scale on every answer.

The session itself (open, refresh on a refused queue token, delete) belongs to
the Actions client's `MessageSessionClient`; `Listener` runs the loop over it::

    initial statistics ──> handle_desired_runner_count
    loop:
        get_message(lastMessageId, maxRunners)       long poll (~50 s); cancellable
        ├── 202, no message ──> handle_desired_runner_count(latest statistics)
        └── message         ──> (runs to completion even when cancelled)
              record statistics; delete_message (ack) FIRST;
              acquire_jobs(JobAvailable ids); each JobStarted; each JobCompleted;
              handle_desired_runner_count(message statistics)

Any error ends the loop; the caller then deletes the session and the process
exits 1. An acked message whose handling failed is not redelivered. What the
session client recovers from itself (a forgotten session, a broken poll answer:
`arc_controllers.actions.SessionRecovery`) never reaches the loop, and
``lastMessageId`` stays the loop's, so a replaced session delivers only later
messages.

Ports: github.com/actions/scaleset@v0.4.0 listener/listener.go
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Sequence
from typing import Any, Protocol, TypeVar

import structlog

from arc_controllers.listener.metrics import DISCARD, JobCompletedInfo, MetricsRecorder, StatisticsInfo
from arc_controllers.listener.scaler import MAX_PATCH_SEQ, JobStartedInfo

__all__ = [
    "JobAvailableInfo",
    "JobCompletedEvent",
    "JobStartedEvent",
    "Listener",
    "ListenerError",
    "MessageClient",
    "MessageInfo",
    "ScaleHandler",
    "SessionInfo",
    "run_to_completion",
]

log = structlog.get_logger(__name__).bind(component="listener")

_T = TypeVar("_T")
_NIL_SESSION_ID = uuid.UUID(int=0)


class ListenerError(Exception):
    """The loop cannot go on; the message says which step failed and why.

    Python only: Go wraps plain errors with ``fmt.Errorf``.
    """


class SessionInfo(Protocol):
    """A message session as the service returns it. Ports: scaleset.RunnerScaleSetSession"""

    @property
    def session_id(self) -> uuid.UUID: ...
    @property
    def message_queue_url(self) -> str: ...
    @property
    def message_queue_access_token(self) -> str: ...
    @property
    def statistics(self) -> StatisticsInfo | None: ...


class JobAvailableInfo(Protocol):
    """Ports: scaleset.JobAvailable (the part the loop reads)"""

    @property
    def runner_request_id(self) -> int: ...


class JobStartedEvent(JobStartedInfo, Protocol):
    """A JobStarted as both the scaler and the metrics read it. Ports: scaleset.JobStarted"""

    @property
    def job_display_name(self) -> str: ...


class JobCompletedEvent(JobCompletedInfo, Protocol):
    """Ports: scaleset.JobCompleted"""

    @property
    def runner_name(self) -> str: ...


class MessageInfo(Protocol):
    """One decoded message of the queue. Ports: scaleset.RunnerScaleSetMessage"""

    @property
    def message_id(self) -> int: ...
    @property
    def statistics(self) -> StatisticsInfo | None: ...
    @property
    def job_available_messages(self) -> Sequence[JobAvailableInfo]: ...
    @property
    def job_started_messages(self) -> Sequence[JobStartedEvent]: ...
    @property
    def job_completed_messages(self) -> Sequence[JobCompletedEvent]: ...


class MessageClient(Protocol):
    """What the loop needs from a message session.

    `arc_controllers.actions.MessageSessionClient` is one: it refreshes the
    session once and retries once when the queue token is refused (401).

    Ports: listener.Client
    """

    @property
    def session(self) -> SessionInfo: ...

    async def get_message(self, last_message_id: int, max_capacity: int, /) -> MessageInfo | None: ...

    async def delete_message(self, message_id: int, /) -> None: ...

    async def acquire_jobs(self, request_ids: list[int], /) -> Sequence[int]: ...


class ScaleHandler(Protocol):
    """What the loop hands messages to; `Scaler` is one. Ports: listener.Scaler"""

    async def handle_job_started(self, job: JobStartedEvent, /) -> None: ...

    async def handle_job_completed(self, job: JobCompletedEvent, /) -> None: ...

    async def handle_desired_runner_count(self, count: int, /) -> int: ...


class Listener:
    """Polls the session's queue and turns every answer into scaler calls.

    Ports: listener.Listener
    """

    def __init__(
        self,
        client: MessageClient,
        *,
        scale_set_id: int,
        max_runners: int,
        recorder: MetricsRecorder = DISCARD,
    ) -> None:
        """Args:
        client: The message session.
        scale_set_id: Must not be 0.
        max_runners: Sent as ``X-ScaleSetMaxCapacity``; 0..2147483647.
        recorder: Metric hooks; nothing is recorded by default.

        Raises:
            ValueError: ``scale_set_id`` is 0 or ``max_runners`` is out of range.

        Ports: listener.New and Config.Validate
        """
        if scale_set_id == 0:
            raise ValueError("invalid config: scaleSetID is required")
        if not 0 <= max_runners <= MAX_PATCH_SEQ:
            raise ValueError("invalid config: maxRunners must be between 0 and MaxInt32")
        self._client = client
        self._scale_set_id = scale_set_id
        self.max_runners = max_runners
        """The capacity sent with each poll; may be changed while running."""
        self._recorder = recorder
        self._latest: StatisticsInfo | None = None

    async def run(self, scaler: ScaleHandler) -> None:
        """Scale once from the session's statistics, then poll and handle until cancelled or failed.

        A message being handled when cancellation arrives is handled to the end,
        Kubernetes patches included; then `asyncio.CancelledError` propagates.

        Raises:
            ListenerError: a poll, ack, acquire or handler failed (the step is named).
            asyncio.CancelledError: the process is stopping.

        Ports: Listener.Run
        """
        session = self._client.session
        if session.session_id == _NIL_SESSION_ID:
            raise ListenerError("initial session is nil")
        if session.statistics is None:
            raise ListenerError("session statistics is nil")
        self._handle_statistics(session.statistics)
        log.info("handling initial session statistics", total_assigned_jobs=session.statistics.total_assigned_jobs)
        try:
            desired = await scaler.handle_desired_runner_count(session.statistics.total_assigned_jobs)
        except Exception as err:
            raise ListenerError(f"handling initial message failed: {err}") from err
        self._recorder.record_desired_runners(desired)

        last_message_id = 0
        while True:
            log.debug("getting next message", last_message_id=last_message_id)
            try:
                message = await self._client.get_message(last_message_id, self.max_runners)
            except Exception as err:
                raise ListenerError(f"failed to get message: {err}") from err
            if message is None:
                assert self._latest is not None
                try:
                    await scaler.handle_desired_runner_count(self._latest.total_assigned_jobs)
                except Exception as err:
                    raise ListenerError(f"handling nil message failed: {err}") from err
                continue
            last_message_id = message.message_id
            with structlog.contextvars.bound_contextvars(
                scale_set_id=self._scale_set_id,
                session_id=str(self._client.session.session_id),  # the session may have been replaced
                message_id=message.message_id,
            ):
                await run_to_completion(self._handle_message(scaler, message), name="listener-handle-message")

    async def _handle_message(self, scaler: ScaleHandler, message: MessageInfo) -> None:
        """Ack first, then acquire, job starts, job completions, and the desired count.

        Ports: Listener.handleMessage
        """
        if message.statistics is None:
            # Differs: Go dereferences the missing statistics and crashes.
            raise ListenerError(f"failed to handle message: message {message.message_id} has no statistics")
        self._handle_statistics(message.statistics)
        try:
            await self._client.delete_message(message.message_id)
        except Exception as err:
            raise ListenerError(f"failed to handle message: failed to delete message: {err}") from err
        if message.job_available_messages:
            await self._acquire_available_jobs(message.job_available_messages)
        for started in message.job_started_messages:
            self._recorder.record_job_started(started)
            try:
                await scaler.handle_job_started(started)
            except Exception as err:
                raise ListenerError(f"failed to handle message: failed to handle job started: {err}") from err
        for completed in message.job_completed_messages:
            self._recorder.record_job_completed(completed)
            try:
                await scaler.handle_job_completed(completed)
            except Exception as err:
                raise ListenerError(f"failed to handle message: failed to handle job completed: {err}") from err
        try:
            desired = await scaler.handle_desired_runner_count(message.statistics.total_assigned_jobs)
        except Exception as err:
            raise ListenerError(f"failed to handle message: failed to handle desired runner count: {err}") from err
        self._recorder.record_desired_runners(desired)

    async def _acquire_available_jobs(self, available: Sequence[JobAvailableInfo]) -> None:
        """Acquire every available request in one call; the result is only logged.

        Ports: Listener.acquireAvailableJobs
        """
        ids = [job.runner_request_id for job in available]
        log.info("acquiring jobs", count=len(ids), request_ids=ids)
        try:
            acquired = await self._client.acquire_jobs(ids)
        except Exception as err:
            raise ListenerError(f"failed to handle message: failed to acquire available jobs: {err}") from err
        log.info("jobs acquired", count=len(acquired))

    def _handle_statistics(self, statistics: StatisticsInfo) -> None:
        """Ports: Listener.handleStatistics"""
        self._latest = statistics
        self._recorder.record_statistics(statistics)


async def run_to_completion(coro: Coroutine[Any, Any, _T], *, name: str) -> _T:
    """Await ``coro`` in its own task that cancellation of the caller does not stop.

    If the caller is cancelled meanwhile, the task still finishes (its result or
    error is kept) and `asyncio.CancelledError` is raised after it.

    Python only: Go's ``context.WithoutCancel`` around handleMessage.
    """
    task = asyncio.create_task(coro, name=name)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
