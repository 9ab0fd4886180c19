"""The message session client over a MockTransport: create, long poll, ack, acquire, refresh, close."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from arc_controllers.actions import (
    HEADER_SCALE_SET_MAX_CAPACITY,
    ActionsError,
    HttpRequest,
    HttpResponse,
    MessageQueueTokenExpiredError,
)
from arc_controllers.actions.types import parse_runner_scale_set_message

from .actions_helpers import json_response, mock_client, with_auth

QUEUE_URL = "https://pipelines.example/queue/messages?sessionId=abc"


def session_body(token: str = "queue-token-1") -> dict[str, object]:
    return {
        "sessionId": "6f1c2d4e-0000-4000-8000-000000000001",
        "ownerName": "host",
        "runnerScaleSet": {"id": 1, "name": "ScaleSet"},
        "messageQueueUrl": QUEUE_URL,
        "messageQueueAccessToken": token,
        "statistics": {"totalAssignedJobs": 0},
    }


class Queue:
    """Answers session calls and queue calls from scripted statuses."""

    def __init__(self, *queue_answers: HttpResponse) -> None:
        self.answers: Iterator[HttpResponse] = iter(queue_answers)
        self.tokens = iter(["queue-token-1", "queue-token-2", "queue-token-3"])

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        if "/sessions" in request.url:
            if request.method == "DELETE":
                return HttpResponse(status=204)
            return json_response(200, session_body(next(self.tokens)))
        return next(self.answers)


# Upstream: session_client_test.go TestCreateMessageSession/"CreateMessageSession unmarshals correctly"
async def test_create_session_sends_the_zero_uuid_and_owner() -> None:
    """The create body is the zero session id and the owner; the answer becomes the session."""
    client, transport = mock_client(with_auth(Queue()))
    session = await client.message_session_client(1, "host")
    create = transport.requests[-1]
    assert create.method == "POST"
    assert create.url == (
        "https://pipelines.example/tenant/123/_apis/runtime/runnerscalesets/1/sessions?api-version=6.0-preview"
    )
    assert json.loads(create.body or b"") == {"sessionId": "00000000-0000-0000-0000-000000000000", "ownerName": "host"}
    assert session.session.message_queue_url == QUEUE_URL
    assert str(session.session.session_id) == "6f1c2d4e-0000-4000-8000-000000000001"


# Upstream: session_client_test.go TestGetMessage/"GetMessage sets the last message id if not 0"
async def test_get_message_long_poll_request() -> None:
    """Queue URL as given (no api-version), queue token, capacity header; lastMessageId only when > 0."""
    client, transport = mock_client(with_auth(Queue(HttpResponse(status=202), HttpResponse(status=202))))
    session = await client.message_session_client(1, "host")
    assert await session.get_message(0, 10) is None
    assert await session.get_message(12, 3) is None
    first, second = transport.requests[-2:]
    assert first.url == QUEUE_URL
    assert second.url == "https://pipelines.example/queue/messages?lastMessageId=12&sessionId=abc"
    assert first.header("Authorization") == "Bearer queue-token-1"
    assert first.header("Accept") == "application/json; api-version=6.0-preview"
    assert (first.header(HEADER_SCALE_SET_MAX_CAPACITY), second.header(HEADER_SCALE_SET_MAX_CAPACITY)) == ("10", "3")


# Upstream: session_client_test.go TestGetMessage/"Get Runner Scale Set Message"
async def test_get_message_decodes_the_batched_body() -> None:
    """The body string holds the job messages; each lands in its list."""
    jobs = [
        {"messageType": "JobAvailable", "runnerRequestId": 101, "acquireJobUrl": "u"},
        {"messageType": "SomethingNew", "runnerRequestId": 1},
        {"messageType": "JobStarted", "runnerRequestId": 101, "runnerId": 42, "runnerName": "r"},
    ]
    wire = {"messageId": 7, "messageType": "RunnerScaleSetJobMessages", "body": json.dumps(jobs), "statistics": {}}
    client, _ = mock_client(with_auth(Queue(json_response(200, wire))))
    session = await client.message_session_client(1, "host")
    message = await session.get_message(0, 10)
    assert message is not None
    assert message.message_id == 7
    assert [m.runner_request_id for m in message.job_available_messages] == [101]
    assert [(m.runner_id, m.runner_name) for m in message.job_started_messages] == [(42, "r")]


# Upstream: session_client_test.go TestGetMessage/"Message token refreshed"
async def test_401_refreshes_the_session_and_retries_once() -> None:
    """A refused queue token: PATCH the session, retry with the new token."""
    client, transport = mock_client(with_auth(Queue(HttpResponse(status=401), HttpResponse(status=202))))
    session = await client.message_session_client(1, "host")
    assert await session.get_message(0, 1) is None
    refused, refresh, retried = transport.requests[-3:]
    assert refused.header("Authorization") == "Bearer queue-token-1"
    assert (refresh.method, refresh.url.split("?")[0]) == (
        "PATCH",
        "https://pipelines.example/tenant/123/_apis/runtime/runnerscalesets/1/sessions/6f1c2d4e-0000-4000-8000-000000000001",
    )
    assert refresh.body is None
    assert retried.header("Authorization") == "Bearer queue-token-2"
    assert session.refreshes == 1


# Upstream: session_client_test.go TestGetMessage/"Message token expired"
async def test_second_401_is_message_queue_token_expired() -> None:
    """Refused again after the refresh: MessageQueueTokenExpiredError with the raw body."""
    client, _ = mock_client(with_auth(Queue(HttpResponse(status=401), HttpResponse(status=401, body=b"expired!"))))
    session = await client.message_session_client(1, "host")
    with pytest.raises(MessageQueueTokenExpiredError, match="message queue token expired: expired!"):
        await session.get_message(0, 1)


# Upstream: session_client_test.go TestDeleteMessage/"Delete existing message"
async def test_delete_message_appends_the_id_to_the_queue_path() -> None:
    """DELETE <queue path>/<id>, query kept, JSON content type, queue token."""
    client, transport = mock_client(with_auth(Queue(HttpResponse(status=204))))
    session = await client.message_session_client(1, "host")
    await session.delete_message(5)
    delete = transport.requests[-1]
    assert (delete.method, delete.url) == ("DELETE", "https://pipelines.example/queue/messages/5?sessionId=abc")
    assert delete.header("Content-Type") == "application/json"
    assert delete.header("Authorization") == "Bearer queue-token-1"


# Upstream: session_client_test.go TestAcquireJobs/"Acquire jobs successfully"
async def test_acquire_jobs_uses_the_actions_url_with_the_queue_token() -> None:
    """POST acquirejobs with api-version, a JSON array body, queue-token auth."""
    client, transport = mock_client(with_auth(Queue(json_response(200, {"count": 2, "value": [101, 102]}))))
    session = await client.message_session_client(1, "host")
    assert await session.acquire_jobs([101, 102]) == [101, 102]
    acquire = transport.requests[-1]
    assert acquire.url == (
        "https://pipelines.example/tenant/123/_apis/runtime/runnerscalesets/1/acquirejobs?api-version=6.0-preview"
    )
    assert acquire.body == b"[101,102]"
    assert acquire.header("Authorization") == "Bearer queue-token-1"


# Upstream: session_client_test.go TestGetMessage/"Default retries on server error"
async def test_get_message_retries_server_errors() -> None:
    """Queue calls use the same retry policy: 5 attempts on 5xx."""
    sleeps: list[float] = []
    client, _ = mock_client(with_auth(Queue(*[HttpResponse(status=503)] * 5)), sleeps=sleeps)
    session = await client.message_session_client(1, "host")
    with pytest.raises(ActionsError, match="giving up after 5 attempt"):
        await session.get_message(0, 1)
    assert sleeps == [1.0, 2.0, 4.0, 8.0]


async def test_close_deletes_the_session_once() -> None:
    """Close sends DELETE …/sessions/{id} (204); a second close does nothing."""
    client, transport = mock_client(with_auth(Queue()))
    session = await client.message_session_client(1, "host")
    await session.close()
    await session.close()
    deletes = [r for r in transport.requests if r.method == "DELETE"]
    assert len(deletes) == 1
    assert "/sessions/6f1c2d4e-0000-4000-8000-000000000001?" in deletes[0].url


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"", "Expecting value"),
        (b'{"messageId":1,"messageType":"Other","body":"[]"}', "unsupported message type: Other"),
        (b'{"messageId":1,"messageType":"RunnerScaleSetJobMessages","body":"{}"}', "not an array"),
    ],
)
def test_malformed_messages_are_refused(body: bytes, problem: str) -> None:
    """Empty bodies, other message types and non-array bodies are errors."""
    with pytest.raises(ValueError, match=problem):
        parse_runner_scale_set_message(body)


def test_empty_message_body_is_no_jobs() -> None:
    """A message whose body string is empty holds no job messages."""
    message = parse_runner_scale_set_message(b'{"messageId":3,"messageType":"RunnerScaleSetJobMessages","body":""}')
    assert (message.message_id, message.statistics, message.job_started_messages) == (3, None, [])
