"""The message loop against an in-memory message session and scaler."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from arc_controllers.listener.loop import Listener, ListenerError

from .listener_fakes import Available, FakeSession, JobCompleted, JobStarted, Message, Session, Stats


class RecordingScaler:
    def __init__(self, session: FakeSession, *, delay: float = 0.0) -> None:
        self.session = session
        self.delay = delay

    async def handle_job_started(self, job: Any, /) -> None:
        await asyncio.sleep(self.delay)
        self.session.calls.append(("started", job.runner_name))

    async def handle_job_completed(self, job: Any, /) -> None:
        self.session.calls.append(("completed", job.runner_name))

    async def handle_desired_runner_count(self, count: int, /) -> int:
        self.session.calls.append(("desired", count))
        return count


async def run_until_idle(session: FakeSession, max_runners: int = 10) -> None:
    """Run the loop until the script is used up and the next long poll waits; then cancel it."""
    listener = Listener(session, scale_set_id=7, max_runners=max_runners)
    task = asyncio.create_task(listener.run(RecordingScaler(session)), name="listener-under-test")
    await asyncio.wait_for(session.polling.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# Upstream: github.com/actions/scaleset listener/listener_test.go (initial statistics, message handling order)
async def test_ack_comes_before_acquire_and_handlers_then_desired_count() -> None:
    """Initial statistics scale first; each message is acked, then acquired, then handled, then scaled."""
    message = Message(
        message_id=12,
        statistics=Stats(total_assigned_jobs=2),
        job_available_messages=[Available(101), Available(102)],
        job_started_messages=[JobStarted(runner_name="r-1")],
        job_completed_messages=[JobCompleted(runner_name="r-0")],
    )
    session = FakeSession([None, message])
    await run_until_idle(session, max_runners=5)
    assert session.calls == [
        ("desired", 0),
        ("get", 0, 5),
        ("desired", 0),  # empty poll: cached statistics
        ("get", 0, 5),
        ("ack", 12),
        ("acquire", [101, 102]),
        ("started", "r-1"),
        ("completed", "r-0"),
        ("desired", 2),
        ("get", 12, 5),  # lastMessageId is the last message's id
    ]


async def test_empty_poll_uses_the_latest_message_statistics() -> None:
    """After a message, an empty poll scales from that message's statistics."""
    session = FakeSession([Message(message_id=3, statistics=Stats(total_assigned_jobs=4)), None])
    await run_until_idle(session)
    assert [c[1] for c in session.calls if c[0] == "desired"] == [0, 4, 4]


async def test_no_acquire_call_without_available_jobs() -> None:
    """A message without JobAvailable entries makes no acquire call."""
    session = FakeSession([Message(message_id=1)])
    await run_until_idle(session)
    assert "acquire" not in [c[0] for c in session.calls]


async def test_a_failed_poll_ends_the_loop_with_the_step_named() -> None:
    """Any poll error (a dropped long poll the client gave up on) stops the loop."""
    session = FakeSession([ConnectionResetError("dropped")])
    with pytest.raises(ListenerError, match="failed to get message: dropped"):
        await Listener(session, scale_set_id=7, max_runners=1).run(RecordingScaler(session))


async def test_a_failed_handler_ends_the_loop_after_the_ack() -> None:
    """A scaler error stops the loop; the message was already acked and is not redelivered."""

    class Failing(RecordingScaler):
        async def handle_job_started(self, job: Any, /) -> None:
            raise RuntimeError("boom")

    session = FakeSession([Message(message_id=4, job_started_messages=[JobStarted()])])
    with pytest.raises(ListenerError, match="failed to handle job started: boom"):
        await Listener(session, scale_set_id=7, max_runners=1).run(Failing(session))
    assert ("ack", 4) in session.calls


async def test_session_without_statistics_or_id_is_an_error() -> None:
    """The initial pass needs the session's id and statistics."""
    session = FakeSession()
    session.session = Session(statistics=None)
    with pytest.raises(ListenerError, match="session statistics is nil"):
        await Listener(session, scale_set_id=7, max_runners=1).run(RecordingScaler(session))
    session.session = Session(session_id=uuid.UUID(int=0))
    with pytest.raises(ListenerError, match="initial session is nil"):
        await Listener(session, scale_set_id=7, max_runners=1).run(RecordingScaler(session))


async def test_message_without_statistics_is_an_error() -> None:
    """Go crashes on a message without statistics; the port stops with an error instead."""
    session = FakeSession([Message(message_id=1, statistics=None)])
    with pytest.raises(ListenerError, match="has no statistics"):
        await Listener(session, scale_set_id=7, max_runners=1).run(RecordingScaler(session))


async def test_cancellation_lets_the_message_being_handled_finish() -> None:
    """A stop during handling waits for the job patches and the desired count, then propagates."""
    session = FakeSession([Message(message_id=9, job_started_messages=[JobStarted(runner_name="r-1")])])
    listener = Listener(session, scale_set_id=7, max_runners=1)
    task = asyncio.create_task(listener.run(RecordingScaler(session, delay=0.05)), name="listener-under-test")
    await asyncio.wait_for(session.acked.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.calls[-2:] == [("started", "r-1"), ("desired", 0)]


def test_listener_rejects_bad_bounds() -> None:
    """scaleSetID must be set and maxRunners must fit in 0..MaxInt32."""
    with pytest.raises(ValueError, match="scaleSetID"):
        Listener(FakeSession(), scale_set_id=0, max_runners=1)
    with pytest.raises(ValueError, match="maxRunners"):
        Listener(FakeSession(), scale_set_id=1, max_runners=2**31)


class RecordingMetrics:
    def __init__(self, session: FakeSession) -> None:
        self.session = session

    def record_statistics(self, statistics: Any, /) -> None:
        self.session.calls.append(("m:statistics", statistics.total_assigned_jobs))

    def record_job_started(self, job: Any, /) -> None:
        self.session.calls.append(("m:started", job.runner_name))

    def record_job_completed(self, job: Any, /) -> None:
        self.session.calls.append(("m:completed", job.runner_name))

    def record_desired_runners(self, count: int, /) -> None:
        self.session.calls.append(("m:desired", count))


# Upstream: github.com/actions/scaleset listener/listener_test.go (metrics recorder hooks)
async def test_metric_hooks_follow_upstreams_order_and_skip_empty_polls() -> None:
    """Statistics before the ack, each job hook right before its handler; no desired-runners record on empty polls."""
    session = FakeSession(
        [
            None,
            Message(
                message_id=2,
                statistics=Stats(total_assigned_jobs=1),
                job_started_messages=[JobStarted(runner_name="r-1")],
                job_completed_messages=[JobCompleted(runner_name="r-0")],
            ),
        ]
    )
    listener = Listener(session, scale_set_id=7, max_runners=3, recorder=RecordingMetrics(session))
    task = asyncio.create_task(listener.run(RecordingScaler(session)), name="listener-under-test")
    await asyncio.wait_for(session.polling.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.calls == [
        ("m:statistics", 0),
        ("desired", 0),
        ("m:desired", 0),
        ("get", 0, 3),
        ("desired", 0),
        ("get", 0, 3),
        ("m:statistics", 1),
        ("ack", 2),
        ("m:started", "r-1"),
        ("started", "r-1"),
        ("m:completed", "r-0"),
        ("completed", "r-0"),
        ("desired", 1),
        ("m:desired", 1),
        ("get", 2, 3),
    ]
