"""One control-plane child process: start it, wait until healthy, stop it, never orphan it.

Each child runs in its own session (its own process group), so a Ctrl-C in the
terminal reaches only us and we stop the children in the right order; its
stdout and stderr go to a log file whose last lines explain a failed start.
On Linux the child also gets ``SIGKILL`` as its parent-death signal (through
util-linux ``setpriv`` when present), so even a killed test runner leaves no
etcd or kube-apiserver behind.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/testing/process/process.go (State)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import structlog

__all__ = [
    "LOG_TAIL_LINES",
    "ControlPlaneProcess",
    "ProcessExitedError",
    "ProcessStartTimeoutError",
    "log_tail",
]

LOG_TAIL_LINES = 50
"""How many of a child's last log lines a start error carries."""

_POLL_SECONDS = 0.1
"""Seconds between two health checks, as upstream."""

_log = structlog.get_logger(__name__)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of the log at ``path`` (``""`` if it does not exist).

    Python only: the fail-fast message of a child that died while starting
    """
    try:
        with path.open("r", errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except FileNotFoundError:
        return ""


class ProcessExitedError(RuntimeError):
    """A child exited while we waited for it to become healthy.

    Python only: upstream reports it from its health-check loop.
    """

    def __init__(self, name: str, returncode: int, tail: str) -> None:
        super().__init__(f"{name} exited with code {returncode} before it was ready; last log lines:\n{tail}")
        self.name = name
        """The binary's name."""
        self.returncode = returncode
        """Its exit code (negative: killed by that signal)."""
        self.tail = tail
        """Its last log lines."""

    @property
    def port_clash(self) -> bool:
        """Whether the log says a port was taken, the one failure a retry on fresh ports fixes.

        Python only
        """
        return "address already in use" in self.tail.lower()


class ProcessStartTimeoutError(TimeoutError):
    """A child did not become healthy in time.

    Ports: process.State.Start's timeout error
    """


def _parent_death_prefix() -> list[str]:
    """Return ``setpriv --pdeathsig KILL --`` where it exists (Linux), else nothing.

    Python only: Go's envtest relies on the test binary's own clean-up; a
    Python test runner can be killed without running ``atexit``.
    """
    if not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


class ControlPlaneProcess:
    """A child process with a health check, started and stopped by asyncio.

    Args:
        name: The binary's name, for messages and logs.
        argv: The full command line, binary first.
        log_path: File that receives the child's stdout and stderr (appended).
        health_check: Coroutine function returning whether the child serves.

    Ports: process.State
    """

    def __init__(
        self,
        *,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        health_check: Callable[[], Awaitable[bool]],
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._health_check = health_check
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        """The child's pid while one was started and not yet reaped by `stop`, else ``None``.

        Python only
        """
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether a started child has not exited yet.

        Python only
        """
        return self._proc is not None and self._proc.returncode is None

    async def start(self, *, ready_within: float) -> None:
        """Start the child and return once its health check passes.

        Args:
            ready_within: Seconds to wait for health, from the moment of spawning.

        Raises:
            ProcessExitedError: the child exited first (its log tail attached).
            ProcessStartTimeoutError: no health within ``ready_within`` (the child is stopped).

        Ports: process.State.Start
        """
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        with self.log_path.open("ab") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *_parent_death_prefix(),
                *self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _log.debug("started control-plane process", process=self.name, pid=self._proc.pid, log=str(self.log_path))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ready_within
        try:
            while True:
                if self._proc.returncode is not None:
                    code = self._proc.returncode
                    self._proc = None
                    raise ProcessExitedError(self.name, code, log_tail(self.log_path))
                if await self._health_check():
                    return
                if loop.time() >= deadline:
                    tail = log_tail(self.log_path)
                    raise ProcessStartTimeoutError(
                        f"{self.name} was not ready after {ready_within:.0f} s; last log lines:\n{tail}"
                    )
                await asyncio.sleep(_POLL_SECONDS)
        except BaseException:
            await self.stop(grace_period=5.0)
            raise

    def _signal(self, sig: int) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    async def stop(self, *, grace_period: float) -> bool:
        """Send SIGTERM to the child's process group, wait up to ``grace_period`` seconds, then SIGKILL.

        Safe to call when the child never started or already exited.

        Returns:
            ``True`` if it exited on SIGTERM (or was not running), ``False`` if it needed SIGKILL.

        Ports: process.State.Stop
        """
        proc = self._proc
        if proc is None:
            return True
        graceful = True
        if proc.returncode is None:
            self._signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(grace_period):
                    await proc.wait()
            except TimeoutError:
                graceful = False
                _log.warning("control-plane process ignored SIGTERM, killing it", process=self.name, pid=proc.pid)
                self._signal(signal.SIGKILL)
                await proc.wait()
        self._proc = None
        return graceful

    def kill_sync(self, *, grace_period: float) -> None:
        """Stop the child without an event loop: for ``atexit``, when the loop is gone.

        SIGTERM, then poll up to ``grace_period`` seconds, then SIGKILL.

        Python only
        """
        proc = self._proc
        if proc is None:
            return
        pid = proc.pid
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_period
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        self._signal(signal.SIGKILL)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.01)
        # Mark asyncio's transport closed (it polls the Popen, which learns the exit), so
        # neither warns "still running" when collected after the loop is gone.
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        self._proc = None


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs; reaps it if it is our exited child.

    Python only: the atexit path has no event loop to reap children
    """
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # already reaped (by asyncio's child watcher) or not our child
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return not _is_zombie(pid)
    return reaped == 0


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"
