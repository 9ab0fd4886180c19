"""The client's full flows against the fake Actions service, over real HTTP on loopback."""

from __future__ import annotations

import pytest

from arc_controllers.actions import (
    ActionsClient,
    ActionsNotFoundError,
    JobStillRunningError,
    RunnerExistsError,
    RunnerNotFoundError,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerSetting,
    RunnerSetting,
    SessionConflictError,
)
from arc_controllers.actions.fake import FakeActionsService


async def test_full_flow_from_scale_set_to_deleted_session(fake: FakeActionsService, client: ActionsClient) -> None:
    """Create a set, mint a JIT config, open a session, see one job's messages in order, clean up."""
    group = await client.get_runner_group_by_name("default")
    assert (group.id, group.is_default_group) == (1, True)
    assert await client.get_runner_scale_set(group.id, "arc-set") is None
    created = await client.create_runner_scale_set(
        RunnerScaleSet(name="arc-set", runner_group_id=group.id, runner_setting=RunnerSetting(disable_update=True))
    )
    assert [label.name for label in created.labels] == ["arc-set"]
    assert created.runner_setting.disable_update
    assert (await client.get_runner_scale_set(group.id, "arc-set")) == created
    jit = await client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="arc-set-runner-1"), created.id)
    assert jit.runner is not None
    assert jit.encoded_jit_config
    assert (await client.get_runner_by_name("arc-set-runner-1")) == jit.runner
    assert (await client.get_runner(jit.runner.id)) == jit.runner

    session = await client.message_session_client(created.id, "listener-host")
    assert session.session.statistics is not None
    assert await session.get_message(0, 10) is None  # nothing queued: 202 after the hold

    job = fake.queue_job(labels=["arc-set"], jobDisplayName="build")
    seen: list[str] = []
    last = 0

    async def next_message() -> None:
        nonlocal last
        message = await session.get_message(last, 10)
        assert message is not None
        last = message.message_id
        await session.delete_message(message.message_id)
        for kind in ("job_available", "job_assigned", "job_started", "job_completed"):
            seen.extend(kind for _ in getattr(message, f"{kind}_messages"))
        if message.job_available_messages:
            ids = [m.runner_request_id for m in message.job_available_messages]
            assert await session.acquire_jobs(ids) == [job.request_id]

    await next_message()  # JobAvailable, then acquire -> assigned
    await next_message()  # JobAssigned
    runner = fake.register_runner(jit.encoded_jit_config)
    assert fake.take_job(runner.id) is not None
    await next_message()  # JobStarted
    with pytest.raises(JobStillRunningError):
        await client.remove_runner(jit.runner.id)
    fake.complete_job(job.request_id, "succeeded")
    await next_message()  # JobCompleted
    assert seen == ["job_available", "job_assigned", "job_started", "job_completed"]

    await client.remove_runner(jit.runner.id)  # ephemeral: gone with its job, and removing it again is quiet
    with pytest.raises(RunnerNotFoundError):
        await client.get_runner(jit.runner.id)
    await session.close()
    await client.delete_runner_scale_set(created.id)
    with pytest.raises(ActionsNotFoundError):
        await client.get_runner_scale_set_by_id(created.id)


async def test_removing_an_idle_runner_unregisters_it(fake: FakeActionsService, client: ActionsClient) -> None:
    """RemoveRunner on an idle runner answers 204 and the name is free again."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    jit = await client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="r"), scale_set.id)
    assert jit.runner is not None
    await client.remove_runner(jit.runner.id)
    assert await client.get_runner_by_name("r") is None


async def test_a_second_jit_config_for_one_name_is_runner_exists(client: ActionsClient) -> None:
    """AgentExistsException becomes RunnerExistsError."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    await client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="dup"), scale_set.id)
    with pytest.raises(RunnerExistsError):
        await client.generate_jit_runner_config(RunnerScaleSetJitRunnerSetting(name="dup"), scale_set.id)


