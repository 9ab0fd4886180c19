"""Child processes of the harness: fail fast with their log, stop with SIGTERM then SIGKILL, reserve ports."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from reconcilekit.envtest._ports import _reserve, suggest_port
from reconcilekit.envtest._process import ControlPlaneProcess, ProcessExitedError, ProcessStartTimeoutError


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "child.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


async def _never() -> bool:
    return False


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_early_exit_fails_fast_with_the_last_log_lines(tmp_path: Path) -> None:
    """A child that dies before it is healthy raises at once with the tail of its log, 50 lines at most."""
    argv = _script(
        tmp_path,
        """
        import sys
        for i in range(80):
            print(f"line {i}")
        print("listen tcp 127.0.0.1:1234: bind: address already in use")
        sys.exit(3)
        """,
    )
    proc = ControlPlaneProcess(name="child", argv=argv, log_path=tmp_path / "child.log", health_check=_never)
    with pytest.raises(ProcessExitedError) as raised:
        await proc.start(ready_within=60)
    err = raised.value
    assert err.returncode == 3
    assert err.port_clash
    assert len(err.tail.splitlines()) == 50
    assert "line 79" in err.tail
    assert "line 29" not in err.tail
    assert proc.pid is None


async def test_start_timeout_stops_the_child(tmp_path: Path) -> None:
    """A child that never becomes healthy is stopped when the wait times out."""
    argv = _script(tmp_path, "import time\ntime.sleep(60)\n")
    proc = ControlPlaneProcess(name="child", argv=argv, log_path=tmp_path / "child.log", health_check=_never)
    with pytest.raises(ProcessStartTimeoutError, match="not ready"):
        await proc.start(ready_within=0.3)
    assert proc.pid is None


async def test_stop_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    """SIGTERM first; a child that ignores it is killed after the grace period."""
    marker = tmp_path / "ready"
    argv = _script(
        tmp_path,
        f"""
        import pathlib, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pathlib.Path({str(marker)!r}).write_text("up")
        time.sleep(60)
        """,
    )

    async def ready() -> bool:
        return marker.exists()

    proc = ControlPlaneProcess(name="stubborn", argv=argv, log_path=tmp_path / "child.log", health_check=ready)
    await proc.start(ready_within=30)
    pid = proc.pid
    assert pid is not None
    assert await proc.stop(grace_period=0.3) is False
    assert _gone(pid)


async def test_graceful_stop(tmp_path: Path) -> None:
    """A child that exits on SIGTERM reports a graceful stop; stopping again is a no-op."""
    argv = _script(tmp_path, "import time\ntime.sleep(60)\n")

    async def ready() -> bool:
        return True

    proc = ControlPlaneProcess(name="child", argv=argv, log_path=tmp_path / "child.log", health_check=ready)
    await proc.start(ready_within=30)
    pid = proc.pid
    assert pid is not None
    assert await proc.stop(grace_period=10) is True
    assert _gone(pid)
    assert await proc.stop(grace_period=10) is True


def test_kill_sync_works_without_an_event_loop(tmp_path: Path) -> None:
    """The atexit path stops a child with no loop running."""
    import asyncio

    argv = _script(tmp_path, "import time\ntime.sleep(60)\n")

    async def ready() -> bool:
        return True

    proc = ControlPlaneProcess(name="child", argv=argv, log_path=tmp_path / "child.log", health_check=ready)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(proc.start(ready_within=30))
        pid = proc.pid
        assert pid is not None
        proc.kill_sync(grace_period=5)
        assert proc.pid is None
        assert _gone(pid)
    finally:
        loop.close()


def test_a_reserved_port_is_not_handed_out_again(tmp_path: Path) -> None:
    """A port reserved by one suite is refused to the next one for two minutes."""
    assert _reserve(tmp_path, 40000)
    assert not _reserve(tmp_path, 40000)
    assert _reserve(tmp_path, 40001)


def test_suggested_ports_are_distinct_and_bindable() -> None:
    """suggest_port gives different free loopback ports."""
    ports = {suggest_port() for _ in range(3)}
    assert len(ports) == 3
    assert all(1024 < p < 65536 for p in ports)
