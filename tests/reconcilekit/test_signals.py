"""SIGTERM stops a manager cleanly through run_until_signalled."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from reconcilekit.manager import Options, new_manager, run_until_signalled, setup_signal_handler
from reconcilekit.manager.signals import SHUTDOWN_SIGNALS
from reconcilekit.testing import FakeClient


async def test_sigterm_stops_the_manager() -> None:
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=FakeClient())
    loop = asyncio.get_running_loop()
    stop = setup_signal_handler()
    try:
        run = asyncio.create_task(run_until_signalled(mgr, stop))
        await asyncio.wait_for(mgr.elected().wait(), 5)
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(run, 35)  # returns without error within the grace period
        assert stop.is_set()
    finally:
        for sig in SHUTDOWN_SIGNALS:
            loop.remove_signal_handler(sig)


async def test_manager_that_stops_by_itself_ends_the_run() -> None:
    class Failing:
        def need_leader_election(self) -> bool:
            return False

        async def start(self) -> None:
            raise RuntimeError("cannot run")

    mgr = new_manager(None, Options(metrics_bind_address="0"), client=FakeClient())
    mgr.add(Failing())
    stop = asyncio.Event()
    with pytest.raises(RuntimeError, match="cannot run"):
        await asyncio.wait_for(run_until_signalled(mgr, stop), 5)


async def test_a_failing_log_write_does_not_eat_the_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr a closed pipe (``arc-controller ... | head -1``): SIGTERM still stops the manager."""
    import reconcilekit.manager.signals as signals_module

    class BrokenLog:
        def info(self, *args: object, **kwargs: object) -> None:
            raise BrokenPipeError(32, "Broken pipe")

        warning = info

    monkeypatch.setattr(signals_module, "log", BrokenLog())
    loop = asyncio.get_running_loop()
    stop = setup_signal_handler()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stop.wait(), 5)
    finally:
        for sig in SHUTDOWN_SIGNALS:
            loop.remove_signal_handler(sig)
