"""Stop on SIGTERM or SIGINT: the first signal starts a graceful stop, a second one exits.

Ports: sigs.k8s.io/controller-runtime/pkg/manager/signals (signal.go SetupSignalHandler)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import structlog

from reconcilekit.manager.interfaces import Manager

__all__ = ["SHUTDOWN_SIGNALS", "run_until_signalled", "setup_signal_handler"]

log = structlog.get_logger(__name__)

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop a manager."""


def setup_signal_handler() -> asyncio.Event:
    """An event set by the first SIGTERM/SIGINT; the second one exits the process with code 1.

    Call once, from the running loop, in ``main``.

    Ports: signals.SetupSignalHandler
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            with contextlib.suppress(Exception):  # a closed stderr must not keep the process alive
                log.warning("second signal, exiting now", signal=signal.Signals(signum).name)
            os._exit(1)
        stop.set()  # before logging: a log write that fails (stderr a closed pipe) must not eat the stop
        with contextlib.suppress(Exception):
            log.info("signal received, stopping", signal=signal.Signals(signum).name)

    for sig in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    return stop


async def run_until_signalled(manager: Manager, stop: asyncio.Event | None = None) -> None:
    """Run ``manager`` until it stops by itself or ``stop`` (default: a signal) is set.

    Raises:
        whatever `Manager.start` raises (e.g. ``LeaderElectionLostError``).

    Python only: the ``mgr.Start(ctrl.SetupSignalHandler())`` line of a Go main.
    """
    stop = stop if stop is not None else setup_signal_handler()
    run = asyncio.create_task(manager.start(), name="manager")
    waiter = asyncio.create_task(stop.wait(), name="manager-stop-signal")
    try:
        await asyncio.wait({run, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not run.done():
            run.cancel()
        try:
            await run
        except asyncio.CancelledError:
            if not stop.is_set():
                raise
        await asyncio.gather(waiter, return_exceptions=True)
