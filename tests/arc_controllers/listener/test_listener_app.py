"""The app's wiring: the session is deleted on every exit path; metrics follow the loop."""

from __future__ import annotations

import asyncio
import socket

import pytest

from arc_controllers.listener.app import AppError, ListenerApp
from arc_controllers.listener.config import ListenerConfig
from arc_controllers.listener.loop import ListenerError

from .listener_fakes import FakeKube, FakeSession, Message, Stats, runner_set


def config(**changes: object) -> ListenerConfig:
    values: dict[str, object] = {
        "configure_url": "https://github.com/my-org",
        "has_credentials": True,
        "github_token": "t",
        "ephemeral_runner_set_namespace": "default",
        "ephemeral_runner_set_name": "set-abcde",
        "runner_scale_set_id": 7,
        "max_runners": 10,
        "min_runners": 1,
        "log_level": "info",
        "log_format": "json",
    }
    values.update(changes)
    return ListenerConfig(**values)  # type: ignore[arg-type]


class Opener:
    def __init__(self, session: FakeSession | None = None, error: Exception | None = None) -> None:
        self.session = session or FakeSession()
        self.error = error
        self.owners: list[str] = []

    async def __call__(self, scale_set_id: int, owner: str, /) -> FakeSession:
        self.owners.append(owner)
        if self.error is not None:
            raise self.error
        return self.session


def new_app(opener: Opener, kube: FakeKube | None = None, **changes: object) -> ListenerApp:
    if kube is None:
        kube = FakeKube()
        kube.add(runner_set())
    return ListenerApp(config(**changes), open_session=opener, kube=kube, hostname="pod-1")


async def test_session_is_deleted_when_the_loop_fails() -> None:
    """A failing poll ends the run with the error, after the session was deleted."""
    opener = Opener(FakeSession([ConnectionResetError("dropped")]))
    with pytest.raises(ListenerError, match="dropped"):
        await new_app(opener).run()
    assert opener.session.closed
    assert opener.owners == ["pod-1"]


async def test_session_is_deleted_on_cancellation() -> None:
    """SIGTERM (cancellation) during the long poll deletes the session, then propagates."""
    opener = Opener(FakeSession([Message(message_id=1, statistics=Stats(total_assigned_jobs=2))]))
    kube = FakeKube()
    kube.add(runner_set())
    task = asyncio.create_task(new_app(opener, kube).run(), name="listener-app")
    await asyncio.wait_for(opener.session.polling.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert opener.session.closed
    assert [p["spec"] for p in kube.patches()] == [{"patchID": 0, "replicas": 1}, {"patchID": 1, "replicas": 3}]


async def test_a_held_back_repeat_goes_out_during_the_long_poll_and_its_timer_stops_with_the_app() -> None:
    """The scaler's republish timer sends a held-back repeat while the loop waits in the long poll;
    a timer still armed when the app stops is cancelled with it (no task outlives the run)."""
    script = [Message(message_id=1, statistics=Stats(total_assigned_jobs=2)), None, None]
    opener = Opener(FakeSession(script))
    kube = FakeKube()
    kube.add(runner_set())
    fourth_patch = asyncio.Event()
    kube.on_patch.extend([lambda: None, lambda: None, lambda: None, fourth_patch.set])
    app = ListenerApp(config(), open_session=opener, kube=kube, hostname="pod-1", republish_interval=0.2)
    task = asyncio.create_task(app.run(), name="listener-app")
    await asyncio.wait_for(opener.session.polling.wait(), 5)
    sent = [{"patchID": 0, "replicas": 1}, {"patchID": 1, "replicas": 3}, {"patchID": 2, "replicas": 3}]
    assert [p["spec"] for p in kube.patches()] == sent  # the second empty poll was held back
    await asyncio.wait_for(fourth_patch.wait(), 5)  # no message comes: the timer sends it
    assert kube.patches()[3]["spec"] == {"patchID": 3, "replicas": 3}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert opener.session.closed


async def test_the_republish_timer_is_cancelled_when_the_app_stops() -> None:
    script = [Message(message_id=1, statistics=Stats(total_assigned_jobs=2)), None, None]
    opener = Opener(FakeSession(script))
    app = ListenerApp(config(), open_session=opener, kube=_kube(), hostname="pod-1", republish_interval=60.0)
    task = asyncio.create_task(app.run(), name="listener-app")
    await asyncio.wait_for(opener.session.polling.wait(), 5)
    timers = [t for t in asyncio.all_tasks() if t.get_name() == "listener-republish"]
    assert len(timers) == 1
    assert not timers[0].done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert timers[0].cancelled()


def _kube() -> FakeKube:
    kube = FakeKube()
    kube.add(runner_set())
    return kube


async def test_session_create_failure_has_nothing_to_delete() -> None:
    """A refused session (e.g. 409: another live session) is an AppError; no delete is attempted."""
    opener = Opener(error=RuntimeError("409 conflict"))
    with pytest.raises(AppError, match="failed to create actions message session client: 409 conflict"):
        await new_app(opener).run()
    assert not opener.session.closed


async def test_invalid_config_url_is_reported_before_any_call() -> None:
    """A config URL without a scope fails before the session is opened."""
    opener = Opener()
    with pytest.raises(AppError, match="failed to parse GitHub config from URL"):
        await new_app(opener, configure_url="https://github.com").run()
    assert opener.owners == []


async def test_metrics_bind_failure_stops_the_loop_and_deletes_the_session() -> None:
    """If the metrics address cannot be bound, the run fails and the session is still deleted."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        opener = Opener()
        with pytest.raises(OSError, match=str(port)):
            await new_app(opener, metrics_addr=f"127.0.0.1:{port}").run()
    assert opener.session.closed


async def test_failing_session_delete_is_only_logged() -> None:
    """A delete that fails at exit does not hide the loop's error."""

    class BadClose(FakeSession):
        async def close(self) -> None:
            raise RuntimeError("delete refused")

    opener = Opener(BadClose([ConnectionResetError("dropped")]))
    with pytest.raises(ListenerError, match="dropped"):
        await new_app(opener).run()
