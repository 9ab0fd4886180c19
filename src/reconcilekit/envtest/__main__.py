"""Run a control plane by hand: ``python -m reconcilekit.envtest [--crd PATH]...``.

Starts etcd and kube-apiserver, prints the kubeconfig path and a kubectl line
to try, and runs until SIGINT or SIGTERM, then stops cleanly. Exits 1 with one
readable line when the control plane cannot start (e.g. binaries not built).

Python only: upstream has no runner; ``setup-envtest`` only fetches binaries.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

__all__ = ["main"]


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reconcilekit.envtest",
        description="Start a local kube-apiserver and etcd (envtest) until interrupted.",
    )
    parser.add_argument(
        "--crd",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="CRD file or folder to install at start (repeatable)",
    )
    return parser.parse_args(argv)


async def _run(crd_paths: Sequence[Path]) -> int:
    from reconcilekit.envtest._environment import Environment

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with Environment(crd_paths=crd_paths) as env:
            print(f"envtest: kube-apiserver {env.server} (etcd {env.etcd_url})", flush=True)
            print(f"envtest: kubeconfig {env.kubeconfig_path}", flush=True)
            print(
                f"envtest: try `kubectl --kubeconfig {env.kubeconfig_path} get ns` "
                "(kubectl is not bundled: install it yourself)",
                flush=True,
            )
            print(
                f"envtest: started in {env.start_durations.get('total', 0.0):.1f} s; Ctrl-C or SIGTERM stops it",
                flush=True,
            )
            await stop.wait()
            print("envtest: stopping", flush=True)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    print("envtest: stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code.

    Python only
    """
    args = _parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    from reconcilekit.envtest._binaries import BinaryNotFoundError
    from reconcilekit.envtest._controlplane import ControlPlaneStartError
    from reconcilekit.envtest._crd import CRDInstallError
    from reconcilekit.envtest._kubeconfig import KubeconfigError

    try:
        return asyncio.run(_run(args.crd))
    except (BinaryNotFoundError, ControlPlaneStartError, CRDInstallError, KubeconfigError, ValueError) as err:
        # ValueError: a malformed setting such as KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=abc.
        print(f"envtest: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
