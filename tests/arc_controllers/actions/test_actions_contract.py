"""Contract: the JSON both sides put on the wire has the spec's shapes.

Spec: arc-listener-and-actions-api.md §1.6, §2.2, §3.1.

Requests come from the client, answers from the fake, both over real HTTP;
a recording transport keeps every pair so each body's keys can be checked
against the spec's example shapes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from arc_controllers.actions import (
    HttpRequest,
    HttpResponse,
    ProxyConfig,
    RetryPolicy,
    RunnerNotFoundError,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerSetting,
    RunnerSetting,
    SystemInfo,
    new_client,
)
from arc_controllers.actions._aiohttp import AiohttpTransport
from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.actions.types import parse_runner_scale_set_message

STATISTICS = {
    "totalAvailableJobs",
    "totalAcquiredJobs",
    "totalAssignedJobs",
    "totalRunningJobs",
    "totalRegisteredRunners",
    "totalBusyRunners",
    "totalIdleRunners",
}
SCALE_SET = {
    "id",
    "name",
    "runnerGroupId",
    "runnerGroupName",
    "labels",
    "RunnerSetting",
    "createdOn",
    "runnerJitConfigUrl",
    "statistics",
}
JOB_BASE = {
    "messageType",
    "runnerRequestId",
    "repositoryName",
    "ownerName",
    "jobId",
    "jobWorkflowRef",
    "jobDisplayName",
    "workflowRunId",
    "eventName",
    "requestLabels",
    "queueTime",
    "scaleSetAssignTime",
    "runnerAssignTime",
    "finishTime",
}
JOB_EXTRA = {
    "JobAvailable": {"acquireJobUrl"},
    "JobAssigned": set(),
    "JobStarted": {"runnerId", "runnerName"},
    "JobCompleted": {"result", "runnerId", "runnerName"},
}
SESSION = {"sessionId", "ownerName", "runnerScaleSet", "messageQueueUrl", "messageQueueAccessToken", "statistics"}

# The spec's §3.1 example wire message, verbatim but for the elided job id.
SPEC_MESSAGE = (
    '{"messageId": 12, "messageType": "RunnerScaleSetJobMessages",'
    ' "statistics": {"totalAvailableJobs":0,"totalAcquiredJobs":1,"totalAssignedJobs":1,"totalRunningJobs":1,'
    '"totalRegisteredRunners":1,"totalBusyRunners":1,"totalIdleRunners":0},'
    ' "body": "[{\\"messageType\\":\\"JobStarted\\",\\"runnerRequestId\\":101,\\"repositoryName\\":\\"repo\\",'
    '\\"ownerName\\":\\"my-org\\",\\"jobId\\":\\"6f1c\\",'
    '\\"jobWorkflowRef\\":\\"my-org/repo/.github/workflows/ci.yml@refs/heads/main\\",\\"jobDisplayName\\":\\"build\\",'
    '\\"workflowRunId\\":555,\\"eventName\\":\\"push\\",\\"requestLabels\\":[\\"set\\"],'
    '\\"queueTime\\":\\"2026-01-02T03:04:05Z\\",\\"scaleSetAssignTime\\":\\"2026-01-02T03:04:06Z\\",'
    '\\"runnerAssignTime\\":\\"2026-01-02T03:04:20Z\\",\\"finishTime\\":\\"0001-01-01T00:00:00Z\\",'
    '\\"runnerId\\":42,\\"runnerName\\":\\"set-abcde-runner-x1y2z\\"}]"}'
)


class Recording:
    """A transport that keeps every request and answer."""

    def __init__(self) -> None:
        self.inner = AiohttpTransport()
        self.exchanges: list[tuple[HttpRequest, HttpResponse]] = []

    async def send(self, request: HttpRequest, /) -> HttpResponse:
        response = await self.inner.send(request)
        self.exchanges.append((request, response))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()

    def find(self, method: str, fragment: str) -> list[tuple[Any, Any]]:
        """(request body, answer body) pairs of the calls whose URL path ends with ``fragment``."""

        def load(raw: bytes | None) -> Any:
            return json.loads(raw) if raw else None

        return [
            (load(req.body), load(res.body))
            for req, res in self.exchanges
            if req.method == method and req.url.split("?")[0].endswith(fragment)
        ]


@pytest.fixture(scope="module")
async def wire() -> Recording:
    """Run the whole flow once with App credentials and keep the traffic."""
    recording = Recording()
    async with FakeActionsService(poll_hold=0.2) as fake:
        client = new_client(
            fake.config_url(),
            fake.app,
            system_info=SystemInfo(),
            retry=RetryPolicy(wait_min=0.001, wait_max=0.01),
            proxy=ProxyConfig(),
            transport=recording,
        )
        async with client:
            group = await client.get_runner_group_by_name("default")
            created = await client.create_runner_scale_set(
                RunnerScaleSet(name="set", runner_group_id=group.id, runner_setting=RunnerSetting(disable_update=True))
            )
            await client.update_runner_scale_set(created.id, RunnerScaleSet(name="set"))
            await client.get_runner_scale_set(group.id, "set")
            jit = await client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="set-runner"), created.id)
            await client.get_runner_by_name("set-runner")
            session = await client.message_session_client(created.id, "host")
            job = fake.queue_job(labels=["set"])
            last = 0
            for step in range(4):
                message = await session.get_message(last, 10)
                assert message is not None
                last = message.message_id
                await session.delete_message(last)
                if step == 0:
                    await session.acquire_jobs([job.request_id])
                if step == 1:
                    fake.take_job(fake.register_runner(jit.encoded_jit_config).id)
                if step == 2:
                    fake.complete_job(job.request_id)
            assert jit.runner is not None
            await client.remove_runner(jit.runner.id)  # gone with its job: Go ARC's second delete
            await client.remove_runner(999)  # never known
            with pytest.raises(RunnerNotFoundError):
                await client.get_runner(999)
            await session.close()
            await client.delete_runner_scale_set(created.id)
    return recording


def test_token_exchange_bodies(wire: Recording) -> None:
    """Installation and registration tokens are {token, expires_at}; the admin connection {url, token}."""
    [(_, access)] = wire.find("POST", "/access_tokens")
    [(registration_request, registration)] = wire.find("POST", "/registration-token")
    [(admin_request, admin)] = wire.find("POST", "/actions/runner-registration")
    assert set(access) == set(registration) == {"token", "expires_at"}
    assert registration_request is None
    assert set(admin_request) == {"url", "runner_event"}
    assert admin_request["runner_event"] == "register"
    assert set(admin) == {"url", "token"}
    assert admin["url"].endswith("/tenant/1/")


def test_scale_set_bodies(wire: Recording) -> None:
    """Create sends the omitempty shape (RunnerSetting with capital R); answers carry every field."""
    [(sent, created)] = wire.find("POST", "/_apis/runtime/runnerscalesets")
    assert sent == {
        "name": "set",
        "runnerGroupId": 1,
        "labels": [{"type": "System", "name": "set"}],
        "RunnerSetting": {"disableUpdate": True},
        "createdOn": "0001-01-01T00:00:00Z",
    }
    assert set(created) == SCALE_SET
    assert set(created["statistics"]) == STATISTICS
    [(patch, updated)] = wire.find("PATCH", "/runnerscalesets/1")
    assert patch == {"name": "set", "RunnerSetting": {}, "createdOn": "0001-01-01T00:00:00Z"}
    assert set(updated) == SCALE_SET
    [(_, listed)] = wire.find("GET", "/_apis/runtime/runnerscalesets")
    assert set(listed) == {"count", "value"}
    assert set(listed["value"][0]) == SCALE_SET


def test_runner_group_and_runner_bodies(wire: Recording) -> None:
    """Runner groups {id, name, size, isDefaultGroup}; runners {id, name, runnerScaleSetId}; JIT answer."""
    [(_, groups)] = wire.find("GET", "/runnergroups/")
    assert set(groups["value"][0]) == {"id", "name", "size", "isDefaultGroup"}
    [(setting, jit)] = wire.find("POST", "/generatejitconfig")
    assert setting == {"name": "set-runner", "workFolder": ""}
    assert set(jit) == {"runner", "encodedJITConfig"}
    assert set(jit["runner"]) == {"id", "name", "runnerScaleSetId"}
    [(_, runners)] = wire.find("GET", "/pools/0/agents")
    assert set(runners) == {"count", "value"}
    assert set(runners["value"][0]) == {"id", "name", "runnerScaleSetId"}


def test_session_and_queue_bodies(wire: Recording) -> None:
    """Session create body and answer; acquire jobs is an id array answered with {count, value}."""
    [(create, session)] = wire.find("POST", "/sessions")
    assert create == {"sessionId": "00000000-0000-0000-0000-000000000000", "ownerName": "host"}
    assert set(session) == SESSION
    assert set(session["runnerScaleSet"]) == SCALE_SET
    [(ids, acquired)] = wire.find("POST", "/acquirejobs")
    assert ids == [101]
    assert acquired == {"count": 1, "value": [101]}


def test_message_bodies_have_the_spec_shape(wire: Recording) -> None:
    """Each message: {messageId, messageType, body (a JSON string), statistics}; each job message its fields."""
    messages = [answer for _, answer in wire.find("GET", "/messages") if answer is not None]
    assert len(messages) == 4
    kinds = []
    for message in messages:
        assert set(message) == {"messageId", "messageType", "body", "statistics"}
        assert message["messageType"] == "RunnerScaleSetJobMessages"
        assert set(message["statistics"]) == STATISTICS
        for job in json.loads(message["body"]):
            kinds.append(job["messageType"])
            assert set(job) == JOB_BASE | JOB_EXTRA[job["messageType"]]
    assert kinds == ["JobAvailable", "JobAssigned", "JobStarted", "JobCompleted"]


def test_error_bodies_are_actions_exceptions(wire: Recording) -> None:
    """Errors are {typeName, message} with an ActivityId header: GET of an unknown runner is 404."""
    [response] = [res for req, res in wire.exchanges if req.method == "GET" and "/agents/999" in req.url]
    assert response.status == 404
    assert set(json.loads(response.body)) == {"typeName", "message"}
    assert json.loads(response.body)["typeName"] == "GitHub.DistributedTask.WebApi.AgentNotFoundException"
    assert response.header("ActivityId")


def test_deleting_an_unknown_or_removed_runner_answers_204_with_an_empty_body(wire: Recording) -> None:
    """As the service does (Go ARC deletes every scaled-down runner twice); the client returns quietly."""
    deletes = [
        (req.url.split("?")[0], res) for req, res in wire.exchanges if req.method == "DELETE" and "/agents/" in req.url
    ]
    assert [url.rsplit("/", 1)[-1] for url, _ in deletes] == ["1", "999"]
    assert [(res.status, res.body) for _, res in deletes] == [(204, b""), (204, b"")]


def test_the_spec_example_message_decodes() -> None:
    """The client reads the §3.1 example message as written in the spec."""
    message = parse_runner_scale_set_message(SPEC_MESSAGE.encode())
    assert message.message_id == 12
    [started] = message.job_started_messages
    assert (started.runner_id, started.runner_name, started.runner_request_id) == (42, "set-abcde-runner-x1y2z", 101)
    assert started.to_wire()["finishTime"] == "0001-01-01T00:00:00Z"
    assert set(started.to_wire()) == JOB_BASE | JOB_EXTRA["JobStarted"]
    assert message.statistics is not None
    assert message.statistics.total_assigned_jobs == 1
