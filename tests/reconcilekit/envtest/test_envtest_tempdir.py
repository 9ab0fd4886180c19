"""Envtest folders record their owner; a start sweeps only the folders of processes that are gone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from reconcilekit.envtest._tempdir import OWNER_FILE, make_owned_root, process_start_time, sweep_orphans


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
    dead = folder(tmp_path, "dead", {"pid": child.pid, "start": "1", "host": host})
    reused = folder(tmp_path, "reused", {"pid": me, "start": "-1", "host": host})  # our pid, another start
    live = folder(tmp_path, "live", {"pid": me, "start": process_start_time(me), "host": host})
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
    dead = folder(tmp_path, "dead", {"pid": child.pid, "start": None, "host": socket.gethostname()})
    root = make_owned_root(str(tmp_path))
    assert not dead.exists()
    owner = json.loads((root / OWNER_FILE).read_text())
    assert owner["pid"] == os.getpid()
    assert owner["start"] == process_start_time(os.getpid())
    assert sweep_orphans(str(tmp_path)) == []  # our own folder stays
    assert root.exists()
