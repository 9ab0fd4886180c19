"""Envtest's temporary folders: each records its owner, and a start sweeps those whose owner is gone.

A folder (certificates, etcd's data, logs, kubeconfigs) is removed by `Environment.stop` or,
failing that, at interpreter exit; a SIGKILLed process does neither. So every folder holds
an ``owner`` file (pid, the process's start time, host, PID namespace, boot id), and each
start removes the ``envtest-*`` folders of the temporary directory whose owner process no
longer exists.

Never another live process's folder: a folder is swept only when its ``owner`` file can be
read and names a process on this host that is gone, or whose pid now belongs to a process
started at another time (pid reuse). A pid means something only in its PID namespace (under
``unshare -p -f`` a process is pid 1; two containers sharing ``/tmp`` each have their own
pids), so a folder whose owner ran in another PID namespace, or does not say which, is left
alone, unless its boot id differs from ours: then the machine rebooted since and the owner is
certainly gone. A folder without an owner file (being created, or another tool's) is left
alone, and so is one owned by another user.

Python only: upstream's envtest leaves a SIGKILLed run's folder behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

import structlog

__all__ = ["OWNER_FILE", "PREFIX", "boot_id", "make_owned_root", "owner_alive", "pid_namespace", "sweep_orphans"]

PREFIX = "envtest-"
"""Prefix of every folder envtest makes in the temporary directory."""
OWNER_FILE = "owner"
"""The file in each folder that names the process that made it."""

_log = structlog.get_logger(__name__)


def process_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc``), else ``None``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5), counted after the comm field


def pid_namespace() -> str | None:
    """This process's PID namespace (``pid:[4026531836]``, Linux), else ``None``."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def boot_id() -> str | None:
    """This boot's id (Linux ``/proc/sys/kernel/random/boot_id``), else ``None``."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(owner: dict[str, object]) -> bool:
    """Whether the process an ``owner`` record names still runs (an unreadable record counts as alive)."""
    pid, start = owner.get("pid"), owner.get("start")
    if not isinstance(pid, int) or pid <= 0 or owner.get("host") != socket.gethostname():
        return True
    ours = boot_id()
    if isinstance(owner.get("boot"), str) and ours is not None and owner["boot"] != ours:
        return False  # made before the last reboot: no process of that boot runs
    namespace = pid_namespace()
    if namespace is None or owner.get("pidns") != namespace:
        return True  # its pid names another namespace's process (or we cannot tell which)
    if not _pid_exists(pid):
        return False
    return start is None or process_start_time(pid) in (None, start)


def make_owned_root(base: str | None = None) -> Path:
    """Sweep orphans, then make a private ``envtest-*`` folder owned by this process (blocking)."""
    sweep_orphans(base)
    root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    owner = {
        "pid": os.getpid(),
        "start": process_start_time(os.getpid()),
        "host": socket.gethostname(),
        "pidns": pid_namespace(),
        "boot": boot_id(),
    }
    (root / OWNER_FILE).write_text(json.dumps(owner))
    return root


def sweep_orphans(base: str | None = None) -> list[Path]:
    """Remove the ``envtest-*`` folders of ``base`` (the temporary directory) whose owner is gone.

    Returns:
        The folders removed.
    """
    folder = Path(base or tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        candidates = [p for p in folder.iterdir() if p.name.startswith(PREFIX)]
        for path in candidates:
            try:
                if not path.is_dir() or path.is_symlink() or path.stat().st_uid != os.getuid():
                    continue
                owner = json.loads((path / OWNER_FILE).read_text())
            except (OSError, ValueError):
                continue
            if isinstance(owner, dict) and not owner_alive(owner):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
                _log.info("removed an envtest folder left by a killed process", path=str(path), pid=owner.get("pid"))
    return removed
