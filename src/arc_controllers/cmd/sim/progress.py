"""The live progress view: one line per second, rewritten in place on a terminal.

On a TTY the line is redrawn (``\\r``); elsewhere (CI logs, pipes) each second is its
own line, so the log reads as a time series.

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

from typing import TextIO

from arc_controllers.cmd.sim.report import RUNNER_PHASES, Sample

__all__ = ["Progress", "format_sample"]


def format_sample(sample: Sample, *, jobs_total: int) -> str:
    """``t=  12s  runners 7 [Pending 2 Running 5]  jobs queued 3 running 5 done 11/20``."""
    phases = " ".join(f"{p} {sample.runners[p]}" for p in RUNNER_PHASES if sample.runners.get(p))
    return (
        f"t={sample.t:5.0f}s  runners {sample.runners_total:3d} [{phases}]  "
        f"jobs queued {sample.jobs_queued} running {sample.jobs_running} done {sample.jobs_done}/{jobs_total}"
        + (f" ({sample.jobs_failed} failed)" if sample.jobs_failed else "")
    )


class Progress:
    """Writes samples to ``stream``; a terminal gets one line redrawn, anything else a line each."""

    def __init__(self, stream: TextIO, *, jobs_total: int, tty: bool | None = None) -> None:
        self._stream = stream
        self._jobs_total = jobs_total
        self._tty = stream.isatty() if tty is None else tty
        self._open_line = False

    def show(self, sample: Sample) -> None:
        """Print ``sample``."""
        line = format_sample(sample, jobs_total=self._jobs_total)
        if self._tty:
            self._stream.write("\r\x1b[K" + line)
            self._open_line = True
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def note(self, text: str) -> None:
        """Print a message on its own line (events, faults), keeping the live line intact."""
        self.finish()
        self._stream.write(text + "\n")
        self._stream.flush()

    def finish(self) -> None:
        """End the live line."""
        if self._open_line:
            self._stream.write("\n")
            self._stream.flush()
            self._open_line = False
