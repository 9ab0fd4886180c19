"""Free loopback ports, reserved for a while so parallel suites on one machine do not collide.

A port is suggested by binding ``127.0.0.1:0`` and closing the socket, then
reserved by writing ``<cache>/ports/port-<n>`` under an exclusive ``flock``;
another suite skips a port whose file is younger than two minutes. The window
between closing the socket and the child binding the port remains: the
caller retries the whole start when a child reports "address already in use".

Ports: sigs.k8s.io/controller-runtime/pkg/internal/testing/addr/manager.go (Suggest)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path

__all__ = ["RESERVATION_SECONDS", "suggest_port"]

RESERVATION_SECONDS = 120.0
"""Seconds a suggested port stays reserved against other suites, as upstream."""

_MAX_TRIES = 100


def _reservation_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "reconcilekit" / "envtest" / "ports"


def _reserve(directory: Path, port: int) -> bool:
    """Reserve ``port`` for `RESERVATION_SECONDS`; ``False`` when another suite holds it.

    Ports: addr.reservePort
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / f"port-{port}", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return True  # no writable cache: fall back to the bare suggestion, as the retry covers clashes
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        info = os.fstat(fd)
        if info.st_size > 0 and time.time() - info.st_mtime < RESERVATION_SECONDS:
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return True
    except BlockingIOError:
        return False
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def suggest_port(host: str = "127.0.0.1") -> int:
    """Return a port on ``host`` that was free a moment ago and is now reserved (blocking, brief).

    Raises:
        OSError: no free port after 100 tries.

    Ports: addr.Suggest
    """
    directory = _reservation_dir()
    for _ in range(_MAX_TRIES):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if _reserve(directory, port):
            return port
    raise OSError(f"no free port on {host} after {_MAX_TRIES} tries")
