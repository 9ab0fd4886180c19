"""podman_kubelet's own behaviour that needs no podman: how a vanished container fails a test."""

from __future__ import annotations

import sys

import pytest

from .podman_kubelet import Container


async def test_a_process_gone_before_proc_is_read_fails_with_its_output_and_status() -> None:
    """The race `Container.pid` leaves: the process exits before /proc/<pid>/status is read.

    The failure names the exit status and shows the container's output (a bare
    FileNotFoundError showed neither).
    """
    container = await Container.start(
        "short-lived", sys.executable, "-c", "import sys; print('bad flag: --bogus', file=sys.stderr); sys.exit(3)"
    )
    pid = container.proc.pid
    await container.proc.wait()  # reaped: /proc/<pid> is gone
    with pytest.raises(pytest.fail.Exception) as failed:
        await container.host_identity(pid)
    assert "exit status 3" in str(failed.value)
    assert "bad flag: --bogus" in str(failed.value)
