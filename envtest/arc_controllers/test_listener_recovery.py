"""The listener keeps serving through the session failures that make upstream's listener exit (issue 19, rule 1).

Each test runs the whole listener in-process (session, long poll, scaler) against a real
kube-apiserver and the fake Actions service, as its own ServiceAccount with only the Role the
AutoscalingListener controller makes (``ARC_ENVTEST_CHART_RBAC=0``: as admin), and follows the
reproduction of its upstream issue:

- ARC #3209: session create answers 409 three times; the listener stays up, retries, and scales.
- ARC #4356: a refresh answers 404 (the service forgot the session); a new session is created,
  ``lastMessageId`` carries over and every later message is handled once.
- ARC #4285: a poll answers 200 with an empty body, twice; the same recovery, after a backoff.

The session opener is the process's own (`arc_controllers.listener.__main__.session_opener`)
with the process's recovery rules at test speed (1 s between conflicts, as issue 19 asks).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from arc_controllers.actions import ActionsClient, SessionRecovery
from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.listener.__main__ import CONFLICT_INTERVAL_ENV, SESSION_RECOVERY, session_opener
from arc_controllers.listener.app import AppError, ListenerApp, SessionClient
from arc_controllers.listener.config import ListenerConfig
from arc_controllers.listener.loop import MessageInfo, SessionInfo
from reconcilekit.client import ObjectKey, RestClient
from reconcilekit.envtest import Environment
from reconcilekit.testing import eventually

from . import test_listener
from .test_listener import (
    ER,
    ERS,
    SET_NAME,
    Recorder,
    Running,
    _process_config,
    create_runner,
    create_runner_set,
    listener_config,
    start_listener_process,
    start_runner_with_job,
)

# test_listener's fixtures: the CRDs, an admin client, the listener's ServiceAccount client, the fake
# service, an Actions client for it and a registered scale set
crds = test_listener.crds
client = test_listener.client
listener_account = test_listener.listener_account
listener_kube = test_listener.listener_kube
fake = test_listener.fake
actions = test_listener.actions
scale_set_id = test_listener.scale_set_id

TEST_RECOVERY = SessionRecovery(conflict_interval=1.0, bad_message_backoff=0.2, bad_message_backoff_max=1.0)
"""The process's rules (`SESSION_RECOVERY`) with 1 s between conflicting creates, as issue 19 asks."""

SESSION_NOT_FOUND = "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionNotFoundException"


class RecordingSession:
    """The real message session, recording what the loop asked and got."""

    def __init__(self, inner: SessionClient) -> None:
        self.inner = inner
        self.polled_with: list[int] = []
        """The ``lastMessageId`` of every poll, in order."""
        self.delivered: list[int] = []
        """The id of every message handed to the loop, in order."""

    @property
    def session(self) -> SessionInfo:
        return self.inner.session

    async def get_message(self, last_message_id: int, max_capacity: int, /) -> MessageInfo | None:
        self.polled_with.append(last_message_id)
        message = await self.inner.get_message(last_message_id, max_capacity)
        if message is not None:
            self.delivered.append(message.message_id)
        return message

    async def delete_message(self, message_id: int, /) -> None:
        await self.inner.delete_message(message_id)

    async def acquire_jobs(self, request_ids: list[int], /) -> Sequence[int]:
        return await self.inner.acquire_jobs(request_ids)

    async def close(self) -> None:
        await self.inner.close()


class Listening(Running):
    """The listener app in a task (stopped and awaited on exit), opening its session as the process does."""

    def __init__(self, config: ListenerConfig, actions: ActionsClient, kube: Recorder) -> None:
        self.session: RecordingSession | None = None
        open_session = session_opener(actions, recovery=TEST_RECOVERY)

        async def recording(scale_set_id: int, owner: str, /) -> SessionClient:
            self.session = RecordingSession(await open_session(scale_set_id, owner))
            return self.session

        super().__init__(ListenerApp(config, open_session=recording, kube=kube, hostname="listener-pod"))

    async def __aenter__(self) -> Listening:
        await super().__aenter__()
        return self

    def assert_alive(self) -> None:
        """The run has not ended (an ended run re-raises its error here)."""
        assert self.task is not None
        if self.task.done():
            self.task.result()
            raise AssertionError("the listener returned")


