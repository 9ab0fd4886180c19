"""SessionRecovery against the fake service: conflicts retried, a forgotten session or a broken poll replaced."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from arc_controllers.actions import (
    ActionsClient,
    ActionsError,
    ActionsNotFoundError,
    MessageSessionClient,
    ProxyConfig,
    RetryPolicy,
    RunnerScaleSet,
    SessionConflictError,
    SessionRecovery,
    SystemInfo,
    new_client,
)
from arc_controllers.actions.fake import FakeActionsService

FAST_RETRY = RetryPolicy(retry_max=4, wait_min=0.001, wait_max=0.01, timeout=10.0)
FAST_RECOVERY = SessionRecovery(
    conflict_interval=0.01, conflict_retries=3, bad_message_backoff=0.01, bad_message_backoff_max=0.02
)
SESSION_NOT_FOUND = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionNotFoundException"


@pytest.fixture
async def actions(fake: FakeActionsService) -> AsyncIterator[ActionsClient]:
    async with new_client(
        fake.config_url(), fake.pat, system_info=SystemInfo(), retry=FAST_RETRY, proxy=ProxyConfig()
    ) as client:
        yield client


@pytest.fixture
async def scale_set_id(actions: ActionsClient) -> int:
    return (await actions.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))).id


async def open_session(actions: ActionsClient, scale_set_id: int) -> MessageSessionClient:
    return await actions.message_session_client(scale_set_id, "host", recovery=FAST_RECOVERY)


async def test_a_conflicting_create_is_retried_until_the_old_session_is_gone_arc_3209(
    fake: FakeActionsService, actions: ActionsClient, scale_set_id: int
) -> None:
    """Three 409s, then a session: four creates, one live session."""
    fake.inject_session_conflict(times=3)
    session = await open_session(actions, scale_set_id)
    assert fake.requests("create_session") == 4
    assert fake.state.sessions[scale_set_id].session_id == str(session.session.session_id)
    await session.close()


async def test_conflicts_beyond_the_retries_are_session_conflict_error_arc_3209(
    fake: FakeActionsService, actions: ActionsClient, scale_set_id: int
) -> None:
    """A session that never frees up: SessionConflictError after ``conflict_retries`` retries."""
    fake.inject_session_conflict(times=None)
    with pytest.raises(SessionConflictError):
        await open_session(actions, scale_set_id)
    assert fake.requests("create_session") == 1 + FAST_RECOVERY.conflict_retries


async def test_a_refresh_answered_404_replaces_the_session_arc_4356(
    fake: FakeActionsService, actions: ActionsClient, scale_set_id: int
) -> None:
    """401 on the poll, 404 on the refresh: the old session is deleted, a new one created, the poll repeated."""
    session = await open_session(actions, scale_set_id)
    old = session.session.session_id
    job = fake.queue_job(labels=["s"])
    fake.expire_queue_tokens()
    fake.inject_status("refresh_session", 404, type_name=SESSION_NOT_FOUND, message="session not found")
    message = await session.get_message(0, 5)
    assert message is not None
    assert message.job_available_messages[0].runner_request_id == job.request_id
    assert session.replacements == 1
    assert session.session.session_id != old
    assert fake.requests("delete_session") == 1
    assert fake.requests("create_session") == 2
    await session.close()
    assert not fake.state.sessions


async def test_without_recovery_a_refresh_404_is_raised(
    fake: FakeActionsService, actions: ActionsClient, scale_set_id: int
) -> None:
    """Upstream's behaviour stays the client's default: the 404 reaches the caller."""
    session = await actions.message_session_client(scale_set_id, "host")
    fake.expire_queue_tokens()
    fake.inject_status("refresh_session", 404, type_name=SESSION_NOT_FOUND, message="session not found")
    with pytest.raises(ActionsNotFoundError):
        await session.get_message(0, 5)
    assert fake.requests("create_session") == 1


async def test_empty_200s_are_followed_by_a_new_session_and_a_new_poll_arc_4285(
    fake: FakeActionsService, actions: ActionsClient, scale_set_id: int
) -> None:
    """Two empty 200s: two new sessions, then the queued message, once."""
    session = await open_session(actions, scale_set_id)
    fake.queue_job(labels=["s"])
    fake.inject_empty_body("get_message", times=2)
    message = await session.get_message(0, 5)
    assert message is not None
    assert session.replacements == 2
    assert fake.requests("get_message") == 3
    await session.delete_message(message.message_id)
    assert await session.get_message(message.message_id, 5) is None, "nothing is delivered twice"
    await session.close()


async def test_empty_200s_beyond_the_retries_are_the_parse_error_arc_4285(
    fake: FakeActionsService, actions: ActionsClient, scale_set_id: int
) -> None:
    """A service that keeps answering an empty 200: the parse error after ``bad_message_retries`` recoveries."""
    recovery = SessionRecovery(bad_message_backoff=0.001, bad_message_retries=2)
    session = await actions.message_session_client(scale_set_id, "host", recovery=recovery)
    fake.inject_empty_body("get_message", times=None)
    with pytest.raises(ActionsError, match="failed to parse message response"):
        await session.get_message(0, 5)
    assert fake.requests("get_message") == 3
    assert session.replacements == 2
    await session.close()


def test_the_wait_after_a_broken_poll_doubles_up_to_its_cap() -> None:
    """1 s, 2 s, 4 s, … capped at 30 s by default."""
    recovery = SessionRecovery()
    assert [recovery.bad_message_delay(n) for n in (1, 2, 3, 5, 6, 10)] == [1.0, 2.0, 4.0, 16.0, 30.0, 30.0]
