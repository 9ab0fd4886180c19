"""``arc-fake-actions --port N``: run the fake Actions service until interrupted.

Prints the config URL and the PAT to use; the App credentials are served at
``/_fake/credentials``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

import structlog

from arc_controllers.actions.fake import FakeActionsService

__all__ = ["main"]

_DESCRIPTION = "Run the fake GitHub Actions service on loopback until interrupted (Ctrl-C or SIGTERM)."
_EPILOG = (
    "On start it prints its URL, the config URL and the personal access token to use; the GitHub App "
    "credentials are served at /_fake/credentials. Jobs, runners, faults and token expiry are driven "
    "through the /_fake/ control API (see the README)."
)


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is outside 0..65535")
    return port


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(prog="arc-fake-actions", description=_DESCRIPTION, epilog=_EPILOG)
    parser.add_argument("--port", type=_port, default=8080, help="TCP port (0 picks a free one); default 8080")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on; default 127.0.0.1")
    parser.add_argument("--poll-hold", type=float, default=50.0, help="seconds a long poll waits; default 50")
    parser.add_argument(
        "--admin-token-ttl", type=float, default=3600.0, help="admin token lifetime in seconds; default 3600"
    )
    parser.add_argument(
        "--organization",
        default="my-org",
        help="organization of the config URL (printed, and served at /_fake/credentials); default my-org",
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    """Run until SIGINT or SIGTERM."""
    service = FakeActionsService(
        host=args.host,
        port=args.port,
        poll_hold=args.poll_hold,
        admin_token_ttl=args.admin_token_ttl,
        organization=args.organization,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with service:
        print(f"fake Actions service at {service.url}", flush=True)
        print(f"config URL: {service.config_url()}", flush=True)
        print(f"github_token: {service.github.pat}", flush=True)
        print(f"GitHub App credentials: {service.url}/_fake/credentials", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Run the fake; return the exit code (2 for bad arguments)."""
    args = _parse(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        asyncio.run(_serve(args))
    except ValueError as err:
        print(f"arc-fake-actions: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"arc-fake-actions: cannot listen on {args.host}:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