def live_sessions(fake: FakeActionsService) -> list[Any]:
    return list(fake.state.sessions.values())


async def replicas(client: RestClient, namespace: str) -> int:
    runner_set = await client.get(ERS, ObjectKey(namespace, SET_NAME))
    return int(runner_set["spec"].get("replicas") or 0)


def test_the_process_recovers_as_these_tests_do() -> None:
    """The process's rules are these tests' rules except for the waits (30 s between conflicts, 10 tries)."""
    assert SESSION_RECOVERY.conflict_interval == 30.0
    assert SESSION_RECOVERY.conflict_retries == TEST_RECOVERY.conflict_retries == 10
    assert SESSION_RECOVERY.bad_message_retries == TEST_RECOVERY.bad_message_retries


async def test_session_conflicts_are_retried_in_process_arc_3209(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """Three 409s on session create: the listener stays up, has a session within 10 s of the last
    conflict and patches the EphemeralRunnerSet within 2 s after that."""
    await create_runner_set(client, namespace)
    conflict = fake.inject_session_conflict(times=3)
    recorder = Recorder(listener_kube)
    async with Listening(listener_config(namespace, scale_set_id, fake, min_runners=1), actions, recorder) as run:

        def conflicts_over() -> bool:
            run.assert_alive()
            return conflict.fired == 3

        await eventually(conflicts_over, timeout=30, message="three conflicting creates")
        ended = time.monotonic()
        await eventually(lambda: live_sessions(fake), timeout=10, message="a session within 10 s of the conflicts")
        created = time.monotonic()
        await eventually(lambda: replicas(client, namespace), timeout=2, message="the set patched within 2 s")
        patched = time.monotonic()
        run.assert_alive()
        assert fake.requests("create_session") == 4
        print(f"arc_3209: session {created - ended:.2f} s after the conflicts, patch {patched - created:.2f} s later")
    assert recorder.set_patches()[0] == (1, 0)
    assert not live_sessions(fake), "the session is deleted when the listener stops"


async def test_conflicts_beyond_the_retries_end_the_run_arc_3209(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """A session that never frees up ends the run after the last retry, with nothing patched."""
    await create_runner_set(client, namespace)
    fake.inject_session_conflict(times=None)
    recorder = Recorder(listener_kube)
    recovery = SessionRecovery(conflict_interval=0.1, conflict_retries=2)
    app = ListenerApp(
        listener_config(namespace, scale_set_id, fake),
        open_session=session_opener(actions, recovery=recovery),
        kube=recorder,
        hostname="listener-pod",
    )
    with pytest.raises(AppError, match="failed to create actions message session client"):
        await asyncio.wait_for(app.run(), 30)
    assert fake.requests("create_session") == 3
    assert recorder.log == []


async def test_refresh_404_creates_a_new_session_and_keeps_the_cursor_arc_4356(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """Queue a job, see replicas 1, expire the queue tokens and answer the refresh 404 once: a new
    session is created in-process, polled from the same lastMessageId, and each later message
    (a second job, its JobStarted) is handled once."""
    await create_runner_set(client, namespace)
    runner_name = "set-abcde-runner-1"
    await create_runner(client, namespace, runner_name)
    recorder = Recorder(listener_kube)
    async with Listening(listener_config(namespace, scale_set_id, fake), actions, recorder) as run:
        fake.queue_job(labels=["set"])
        await eventually(lambda: replicas(client, namespace), timeout=30, message="replicas 1")
        assert run.session is not None
        before = list(run.session.delivered)
        assert before, "the job's message was delivered"
        first_session = live_sessions(fake)[0].session_id

        fake.expire_queue_tokens()
        fake.inject_status("refresh_session", 404, type_name=SESSION_NOT_FOUND, message="session not found")

        def replaced() -> bool:
            run.assert_alive()
            return fake.requests("create_session") == 2 and bool(live_sessions(fake))

        await eventually(replaced, timeout=30, message="a new session after the 404")
        assert live_sessions(fake)[0].session_id != first_session
        assert fake.requests("refresh_session") == 1

        fake.queue_job(labels=["set"])
        await eventually(lambda: asyncio.sleep(0, fake.statistics(scale_set_id)["totalAssignedJobs"] == 2))
        await start_runner_with_job(fake, actions, scale_set_id, runner_name)

        async def applied() -> None:
            run.assert_alive()
            assert await replicas(client, namespace) == 2
            runner = await client.get(ER, ObjectKey(namespace, runner_name))
            assert runner["status"].get("phase") == "Running"

        await eventually(applied, timeout=30, message="the later messages applied")
        session = run.session
    later = session.polled_with[session.polled_with.index(before[-1]) :]
    assert min(later) == before[-1], f"every poll from the first delivery on keeps the cursor: {session.polled_with}"
    assert session.delivered == sorted(set(session.delivered)), f"each message once: {session.delivered}"
    status_patches = [p for verb, name, p in recorder.log if verb == "PATCH status" and name == runner_name]
    assert len(status_patches) == 1, "the JobStarted was applied once"
    assert not live_sessions(fake), "the session is deleted when the listener stops"


async def test_empty_200_polls_are_retried_with_a_new_session_arc_4285(
    client: RestClient,
    listener_kube: RestClient,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
) -> None:
    """A fresh listener whose first two polls answer 200 with an empty body keeps running: after a
    backoff each time it polls on a new session, and the messages of a job queued then are handled once."""
    await create_runner_set(client, namespace)
    empty = fake.inject_empty_body("get_message", times=2)
    recorder = Recorder(listener_kube)
    async with Listening(listener_config(namespace, scale_set_id, fake), actions, recorder) as run:

        def recovered() -> bool:
            run.assert_alive()
            return empty.fired == 2 and fake.requests("create_session") == 3 and bool(live_sessions(fake))

        await eventually(recovered, timeout=30, message="two empty answers, two new sessions")
        fake.queue_job(labels=["set"])

        async def scaled() -> bool:
            run.assert_alive()
            return await replicas(client, namespace) == 1

        await eventually(scaled, timeout=30, message="the job queued after the recovery scales the set")
        session = run.session
    assert session is not None
    assert session.delivered[0] == 1, "the first message the service had is the first the loop got"
    assert session.delivered == sorted(set(session.delivered)), f"each message once: {session.delivered}"
    assert fake.requests("acquire_jobs") == 1, "the job was acquired once"
    assert session.polled_with[0] == 0, "the polls answered empty carried no cursor: nothing was handled yet"
    assert not live_sessions(fake), "the session is deleted when the listener stops"


async def test_the_arc_listener_process_outlives_a_killed_listeners_session_arc_3209(
    envtest_environment: Environment,
    client: RestClient,
    listener_account: tuple[str, str] | None,
    namespace: str,
    fake: FakeActionsService,
    actions: ActionsClient,
    scale_set_id: int,
    tmp_path: Path,
) -> None:
    """The real ``arc-listener`` started while a SIGKILLed listener's session is still alive: it keeps
    running on the 409, and once the service drops the old session its next try (2 s on, as
    LISTENER_SESSION_CONFLICT_RETRY_INTERVAL says) gets one and the set is scaled to minRunners.
    Upstream's exits at once and is restarted over and over."""
    await create_runner_set(client, namespace)
    await actions.message_session_client(scale_set_id, "killed-listener")  # never closed: the killed pod's
    config = _process_config(namespace, scale_set_id, fake)
    env = {CONFLICT_INTERVAL_ENV: "2"}
    process = await start_listener_process(envtest_environment, client, listener_account, config, tmp_path, **env)
    try:
        await eventually(lambda: fake.requests("create_session") >= 2, timeout=30, message="the 409 is answered")

        def retried_in_process() -> bool:
            # the same process tries again after its 409 (upstream's has exited on it by then)
            assert process.returncode is None, "the listener is still running after the conflict"
            return fake.requests("create_session") >= 3

        await eventually(retried_in_process, timeout=30, message="the listener retries the 409 in-process")
        assert fake.expire_session(scale_set_id), "the service drops the killed listener's session"

        async def scaled() -> bool:
            assert process.returncode is None, "the listener is still running"
            return await replicas(client, namespace) == 2

        await eventually(scaled, timeout=60, message="the retry 2 s after the conflict gets the session")
        assert fake.requests("create_session") >= 4, "the killed listener's, two 409s, the one that succeeded"
        [session] = live_sessions(fake)
        assert session.owner_name != "killed-listener"
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