async def test_second_session_for_a_scale_set_is_a_conflict(client: ActionsClient) -> None:
    """One live session per scale set: the second gets 409 SessionConflictError; after close it works."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    first = await client.message_session_client(scale_set.id, "a")
    with pytest.raises(SessionConflictError) as caught:
        await client.message_session_client(scale_set.id, "b")
    assert caught.value.status == 409
    await first.close()
    second = await client.message_session_client(scale_set.id, "b")
    await second.close()


async def test_update_scale_set_moves_it_to_another_group(fake: FakeActionsService, client: ActionsClient) -> None:
    """UpdateRunnerScaleSet with only runnerGroupId changes the group; GetRunnerScaleSetByID sees it."""
    group = fake.state.add_runner_group("gpu")
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    updated = await client.update_runner_scale_set(scale_set.id, RunnerScaleSet(runner_group_id=group["id"]))
    assert (updated.runner_group_id, updated.runner_group_name) == (group["id"], "gpu")
    assert (await client.get_runner_group_by_name("gpu")).id == group["id"]
    renamed = await client.update_runner_scale_set(scale_set.id, RunnerScaleSet(name="s2"))
    assert (await client.get_runner_scale_set_by_id(scale_set.id)).name == renamed.name == "s2"


async def test_capacity_header_limits_assigned_jobs(fake: FakeActionsService, client: ActionsClient) -> None:
    """With X-ScaleSetMaxCapacity 1 only one of two acquired jobs is assigned."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    session = await client.message_session_client(scale_set.id, "host")
    jobs = [fake.queue_job(labels=["s"]) for _ in range(2)]
    message = await session.get_message(0, 1)
    assert message is not None
    assert [m.runner_request_id for m in message.job_available_messages] == [j.request_id for j in jobs]
    await session.delete_message(message.message_id)
    assert sorted(await session.acquire_jobs([j.request_id for j in jobs])) == [j.request_id for j in jobs]
    message = await session.get_message(message.message_id, 1)
    assert message is not None
    assert message.statistics is not None
    assert len(message.job_assigned_messages) == 1
    assert message.statistics.total_assigned_jobs == 1
    assert message.statistics.total_acquired_jobs == 2
    await session.close()


async def test_unacknowledged_message_is_delivered_again(fake: FakeActionsService, client: ActionsClient) -> None:
    """A message neither deleted nor passed as lastMessageId comes back on the next poll."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    session = await client.message_session_client(scale_set.id, "host")
    fake.queue_job(labels=["s"])
    first = await session.get_message(0, 10)
    again = await session.get_message(0, 10)
    assert first is not None
    assert again is not None
    assert again.message_id == first.message_id
    assert await session.get_message(first.message_id, 10) is None  # lastMessageId acknowledges it
    await session.close()


async def test_expired_orphan_session_frees_the_scale_set(fake: FakeActionsService, client: ActionsClient) -> None:
    """A listener that died without deleting its session blocks the next until the service drops it."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    await client.message_session_client(scale_set.id, "crashed-listener")
    with pytest.raises(SessionConflictError):
        await client.message_session_client(scale_set.id, "new-listener")
    assert fake.expire_session(scale_set.id)
    session = await client.message_session_client(scale_set.id, "new-listener")
    assert session.session.owner_name == "new-listener"
    await session.close()


async def test_scale_set_deleted_as_an_admin_does_answers_404_on_its_routes(
    fake: FakeActionsService, client: ActionsClient
) -> None:
    """An admin removes a scale set with a live session: its lookup, sessions and queue answer 404 (ARC #4370)."""
    scale_set = await client.create_runner_scale_set(RunnerScaleSet(name="s", runner_group_id=1))
    session = await client.message_session_client(scale_set.id, "listener")
    fake.delete_scale_set(scale_set.id)
    with pytest.raises(ActionsNotFoundError):
        await client.get_runner_scale_set_by_id(scale_set.id)
    with pytest.raises(ActionsNotFoundError):
        await session.get_message(0, 10)
    with pytest.raises(ActionsNotFoundError):
        await client.message_session_client(scale_set.id, "listener")
    assert await client.get_runner_scale_set(1, "s") is None
