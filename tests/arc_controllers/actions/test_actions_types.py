"""The wire types decode what Go's decoder accepts and refuse the rest with one line naming the field.

Python only: the types are dataclasses with their own decoder (pydantic stays out of the listener,
issue 20); these pin what the pydantic models did before: camelCase names, wrong JSON types refused,
unknown keys ignored, secrets kept out of ``repr``.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from arc_controllers.actions import ActionsError
from arc_controllers.actions.transport import HttpRequest, HttpResponse
from arc_controllers.actions.types import (
    ZERO_TIME,
    JobCompleted,
    Label,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerConfig,
    RunnerScaleSetSession,
    RunnerScaleSetStatistic,
    WireError,
    decode_wire,
    parse_runner_scale_set_message,
)

from .actions_helpers import json_response, mock_client, with_auth

SESSION = {
    "sessionId": "6f1c2d4e-0000-4000-8000-000000000001",
    "ownerName": "host",
    "runnerScaleSet": {
        "id": 3,
        "name": "set",
        "labels": [{"name": "set", "type": "System"}],
        "RunnerSetting": {"disableUpdate": True},
        "createdOn": "2026-01-02T03:04:05.1234567Z",
        "somethingNew": {"ignored": True},
    },
    "messageQueueUrl": "https://queue.example/",
    "messageQueueAccessToken": "queue-secret",
    "statistics": {"totalAssignedJobs": 2.0, "totalIdleRunners": None},
}


def test_a_session_decodes_by_wire_name_and_ignores_unknown_keys() -> None:
    """Nested types, the capital ``RunnerSetting``, .NET's 7-digit fractions, an integral float, null as default."""
    session = decode_wire(RunnerScaleSetSession, json.dumps(SESSION))
    assert session.session_id == uuid.UUID("6f1c2d4e-0000-4000-8000-000000000001")
    assert session.runner_scale_set is not None
    assert session.runner_scale_set.labels == [Label(name="set", type="System")]
    assert session.runner_scale_set.runner_setting.disable_update
    assert session.runner_scale_set.created_on == datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert session.statistics == RunnerScaleSetStatistic(total_assigned_jobs=2)
    assert session.message_queue_access_token == "queue-secret"
    assert "queue-secret" not in repr(session)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"id": "3"}, "RunnerScaleSet.id: expected an integer, got string"),
        ({"id": 1.5}, "RunnerScaleSet.id: expected an integer, got number"),
        ({"labels": {"name": "x"}}, "RunnerScaleSet.labels: expected an array, got object"),
        ({"labels": [{"type": "System"}]}, r"RunnerScaleSet.labels\[0\]: missing name"),
        ({"RunnerSetting": {"disableUpdate": "yes"}}, "RunnerSetting.disableUpdate: expected a boolean"),
        ({"createdOn": "yesterday"}, "RunnerScaleSet.createdOn: expected an RFC 3339 timestamp"),
        ([], "RunnerScaleSet: expected an object, got array"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_line_naming_the_field(body: object, problem: str) -> None:
    with pytest.raises(WireError, match=problem):
        decode_wire(RunnerScaleSet, json.dumps(body))


def test_a_timestamp_without_an_offset_is_utc() -> None:
    """Go requires the offset; taking UTC keeps every decoded time aware (the listener subtracts them)."""
    scale_set = decode_wire(RunnerScaleSet, b'{"createdOn": "2026-01-02T03:04:05"}')
    assert scale_set.created_on == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert decode_wire(RunnerScaleSet, b"{}").created_on == ZERO_TIME


def test_to_wire_writes_every_field_by_wire_name_and_go_times() -> None:
    completed = JobCompleted(runner_request_id=7, result="succeeded", finish_time=datetime(2026, 1, 2, tzinfo=UTC))
    wire = completed.to_wire()
    assert wire["messageType"] == "JobCompleted"
    assert (wire["runnerRequestId"], wire["result"], wire["requestLabels"]) == (7, "succeeded", None)
    assert (wire["finishTime"], wire["queueTime"]) == ("2026-01-02T00:00:00Z", "0001-01-01T00:00:00Z")
    assert JobCompleted.from_wire(wire) == completed
    jit = RunnerScaleSetJitRunnerConfig(encoded_jit_config="jit-secret")
    assert jit.to_wire() == {"runner": None, "encodedJITConfig": "jit-secret"}
    assert "jit-secret" not in repr(jit)


def test_a_malformed_job_message_is_refused() -> None:
    body = json.dumps([{"messageType": "JobStarted", "runnerRequestId": "seven"}])
    wire = {"messageId": 1, "messageType": "RunnerScaleSetJobMessages", "body": body}
    with pytest.raises(ValueError, match=r"JobStarted\.runnerRequestId: expected an integer"):
        parse_runner_scale_set_message(json.dumps(wire).encode())


async def test_the_client_turns_a_bad_answer_into_one_redacted_actions_error() -> None:
    """The decode error names the call, the field and the JSON type; no value of the answer reaches it."""

    async def answer(request: HttpRequest) -> HttpResponse:
        return json_response(200, {"id": "ghp_not_a_number", "name": "runner"})

    client, _ = mock_client(with_auth(answer))
    with pytest.raises(ActionsError) as caught:
        await client.get_runner(5)
    message = str(caught.value)
    assert "failed to decode runner reference: RunnerReference.id: expected an integer, got string" in message
    assert "ghp_not_a_number" not in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"messageId": [1]}, "RunnerScaleSetMessage.messageId: expected an integer, got array"),
        ({"messageId": "ghp_SECRET"}, "RunnerScaleSetMessage.messageId: expected an integer, got string"),
        ({"messageId": 1.7}, "RunnerScaleSetMessage.messageId: expected an integer, got number"),
        ({"body": 5}, "RunnerScaleSetMessage.body: expected a string, got number"),
        ({"body": {}}, "RunnerScaleSetMessage.body: expected a string, got object"),
        ({"body": "[" * 100_000}, "RunnerScaleSetMessage.body: JSON nested too deeply"),
    ],
)
def test_a_malformed_message_is_a_value_error_that_names_the_field_never_the_value(
    doc: dict[str, object], expected: str
) -> None:
    """Every malformed get-message answer is a ValueError (the session's bad-message retry), never a TypeError."""
    body = json.dumps({"messageType": "RunnerScaleSetJobMessages", **doc}).encode()
    with pytest.raises(ValueError) as caught:
        parse_runner_scale_set_message(body)
    assert str(caught.value) == expected
    assert "ghp_" not in str(caught.value)


def test_an_unsupported_message_type_is_named_only_when_it_looks_like_one() -> None:
    with pytest.raises(ValueError, match=r"^unsupported message type: Other$"):
        parse_runner_scale_set_message(b'{"messageType":"Other"}')
    with pytest.raises(ValueError, match=r"^unsupported message type: \(string\)$"):
        parse_runner_scale_set_message(b'{"messageType":"ghp_SECRET"}')


def test_a_document_nested_past_the_limit_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="JSON nested too deeply"):
        parse_runner_scale_set_message(b"[" * 100_000)
    with pytest.raises(ValueError, match="JSON nested too deeply"):
        decode_wire(RunnerReference, b"[" * 100_000)
