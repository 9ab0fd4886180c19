"""Run a script under cProfile timed by the process's CPU time (user + sys), not the wall clock.

``python benchmarks/_cpu_profile.py OUT SCRIPT [ARGS...]`` runs ``SCRIPT`` as ``__main__`` with
``ARGS`` and writes its profile to ``OUT`` when it exits (normally, by `SystemExit` or by an
exception). On a shared machine a wall-clock profile charges a function for the time the
process sat preempted inside it (a loopback ``send`` that wakes the API server looks like a
millisecond); a CPU-time profile charges only what this process ran. The timer is
`time.process_time` (seconds), which costs about a microsecond per call, so the profiled
process runs slower than it would.

Python only: a benchmark tool.
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    """Profile ``sys.argv[2]`` with ``sys.argv[3:]`` and write the stats to ``sys.argv[1]``."""
    if len(sys.argv) < 3:
        raise SystemExit("usage: python benchmarks/_cpu_profile.py OUT SCRIPT [ARGS...]")
    out, script = sys.argv[1], sys.argv[2]
    sys.argv = sys.argv[2:]
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        profile.disable()
        profile.dump_stats(out)


if __name__ == "__main__":
    main()
