"""Envtest folders record their owner; a start sweeps only the folders of processes that are gone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from reconcilekit.envtest._tempdir import (
    OWNER_FILE,
    boot_id,
    make_owned_root,
    pid_namespace,
    process_start_time,
    sweep_orphans,
)


def folder(base: Path, name: str, owner: dict[str, object] | None) -> Path:
    path = base / f"envtest-{name}"
    path.mkdir()
    (path / "etcd").mkdir()
    if owner is not None:
        (path / OWNER_FILE).write_text(json.dumps(owner))
    return path


def test_only_folders_of_gone_processes_are_swept(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    host, me = socket.gethostname(), os.getpid()
    here = {"host": host, "pidns": pid_namespace(), "boot": boot_id()}
    dead = folder(tmp_path, "dead", {"pid": child.pid, "start": "1", **here})
    reused = folder(tmp_path, "reused", {"pid": me, "start": "-1", **here})  # our pid, another start
    live = folder(tmp_path, "live", {"pid": me, "start": process_start_time(me), **here})
    creating = folder(tmp_path, "creating", None)  # no owner file yet: never swept
    elsewhere = folder(tmp_path, "elsewhere", {"pid": child.pid, "start": "1", "host": "another-host"})
    garbled = folder(tmp_path, "garbled", None)
    (garbled / OWNER_FILE).write_text("{not json")
    other = tmp_path / "not-envtest"
    other.mkdir()

    removed = sweep_orphans(str(tmp_path))

    assert sorted(removed) == sorted([dead, reused])
    assert not dead.exists()
    assert not reused.exists()
    for kept in (live, creating, elsewhere, garbled, other):
        assert kept.exists()


def test_a_new_root_names_this_process_and_sweeps_first(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    here = {"host": socket.gethostname(), "pidns": pid_namespace(), "boot": boot_id()}
    dead = folder(tmp_path, "dead", {"pid": child.pid, "start": None, **here})
    root = make_owned_root(str(tmp_path))
    assert not dead.exists()
    owner = json.loads((root / OWNER_FILE).read_text())
    assert owner["pid"] == os.getpid()
    assert owner["start"] == process_start_time(os.getpid())
    assert owner["pidns"] == pid_namespace()
    assert owner["boot"] == boot_id()
    assert sweep_orphans(str(tmp_path)) == []  # our own folder stays
    assert root.exists()


def test_a_folder_of_another_pid_namespace_is_kept_unless_the_machine_rebooted_issue_16(tmp_path: Path) -> None:
    """Under ``unshare -p -f`` a live owner is pid 1 of its own namespace: here that pid is gone or another process.

    Fabricated owners with a pid that is dead in our namespace: the one recorded in another
    PID namespace (or in none) is kept; one from another boot is swept whatever its namespace.
    """
    assert pid_namespace() is not None, "Linux /proc is needed"
    assert boot_id() is not None
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    host, boot = socket.gethostname(), boot_id()
    unshared = folder(
        tmp_path, "unshared", {"pid": child.pid, "start": "1", "host": host, "pidns": "pid:[1]", "boot": boot}
    )
    pid_one = folder(tmp_path, "pid-one", {"pid": 1, "start": "1", "host": host, "pidns": "pid:[1]", "boot": boot})
    unrecorded = folder(tmp_path, "unrecorded", {"pid": child.pid, "start": "1", "host": host})  # an older record
    rebooted = folder(
        tmp_path, "rebooted", {"pid": child.pid, "start": "1", "host": host, "pidns": "pid:[1]", "boot": "another-boot"}
    )

    removed = sweep_orphans(str(tmp_path))

    assert removed == [rebooted]
    for kept in (unshared, pid_one, unrecorded):
        assert kept.exists()
