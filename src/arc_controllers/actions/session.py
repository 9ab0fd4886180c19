"""The message session of one scale set: long-poll messages, acknowledge them, acquire jobs.

A session is opened with ``POST …/sessions`` (409 when the scale set already
has one) and closed with ``DELETE``. Messages come from the session's
``messageQueueUrl`` with the queue token; ``acquirejobs`` also uses the queue
token. When the queue token is refused (401) the session is refreshed
(``PATCH``) once and the call retried once.

With a `SessionRecovery` (the listener passes one) three failures upstream
treats as fatal are recovered in place: a 409 on create is retried every
``conflict_interval`` seconds; a refresh answered 404 (the service forgot the
session) and a poll answered 200 with an empty or unparsable body replace the
session with a new one (the old one deleted first, best effort). The caller's
``lastMessageId`` is untouched, so no message is handled twice.

Ports: github.com/actions/scaleset session_client.go
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import structlog

from arc_controllers.actions._retry import RetryPolicy
from arc_controllers.actions._urls import with_path_suffix, with_query_value
from arc_controllers.actions.errors import (
    ActionsError,
    ActionsNotFoundError,
    MessageQueueTokenExpiredError,
    SessionConflictError,
    error_from_response,
)
from arc_controllers.actions.redact import SecretSet
from arc_controllers.actions.transport import HttpRequest, HttpResponse
from arc_controllers.actions.types import (
    NIL_SESSION_ID,
    RunnerScaleSetMessage,
    RunnerScaleSetSession,
    parse_runner_scale_set_message,
)

__all__ = ["HEADER_SCALE_SET_MAX_CAPACITY", "MessageSessionClient", "SessionRecovery", "SessionTransport"]

log = structlog.get_logger(__name__)

HEADER_SCALE_SET_MAX_CAPACITY = "X-ScaleSetMaxCapacity"
"""Header carrying the listener's max runners on every long poll."""

_T = TypeVar("_T")
_M = TypeVar("_M")


