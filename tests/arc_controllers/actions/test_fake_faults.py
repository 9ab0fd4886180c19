"""Each fault the fake injects gives the typed error or the retries the spec says, counted."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from arc_controllers.actions import (
    ActionsClient,
    ActionsError,
    ActionsNotFoundError,
    MessageQueueTokenExpiredError,
    MessageSessionClient,
    ProxyConfig,
    RetriesExhaustedError,
    RetryPolicy,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerSetting,
    SessionConflictError,
    SystemInfo,
    new_client,
)
from arc_controllers.actions.fake import FakeActionsService

FAST_RETRY = RetryPolicy(retry_max=4, wait_min=0.001, wait_max=0.01, timeout=10.0)


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def sleeps() -> list[float]:
    return []


@pytest.fixture
async def pat_client(fake: FakeActionsService, sleeps: list[float]) -> AsyncIterator[ActionsClient]:
    """A PAT client whose retry waits are recorded, not slept."""

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    async with new_client(
        fake.config_url(), fake.pat, system_info=SystemInfo(), retry=FAST_RETRY, proxy=ProxyConfig(), sleep=record
    ) as actions:
        yield actions


@pytest.fixture
async def scale_set_id(pat_client: ActionsClient) -> int:
    return (await pat_client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))).id


@pytest.fixture
async def session(pat_client: ActionsClient, scale_set_id: int) -> AsyncIterator[MessageSessionClient]:
    session = await pat_client.message_session_client(scale_set_id, "host")
    yield session
    await session.close()


# Upstream: client_test.go TestGetRunnerScaleSetByID/"Default retries on server error"
async def test_5xx_is_retried_until_it_succeeds(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int, sleeps: list[float]
) -> None:
    """Two 503s then success: three attempts, waits doubling from wait_min."""
    fault = fake.inject_status("get_scale_set", 503, times=2)
    assert (await pat_client.get_runner_scale_set_by_id(scale_set_id)).id == scale_set_id
    assert fault.fired == 2
    assert fake.requests("get_scale_set") == 3
    assert sleeps == [0.001, 0.002]


async def test_5xx_forever_gives_up_after_five_attempts(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int, sleeps: list[float]
) -> None:
    """RetryMax 4: five attempts, then RetriesExhaustedError carrying the count and the last status."""
    fake.inject_status("get_scale_set", 500, times=None)
    with pytest.raises(RetriesExhaustedError) as caught:
        await pat_client.get_runner_scale_set_by_id(scale_set_id)
    assert fake.requests("get_scale_set") == 5
    assert (caught.value.attempts, caught.value.status) == (5, 500)
    assert "giving up after 5 attempt(s)" in str(caught.value)
    assert sleeps == [0.001, 0.002, 0.004, 0.008]


async def test_501_is_not_retried(fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int) -> None:
    """501 Not Implemented is the one 5xx the policy does not retry."""
    fake.inject_status("get_scale_set", 501, times=None)
    with pytest.raises(ActionsError) as caught:
        await pat_client.get_runner_scale_set_by_id(scale_set_id)
    assert caught.value.status == 501
    assert fake.requests("get_scale_set") == 1


async def test_429_waits_as_retry_after_says(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int, sleeps: list[float]
) -> None:
    """429 with Retry-After: 7 is retried after 7 s, above wait_max (not capped)."""
    fake.inject_status("get_scale_set", 429, times=1, retry_after="7")
    await pat_client.get_runner_scale_set_by_id(scale_set_id)
    assert sleeps == [7.0]
    assert fake.requests("get_scale_set") == 2


async def test_dropped_connection_is_retried(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int
) -> None:
    """A connection closed without an answer is a retryable transport error.

    aiohttp, like Go's net/http, resends an idempotent request once by itself
    when a kept-alive connection drops, so the server may count more requests
    than the client counts attempts.
    """
    fault = fake.inject_drop("get_scale_set", times=2)
    assert (await pat_client.get_runner_scale_set_by_id(scale_set_id)).id == scale_set_id
    assert fault.fired == 2
    assert fake.requests("get_scale_set") == 3


async def test_dropped_connections_forever_exhaust_the_retries(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int
) -> None:
    """Five drops: RetriesExhaustedError with no status."""
    fake.inject_drop("get_scale_set", times=None)
    with pytest.raises(RetriesExhaustedError) as caught:
        await pat_client.get_runner_scale_set_by_id(scale_set_id)
    assert (caught.value.attempts, caught.value.status) == (5, None)
    assert 5 <= fake.requests("get_scale_set") <= 10  # see test_dropped_connection_is_retried


async def test_latency_beyond_the_attempt_timeout_is_retried(fake: FakeActionsService, scale_set_id: int) -> None:
    """An attempt slower than the per-attempt timeout is abandoned and retried."""
    retry = RetryPolicy(retry_max=4, wait_min=0.001, wait_max=0.01, timeout=0.2)
    fake.inject_latency("get_scale_set", 1.0, times=1)
    async with new_client(
        fake.config_url(), fake.pat, system_info=SystemInfo(), retry=retry, proxy=ProxyConfig()
    ) as actions:
        assert (await actions.get_runner_scale_set_by_id(scale_set_id)).id == scale_set_id
    assert fake.requests("get_scale_set") == 2


# Upstream: session_client_test.go TestGetMessage/"Message token refreshed"
async def test_expired_queue_token_refreshes_the_session_once(
    fake: FakeActionsService, session: MessageSessionClient
) -> None:
    """401 on get message: refresh (PATCH) once, retry once, succeed with the new token."""
    old_token = session.session.message_queue_access_token
    assert fake.expire_queue_tokens() == 1
    assert await session.get_message(0, 5) is None
    assert session.refreshes == 1
    assert session.session.message_queue_access_token != old_token
    assert fake.requests("get_message") == 2
    assert fake.requests("refresh_session") == 1


# Upstream: session_client_test.go TestGetMessage/"Message token expired"
@pytest.mark.parametrize("endpoint", ["get_message", "delete_message", "acquire_jobs"])
async def test_queue_token_refused_twice_is_token_expired(
    fake: FakeActionsService, session: MessageSessionClient, endpoint: str
) -> None:
    """A second 401 after the refresh surfaces as MessageQueueTokenExpiredError; two attempts in all."""
    fake.inject_status(endpoint, 401, times=2, message="token expired")
    calls = {
        "get_message": lambda: session.get_message(0, 5),
        "delete_message": lambda: session.delete_message(1),
        "acquire_jobs": lambda: session.acquire_jobs([101]),
    }
    with pytest.raises(MessageQueueTokenExpiredError) as caught:
        await calls[endpoint]()
    assert caught.value.status == 401
    assert fake.requests(endpoint) == 2
    assert fake.requests("refresh_session") == 1


async def test_session_conflict_fault_is_session_conflict_error(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int
) -> None:
    """An injected 409 on session create is SessionConflictError, not retried."""
    fake.inject_session_conflict()
    with pytest.raises(SessionConflictError):
        await pat_client.message_session_client(scale_set_id, "host")
    assert fake.requests("create_session") == 1


async def test_empty_200_on_get_message_is_an_error(fake: FakeActionsService, session: MessageSessionClient) -> None:
    """The empty-body 200 quirk (issue #4285) is a decode error, as in Go."""
    fake.inject_empty_body("get_message")
    with pytest.raises(ActionsError, match="failed to parse message response"):
        await session.get_message(0, 5)


async def test_revoked_admin_token_fails_once_then_is_exchanged_again(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int
) -> None:
    """A 401 on an admin call is not retried; the client drops the token and the next call re-exchanges."""
    registrations = fake.requests("runner_registration")
    fake.expire_admin_tokens()
    with pytest.raises(ActionsError) as caught:
        await pat_client.get_runner_scale_set_by_id(scale_set_id)
    assert caught.value.status == 401
    assert fake.requests("get_scale_set") == 1
    await pat_client.get_runner_scale_set_by_id(scale_set_id)
    assert fake.requests("runner_registration") == registrations + 1


async def test_admin_token_is_renewed_a_minute_before_expiry() -> None:
    """With a 120 s admin token, calls at +30 s reuse it and a call at +61 s renews it first."""
    async with FakeActionsService(admin_token_ttl=120.0) as fake:
        clock = Clock(fake.github.clock())
        async with new_client(
            fake.config_url(), fake.pat, system_info=SystemInfo(), retry=FAST_RETRY, proxy=ProxyConfig(), clock=clock
        ) as actions:
            await actions.get_runner_group_by_name("default")
            clock.now += 30
            await actions.get_runner_group_by_name("default")
            assert actions.tokens.refreshes == 1
            clock.now += 31
            await actions.get_runner_group_by_name("default")
            assert actions.tokens.refreshes == 2
            assert fake.requests("runner_registration") == 2


async def test_runner_registration_retries_401_and_403(fake: FakeActionsService, pat_client: ActionsClient) -> None:
    """The admin-connection call also retries 401/403; after the budget its last answer is the error."""
    fake.inject_status("runner_registration", 403, times=2)
    await pat_client.get_runner_group_by_name("default")
    assert fake.requests("runner_registration") == 3
    pat_client.tokens.invalidate()
    fake.inject_status("runner_registration", 401, times=None)
    with pytest.raises(ActionsError) as caught:
        await pat_client.get_runner_group_by_name("default")
    assert not isinstance(caught.value, RetriesExhaustedError)
    assert (caught.value.status, caught.value.attempts) == (401, 5)
    assert "unexpected status code: 401" in str(caught.value)


async def test_control_api_deletes_a_scale_set_as_an_admin_does(
    fake: FakeActionsService, pat_client: ActionsClient
) -> None:
    """``DELETE /_fake/scale-sets/{id}``: 204, then 404 for the scale set and for the control call again."""
    scale_set = await pat_client.create_runner_scale_set(RunnerScaleSet(name="admin-deleted", runner_group_id=1))
    async with aiohttp.ClientSession(base_url=fake.url) as http:
        async with http.delete(f"/_fake/scale-sets/{scale_set.id}") as answer:
            assert answer.status == 204
        async with http.delete(f"/_fake/scale-sets/{scale_set.id}") as answer:
            assert answer.status == 404
    with pytest.raises(ActionsNotFoundError):
        await pat_client.get_runner_scale_set_by_id(scale_set.id)


async def test_control_api_drives_jobs_runners_and_faults(fake: FakeActionsService, pat_client: ActionsClient) -> None:
    """The /_fake/ HTTP API queues jobs, registers runners, injects faults and reports counts."""
    scale_set = await pat_client.create_runner_scale_set(RunnerScaleSet(name="http", runner_group_id=1))
    jit = await pat_client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="r"), scale_set.id)
    session = await pat_client.message_session_client(scale_set.id, "host")
    async with aiohttp.ClientSession(base_url=fake.url) as http:
        async with http.get("/_fake/credentials") as answer:
            creds = await answer.json()
        assert creds["configUrl"] == fake.config_url()
        async with http.post("/_fake/jobs", json={"labels": ["http"]}) as answer:
            assert answer.status == 201
            job = await answer.json()
        message = await session.get_message(0, 5)
        assert message is not None
        await session.acquire_jobs([job["requestId"]])
        async with http.post("/_fake/runners/register", json={"encodedJITConfig": jit.encoded_jit_config}) as answer:
            runner = await answer.json()
        async with http.post(f"/_fake/runners/{runner['id']}/take") as answer:
            assert (await answer.json())["state"] == "running"
        async with http.post(f"/_fake/jobs/{job['requestId']}/complete", json={"result": "failed"}) as answer:
            assert (await answer.json())["result"] == "failed"
        async with http.post("/_fake/faults", json={"endpoint": "get_runner", "status": 502, "times": 1}) as answer:
            assert answer.status == 201
        async with http.post("/_fake/tokens/expire", json={"kind": "queue"}) as answer:
            assert (await answer.json()) == {"expired": 1}
        async with http.get("/_fake/faults") as answer:
            report = await answer.json()
        assert report["requests"]["create_session"] == 1
        assert report["faults"][0]["endpoint"] == "get_runner"
    await session.close()


async def test_answers_are_counted_by_endpoint_and_status(
    fake: FakeActionsService, pat_client: ActionsClient, scale_set_id: int
) -> None:
    """A forgotten session: the poll's 401 and the refresh's 404 are real answers, counted as sent."""
    session = await pat_client.message_session_client(scale_set_id, "host")
    assert fake.expire_session(scale_set_id)
    with pytest.raises(ActionsError):
        await session.get_message(0, 5)  # no SessionRecovery here: the 404 surfaces
    answers = fake.faults.answers
    assert answers[("get_message", 401)] == 1
    assert answers[("refresh_session", 404)] == 1
    assert answers[("create_session", 200)] == 1
    assert fake.faults.to_json()["answers"]["refresh_session 404"] == 1
    async with aiohttp.ClientSession() as http, http.get(f"{fake.url}/_fake/faults") as response:
        assert (await response.json())["answers"]["get_message 401"] == 1
