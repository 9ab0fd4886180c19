"""Errors of the Actions service client, one class per case a caller branches on.

Hierarchy::

    ActionsError                     status, activity_id, github_request_id (never a token)
    ├── ActionsNotFoundError             404 with no more specific exception
    ├── RunnerNotFoundError              typeName contains AgentNotFoundException
    ├── RunnerExistsError                typeName contains AgentExistsException
    ├── JobStillRunningError             typeName contains JobStillRunningException
    ├── SessionConflictError             409 / RunnerScaleSetSessionConflictException
    ├── MessageQueueTokenExpiredError    401 on get message, delete message, acquire jobs
    ├── ActionsExceptionError            any other ``{"typeName", "message"}`` body
    └── RetriesExhaustedError            retryable failures until the retry budget ran out

`error_from_response` is the only place that maps an answer to a class.
Messages follow Go's text: ``request <METHOD> <URL> failed(status="…",
activity_id="…"): <cause>: <detail>``. Every message is passed through the
client's redaction, so no token, JIT config or private key appears in one.
Errors of aiohttp never leave the client: they are chained as ``__cause__``.

Ports: github.com/actions/scaleset errors.go
"""

from __future__ import annotations

import json
from collections.abc import Callable

from arc_controllers.actions.transport import HttpRequest, HttpResponse

__all__ = [
    "ActionsError",
    "ActionsExceptionError",
    "ActionsNotFoundError",
    "JobStillRunningError",
    "MessageQueueTokenExpiredError",
    "RetriesExhaustedError",
    "RunnerExistsError",
    "RunnerNotFoundError",
    "SessionConflictError",
    "error_from_response",
    "request_failed",
]

HEADER_ACTIVITY_ID = "ActivityId"
HEADER_GITHUB_REQUEST_ID = "X-GitHub-Request-Id"


