"""The simulated system's processes seen from outside: ``arc-controller`` as a process, RSS and CPU sampling.

`ControllerProcess` runs the controller manager as ``arc-controller`` (the command the
chart's image runs) instead of in arc-sim's process, so that its CPU seconds and memory
are its own. `ProcessSampler` reads ``/proc/<pid>/stat`` and ``/proc/<pid>/status`` of the
processes it is told about (the controller, every listener) on a fixed cadence and keeps,
per role, the CPU seconds used and the peak RSS.

Python only: benchmark machinery of the simulator; Linux only (``/proc``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "ControllerProcess",
    "ProcessReading",
    "ProcessSampler",
    "RoleFigures",
    "base_environ",
    "controller_argv",
    "parse_proc",
    "read_process",
    "terminate",
]

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclasses.dataclass(frozen=True, slots=True)
class ProcessReading:
    """One process at one instant."""

    cpu_seconds: float
    """User plus system CPU seconds since the process started."""
    rss_bytes: int
    """Resident set size now (VmRSS)."""
    peak_rss_bytes: int
    """The highest resident set size so far (VmHWM)."""


def parse_proc(stat: str, status: str) -> ProcessReading:
    """A `ProcessReading` from the text of ``/proc/<pid>/stat`` and ``/proc/<pid>/status``.

    Raises:
        ValueError: the text is not what Linux writes there.
    """
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    kib: dict[str, int] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            kib[key] = int(value.split()[0])
    rss = kib.get("VmRSS", 0) * 1024
    return ProcessReading((utime + stime) / _CLOCK_TICKS, rss, max(rss, kib.get("VmHWM", 0) * 1024))


def read_process(pid: int) -> ProcessReading | None:
    """The process's CPU seconds and memory now; ``None`` when it has gone.

    Blocking (reads two small ``/proc`` files): cheap enough for the event loop.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            status = f.read()
    except OSError:
        return None
    return parse_proc(stat, status)


@dataclasses.dataclass(slots=True)
class RoleFigures:
    """What the sampler has seen of one role's processes (``controller``, ``listener``)."""

    cpu_seconds: dict[int, float] = dataclasses.field(default_factory=dict)
    """The last CPU seconds read, by pid (a process that ended keeps its last reading)."""
    baseline: dict[int, float] = dataclasses.field(default_factory=dict)
    """CPU seconds at `ProcessSampler.mark` (0 for a process started after it), by pid."""
    peak_rss_bytes: dict[int, int] = dataclasses.field(default_factory=dict)
    """The highest RSS read, by pid."""
    rss_bytes: dict[int, int] = dataclasses.field(default_factory=dict)
    """The last RSS read of the processes still running, by pid."""
    peak_total_rss_bytes: int = 0
    """The highest sum of RSS over the role's processes at one sample."""

    @property
    def processes(self) -> int:
        """How many processes of this role were seen."""
        return len(self.cpu_seconds)

    @property
    def cpu_since_mark(self) -> float:
        """CPU seconds used by the role's processes since `ProcessSampler.mark`."""
        return sum(cpu - self.baseline.get(pid, 0.0) for pid, cpu in self.cpu_seconds.items())

    @property
    def peak_rss(self) -> int:
        """The highest RSS of any one of the role's processes."""
        return max(self.peak_rss_bytes.values(), default=0)


class ProcessSampler:
    """Samples the processes ``pids()`` names, by role, every ``interval`` seconds until stopped.

    Python only: see the module docstring.
    """

    def __init__(self, pids: Callable[[], Mapping[str, Sequence[int]]], *, interval: float = 0.25) -> None:
        self._pids = pids
        self._interval = interval
        self.roles: dict[str, RoleFigures] = {}
        self._marked = False
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> None:
        """Read every process now."""
        for role, pids in self._pids().items():
            figures = self.roles.setdefault(role, RoleFigures())
            total = 0
            running: dict[int, int] = {}
            for pid in pids:
                reading = read_process(pid)
                if reading is None:
                    continue
                if pid not in figures.cpu_seconds and not self._marked:
                    figures.baseline[pid] = reading.cpu_seconds
                figures.cpu_seconds[pid] = reading.cpu_seconds
                figures.peak_rss_bytes[pid] = max(figures.peak_rss_bytes.get(pid, 0), reading.peak_rss_bytes)
                running[pid] = reading.rss_bytes
                total += reading.rss_bytes
            figures.rss_bytes = running
            figures.peak_total_rss_bytes = max(figures.peak_total_rss_bytes, total)

    def mark(self) -> None:
        """Start the CPU count now: `RoleFigures.cpu_since_mark` counts from here."""
        self.sample()
        for figures in self.roles.values():
            figures.baseline = dict(figures.cpu_seconds)
        self._marked = True

    async def _loop(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self._interval)

    def start(self) -> None:
        """Sample in an owned background task."""
        self._task = asyncio.create_task(self._loop(), name="process-sampler")

    async def stop(self) -> None:
        """Take a last sample and stop the task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.sample()


def base_environ() -> dict[str, str]:
    """The parts of our environment a child process needs (PATH, HOME, locale, proxies off loopback)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


async def terminate(proc: asyncio.subprocess.Process, grace: float = 10.0) -> None:
    """SIGTERM ``proc``, then SIGKILL it after ``grace`` seconds; return once it has exited."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


def controller_argv() -> list[str]:
    """``arc-controller`` next to this interpreter, else ``python -m arc_controllers.cmd.manager``."""
    script = Path(sys.executable).parent / "arc-controller"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from arc_controllers.cmd.manager import main; sys.exit(main())"]


class ControllerProcess:
    """``arc-controller`` as a child process with the given flags, environment and kubeconfig.

    Has `InProcessController`'s ``start``/``stop``/``failure``; it counts no requests itself
    (`request_counts` is empty: count them at the API server, e.g. with an audit log).

    Python only: see the module docstring.
    """

    def __init__(
        self,
        argv: Sequence[str],
        environ: Mapping[str, str],
        *,
        kubeconfig: Path,
        log_path: Path,
        command: Sequence[str] | None = None,
    ) -> None:
        self._argv = [*(command or controller_argv()), *argv, f"--kubeconfig={kubeconfig}"]
        self._environ = {**base_environ(), **environ}
        self._log_path = log_path
        self._proc: asyncio.subprocess.Process | None = None
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """The running process's id, or ``None``."""
        return self._proc.pid if self._proc is not None and self._proc.returncode is None else None

    async def start(self) -> None:
        """Start the process; its output goes to the log file (appended)."""
        logfile = await asyncio.to_thread(open, self._log_path, "ab")
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._argv, env=self._environ, stdout=logfile, stderr=logfile
            )
        finally:
            logfile.close()
        self.starts += 1

    def failure(self) -> BaseException | None:
        """An error when the process ended by itself."""
        if self._proc is None or self._proc.returncode is None:
            return None
        return RuntimeError(f"arc-controller exited with status {self._proc.returncode} (see {self._log_path})")

    def request_counts(self) -> dict[tuple[str, str], int]:
        """Empty: a process's requests are counted at the API server."""
        return {}

    async def stop(self, grace: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds."""
        proc, self._proc = self._proc, None
        if proc is not None:
            await terminate(proc, grace)