class SessionTransport(Protocol):
    """**Protocol:** what a session borrows from its `ActionsClient`: requests, retries, errors, redaction.

    Python only: the session module depends on this, not on the client module, so the
    client can import the session without a cycle (Go's session client holds the
    ``*Client`` itself).
    """

    @property
    def secrets(self) -> SecretSet:
        """Every secret seen so far; the session adds its queue token."""
        ...

    @property
    def user_agent(self) -> str:
        """The User-Agent of every request."""
        ...

    async def actions_request(self, method: str, path: str, body: bytes | None = None) -> HttpRequest:
        """An Actions-service request with a fresh admin token."""
        ...

    async def send(self, request: HttpRequest, *, retry: RetryPolicy | None = None) -> tuple[HttpResponse, int]:
        """Send with retries; the answer and the number of attempts."""
        ...

    def error(self, request: HttpRequest, response: HttpResponse, cause: str, attempts: int = 1) -> ActionsError:
        """The typed, redacted error for an unexpected answer."""
        ...

    def decode(self, request: HttpRequest, response: HttpResponse, model: type[_M], what: str) -> _M:
        """The answer decoded as ``model``; raises `ActionsError` when it is not one."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecovery:
    """How a session recovers in place from a conflict, a forgotten session or a broken poll answer.

    Beyond: ARC #3209, #4356, #4285 (actions/scaleset#123): upstream's listener exits on each,
    dropping its message cursor and, after a 409, crash-looping until the old session expires.
    """

    conflict_interval: float = 30.0
    """Seconds between session creates answered 409 (the service still holds an older session)."""

    conflict_retries: int = 10
    """Creates retried after a 409 before `SessionConflictError` is raised."""

    bad_message_backoff: float = 1.0
    """Seconds before the first new session after a 200 poll answer without a message; doubled each time."""

    bad_message_backoff_max: float = 30.0
    """Cap, in seconds, of that doubling wait."""

    bad_message_retries: int = 10
    """Unparsable 200 answers in a row recovered from before the poll's `ActionsError` is raised."""

    def bad_message_delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th unparsable answer in a row (1-based)."""
        return min(self.bad_message_backoff * 2.0 ** (failures - 1), self.bad_message_backoff_max)


class _UnparsableMessageError(ActionsError):
    """Python only: a poll answered 200 with a body that is not a message (empty included)."""


class MessageSessionClient:
    """One live message session and the calls made with its queue token.

    Build it with `ActionsClient.message_session_client`; call `close` when done.

    Ports: scaleset.MessageSessionClient
    """

    def __init__(
        self,
        client: SessionTransport,
        scale_set_id: int,
        owner: str,
        retry: RetryPolicy | None,
        recovery: SessionRecovery | None = None,
    ) -> None:
        self._client = client
        self._scale_set_id = scale_set_id
        self._owner = owner
        self._retry = retry
        self._recovery = recovery
        self._session: RunnerScaleSetSession | None = None
        self._lock = asyncio.Lock()
        self.refreshes = 0
        """How many times the session was refreshed after a refused queue token."""
        self.replacements = 0
        """How many times the session was replaced by a new one (`SessionRecovery`)."""

    @classmethod
    async def open(
        cls,
        client: SessionTransport,
        scale_set_id: int,
        owner: str,
        *,
        retry: RetryPolicy | None = None,
        recovery: SessionRecovery | None = None,
    ) -> MessageSessionClient:
        """Create the session on the service and return its client.

        Args:
            recovery: Recover from conflicts, forgotten sessions and broken poll answers
                in place; ``None`` fails on each, as upstream does.

        Raises:
            SessionConflictError: the scale set already has a live session (after
                ``recovery.conflict_retries`` more tries, when given).
            ActionsError: any other failure.

        Ports: Client.MessageSessionClient with createMessageSession
        """
        session_client = cls(client, scale_set_id, owner, retry, recovery)
        await session_client._create()
        return session_client

    async def _create(self) -> None:
        """Create the session; with a `SessionRecovery`, retry a 409 every ``conflict_interval`` seconds.

        Ports: createMessageSession
        Beyond: ARC #3209: a session left by a killed listener answers 409 until the service drops it.
        """
        body = RunnerScaleSetSession(session_id=NIL_SESSION_ID, owner_name=self._owner).to_wire()
        path = f"/_apis/runtime/runnerscalesets/{self._scale_set_id}/sessions"
        retries = self._recovery.conflict_retries if self._recovery is not None else 0
        for attempt in range(retries + 1):
            try:
                self._session = await self._session_request("POST", path, 200, body)
                break
            except SessionConflictError as err:
                if self._recovery is None or attempt == retries:
                    raise
                log.warning(
                    "message session conflict, will try again",
                    scale_set_id=self._scale_set_id,
                    retry_in=self._recovery.conflict_interval,
                    retries_left=retries - attempt,
                    error=str(err),
                )
                await asyncio.sleep(self._recovery.conflict_interval)
        log.info("created message session", scale_set_id=self._scale_set_id, session_id=str(self.session.session_id))

    async def _replace(self, reason: str) -> None:
        """Delete the session (best effort: the service may have forgotten it) and create a new one.

        Python only: the in-place recovery of `SessionRecovery`.
        Beyond: actions/scaleset#123 (ARC #4356, #4285): the new session keeps the caller's lastMessageId.
        """
        old, self._session = self._session, None
        log.warning("replacing message session", scale_set_id=self._scale_set_id, reason=reason)
        if old is not None:
            try:
                path = f"/_apis/runtime/runnerscalesets/{self._scale_set_id}/sessions/{old.session_id}"
                await self._session_request("DELETE", path, 204)
            except ActionsError as err:
                log.info("could not delete the replaced message session", error=str(err))
        await self._create()
        self.replacements += 1

    @property
    def session(self) -> RunnerScaleSetSession:
        """The current session (its queue token is a secret).

        Ports: MessageSessionClient.Session
        """
        return self._session if self._session is not None else RunnerScaleSetSession()

    def _current(self) -> RunnerScaleSetSession:
        """The live session; raises when closed.

        Python only: a helper of the port.
        """
        if self._session is None:
            raise ActionsError("message session is closed")
        return self._session

    async def _session_request(
        self, method: str, path: str, expected: int, body: object = None
    ) -> RunnerScaleSetSession:
        """Ports: MessageSessionClient.doSessionRequest"""
        client = self._client
        raw = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        request = await client.actions_request(method, path, raw)
        response, attempts = await client.send(request, retry=self._retry)
        if response.status != expected:
            raise client.error(request, response, f"unexpected status code {response.status_line}", attempts)
        if expected == 204:
            return RunnerScaleSetSession()
        session = client.decode(request, response, RunnerScaleSetSession, "response body")
        client.secrets.add(session.message_queue_access_token)
        return session

    async def _refresh(self) -> None:
        """Ports: MessageSessionClient.refreshMessageSession
        Beyond: actions/scaleset#123 (ARC #4356): with a `SessionRecovery`, a 404 creates a new session.
        """
        current = self._current()
        path = f"/_apis/runtime/runnerscalesets/{self._scale_set_id}/sessions/{current.session_id}"
        try:
            self._session = await self._session_request("PATCH", path, 200)
        except ActionsNotFoundError:
            if self._recovery is None:
                raise
            await self._replace("the service no longer knows the session (404 on refresh)")
            return
        self.refreshes += 1
        log.info("refreshed message session", scale_set_id=self._scale_set_id, session_id=str(current.session_id))

    async def _with_refresh(self, call: Callable[[], Awaitable[_T]], what: str) -> _T:
        """Ports: the refresh-once-and-retry-once pattern of GetMessage, DeleteMessage and AcquireJobs"""
        try:
            return await call()
        except MessageQueueTokenExpiredError:
            log.debug("message queue token expired, refreshing session", call=what)
        await self._refresh()
        return await call()

    async def _send_queue(self, request: HttpRequest) -> tuple[HttpResponse, int]:
        """Send a queue request with the session's retry policy.

        Python only: a helper of the port.
        """
        return await self._client.send(request, retry=self._retry)

    def _queue_headers(self, **extra: str) -> dict[str, str]:
        """Headers of a queue call: queue-token auth and User-Agent.

        Python only: a helper of the port.
        """
        return {
            "Authorization": f"Bearer {self._current().message_queue_access_token}",
            "User-Agent": self._client.user_agent,
            **extra,
        }

    async def get_message(self, last_message_id: int, max_capacity: int) -> RunnerScaleSetMessage | None:
        """Long-poll the queue for the next message; ``None`` when the service had none (202).

        Unless deleted, a message is delivered again on a later call.

        Args:
            last_message_id: The last message handled; sent only when > 0,
                so the service treats it and older ones as acknowledged.
            max_capacity: The listener's max runners, sent as `HEADER_SCALE_SET_MAX_CAPACITY`.

        With a `SessionRecovery`, a 200 answer that is not a message (empty included) is
        followed, after a doubling wait, by a new session and a new poll.

        Raises:
            MessageQueueTokenExpiredError: refused again after one refresh.
            ActionsError: any other failure, including an undecodable 200 body
                (``recovery.bad_message_retries`` times in a row, when given).

        Ports: MessageSessionClient.GetMessage
        Beyond: ARC #4285: an empty 200 ends upstream's listener.
        """
        async with self._lock:
            failures = 0
            while True:
                try:
                    return await self._with_refresh(
                        lambda: self._get_message(last_message_id, max_capacity), "get message"
                    )
                except _UnparsableMessageError as err:
                    failures += 1
                    if self._recovery is None or failures > self._recovery.bad_message_retries:
                        raise
                    delay = self._recovery.bad_message_delay(failures)
                    log.warning("message poll answered 200 without a message", retry_in=delay, error=str(err))
                    await asyncio.sleep(delay)
                    await self._replace("a poll answered 200 without a message")

    async def _get_message(self, last_message_id: int, max_capacity: int) -> RunnerScaleSetMessage | None:
        """Ports: MessageSessionClient.getMessage"""
        url = self._current().message_queue_url
        if last_message_id > 0:
            url = with_query_value(url, "lastMessageId", str(last_message_id))
        request = HttpRequest(
            method="GET",
            url=url,
            headers=self._queue_headers(
                **{
                    "Accept": "application/json; api-version=6.0-preview",
                    HEADER_SCALE_SET_MAX_CAPACITY: str(max_capacity),
                }
            ),
        )
        response, attempts = await self._send_queue(request)
        if response.status == 202:
            return None
        if response.status == 200:
            try:
                return parse_runner_scale_set_message(response.body)
            except ValueError as err:
                raise _UnparsableMessageError(
                    self._client.secrets.redact(
                        f'request GET {url} failed(status="{response.status_line}"): '
                        f"failed to parse message response: {err}"
                    ),
                    status=200,
                ) from None
        raise self._error(request, response, attempts)

    def _error(self, request: HttpRequest, response: HttpResponse, attempts: int) -> ActionsError:
        """Python only: MessageQueueTokenExpiredError on 401, the typed error otherwise."""
        return error_from_response(
            request,
            response,
            f"unexpected status code {response.status_line}",
            redact=self._client.secrets.redact,
            token_expired=response.status == 401,
            attempts=attempts,
        )

    async def delete_message(self, message_id: int) -> None:
        """Acknowledge a message (204).

        Raises:
            MessageQueueTokenExpiredError: refused again after one refresh.

        Ports: MessageSessionClient.DeleteMessage
        """
        async with self._lock:
            await self._with_refresh(lambda: self._delete_message(message_id), "delete message")

    async def _delete_message(self, message_id: int) -> None:
        """Ports: MessageSessionClient.deleteMessage"""
        request = HttpRequest(
            method="DELETE",
            url=with_path_suffix(self._current().message_queue_url, str(message_id)),
            headers=self._queue_headers(**{"Content-Type": "application/json"}),
        )
        response, attempts = await self._send_queue(request)
        if response.status != 204:
            raise self._error(request, response, attempts)

    async def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        """Acquire these job requests for the scale set; return the ids acquired.

        Raises:
            MessageQueueTokenExpiredError: refused again after one refresh.

        Ports: MessageSessionClient.AcquireJobs
        """
        async with self._lock:
            return await self._with_refresh(lambda: self._acquire_jobs(request_ids), "acquire jobs")

    async def _acquire_jobs(self, request_ids: list[int]) -> list[int]:
        """Ports: MessageSessionClient.acquireJobs (admin request, queue-token auth)"""
        client = self._client
        body = json.dumps(list(request_ids), separators=(",", ":")).encode()
        built = await client.actions_request(
            "POST", f"/_apis/runtime/runnerscalesets/{self._scale_set_id}/acquirejobs", body
        )
        request = HttpRequest(
            method=built.method,
            url=built.url,
            headers={**built.headers, "Authorization": f"Bearer {self._current().message_queue_access_token}"},
            body=built.body,
        )
        response, attempts = await self._send_queue(request)
        if response.status != 200:
            raise self._error(request, response, attempts)
        return client.decode(request, response, _AcquiredJobs, "acquire jobs response").value

    async def close(self) -> None:
        """Delete the session (204). Safe to call twice.

        Raises:
            ActionsError: the service refused; the session is forgotten anyway.

        Ports: MessageSessionClient.Close
        """
        async with self._lock:
            current = self._session
            if current is None:
                return
            self._session = None
            path = f"/_apis/runtime/runnerscalesets/{self._scale_set_id}/sessions/{current.session_id}"
            await self._session_request("DELETE", path, 204)
            log.info("deleted message session", scale_set_id=self._scale_set_id, session_id=str(current.session_id))

    def __repr__(self) -> str:
        session_id = self._session.session_id if self._session else None
        return f"MessageSessionClient(scale_set_id={self._scale_set_id}, session_id={session_id})"


@dataclass(kw_only=True)
class _AcquiredJobs:
    """Ports: scaleset acquireJobsResponse"""

    count: int = 0
    value: list[int] = field(default_factory=list)