class ActionsError(Exception):
    """A call to GitHub or the Actions service failed.

    Ports: the error built by scaleset newRequestResponseError
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        activity_id: str = "",
        github_request_id: str = "",
        type_name: str = "",
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.status = status
        """HTTP status of the answer; ``None`` when there was none (transport error)."""
        self.activity_id = activity_id
        """The ``ActivityId`` header of an Actions answer, ``""`` if absent."""
        self.github_request_id = github_request_id
        """The ``X-GitHub-Request-Id`` header of a GitHub answer, ``""`` if absent."""
        self.type_name = type_name
        """The ``typeName`` of an Actions exception body, ``""`` if none."""
        self.attempts = attempts
        """How many times the request was sent before this error."""


class ActionsNotFoundError(ActionsError):
    """The service answered 404 (scale set, runner or session gone).

    Ports: scaleset.NotFoundError
    """


class RunnerNotFoundError(ActionsError):
    """No runner with that id: ``AgentNotFoundException``.

    Ports: scaleset.RunnerNotFoundError
    """


class RunnerExistsError(ActionsError):
    """A runner with that name is already registered: ``AgentExistsException``.

    Ports: scaleset.RunnerExistsError
    """


class JobStillRunningError(ActionsError):
    """The runner is executing a job and cannot be removed: ``JobStillRunningException``.

    Ports: scaleset.JobStillRunningError
    """


class SessionConflictError(ActionsError):
    """The scale set already has a live message session (409).

    Ports: RunnerScaleSetSessionConflictException (the 409 of scaleset's CreateMessageSession)
    Differs: scaleset v0.4.0 returns a generic error; the class only names it.
    """


class MessageQueueTokenExpiredError(ActionsError):
    """The message-queue token was refused (401 on a message or acquire call).

    Ports: scaleset.MessageQueueTokenExpiredError
    """


class ActionsExceptionError(ActionsError):
    """Any other Actions exception body ``{"typeName": …, "message": …}``.

    Ports: scaleset actionsExceptionError
    """


class RetriesExhaustedError(ActionsError):
    """Every attempt failed with a retryable status or transport error.

    Ports: go-retryablehttp's "giving up after N attempt(s)" error
    """


Redact = Callable[[str], str]


def _head(request: HttpRequest, response: HttpResponse | None) -> str:
    """Return ``request M U failed`` plus the status and ids of the answer, Go's error prefix.

    Python only: a helper of the port.
    """
    head = f"request {request.method} {request.url} failed"
    if response is None:
        return head
    parts = [f'status="{response.status_line}"']
    if activity := response.header(HEADER_ACTIVITY_ID):
        parts.append(f'activity_id="{activity}"')
    if github_id := response.header(HEADER_GITHUB_REQUEST_ID):
        parts.append(f'github_request_id="{github_id}"')
    return f"{head}({', '.join(parts)})"


def request_failed(
    request: HttpRequest,
    cause: str,
    *,
    redact: Redact,
    cls: type[ActionsError] = ActionsError,
    attempts: int = 1,
) -> ActionsError:
    """Build the error for a request that got no usable answer (``request M U failed: cause``).

    Ports: scaleset newRequestResponseError with a nil response
    """
    return cls(redact(f"{_head(request, None)}: {cause}"), attempts=attempts)


def error_from_response(
    request: HttpRequest,
    response: HttpResponse,
    cause: str,
    *,
    redact: Redact,
    token_expired: bool = False,
    attempts: int = 1,
) -> ActionsError:
    """Build the typed error for a non-success answer.

    Args:
        request: What was sent (its URL appears in the message).
        response: The answer; its body gives the detail.
        cause: Why it is an error, e.g. ``"unexpected status code: 500"``.
        redact: Scrubs secrets from the final message.
        token_expired: The answer is a 401 on a message-queue call: the
            error is `MessageQueueTokenExpiredError` with the raw body as detail.
        attempts: Attempts made, kept on the error.

    Returns:
        The most specific class: an exception ``typeName`` decides first, then
        409 on a session call and 404; otherwise `ActionsError`.

    Ports: scaleset newRequestResponseError
    """
    head = _head(request, response)

    def make(cls: type[ActionsError], text: str, type_name: str = "") -> ActionsError:
        """Make.

        Python only: a helper of the port.
        """
        return cls(
            redact(f"{head}: {text}"),
            status=response.status,
            activity_id=response.header(HEADER_ACTIVITY_ID),
            github_request_id=response.header(HEADER_GITHUB_REQUEST_ID),
            type_name=type_name,
            attempts=attempts,
        )

    by_status: type[ActionsError] = ActionsNotFoundError if response.status == 404 else ActionsError
    body = response.body.decode("utf-8", "replace")
    if token_expired:
        return make(MessageQueueTokenExpiredError, f"message queue token expired: {body or 'unknown error'}")
    if not body:
        return make(by_status, f"{cause}: unknown error")
    if "text/plain" in response.header("Content-Type"):
        return make(by_status, f"{cause}: {body}")
    try:
        exception = json.loads(body)
    except ValueError:
        exception = None
    if not isinstance(exception, dict):
        return make(by_status, f"{cause}: failed to unmarshal error response body: {json.dumps(body)}")
    type_name = str(exception.get("typeName") or "")
    message = str(exception.get("message") or "")
    cls, sentinel = _classify(type_name, response.status, request)
    if sentinel:
        return make(cls, f"{sentinel}: {message}", type_name)
    if cls is ActionsExceptionError and response.status == 404:
        cls = ActionsNotFoundError
    return make(cls, f"{cause}: {type_name}: {message}", type_name)


def _classify(type_name: str, status: int, request: HttpRequest) -> tuple[type[ActionsError], str]:
    """Ports: the typeName switch of scaleset newRequestResponseError"""
    if "AgentExistsException" in type_name:
        return RunnerExistsError, "runner exists"
    if "AgentNotFoundException" in type_name:
        return RunnerNotFoundError, "runner not found"
    if "JobStillRunningException" in type_name:
        return JobStillRunningError, "job still running"
    if "SessionConflictException" in type_name or (status == 409 and "/sessions" in request.url):
        return SessionConflictError, ""
    return ActionsExceptionError, ""
