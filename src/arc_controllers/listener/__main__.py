"""``arc-listener``: the listener process of one runner scale set.

Reads the config file named by ``LISTENER_CONFIG_PATH``, opens the message
session (recovering as `SESSION_RECOVERY` says; ``LISTENER_SESSION_CONFLICT_RETRY_INTERVAL``
sets the seconds between creates answered 409), and scales the EphemeralRunnerSet until stopped. Exit status is 1
whenever the process ends, SIGTERM and SIGINT included (as upstream's); the
session is deleted first.

Ports: cmd/ghalistener/main.go (main)
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
from collections.abc import Mapping

import structlog

from arc_controllers.actions import (
    ActionsClient,
    GitHubAppAuth,
    PersonalAccessToken,
    SessionRecovery,
    SystemInfo,
    new_client,
)
from arc_controllers.actions.auth import Credentials
from arc_controllers.listener._logging import configure_logging
from arc_controllers.listener.app import ListenerApp, SessionClient, SessionOpener
from arc_controllers.listener.config import ConfigError, ListenerConfig, read_config
from arc_controllers.listener.scaler import DEFAULT_REPUBLISH_INTERVAL
from reconcilekit.client import new_client as new_kube_client
from reconcilekit.config import load_rest_config

__all__ = [
    "CONFLICT_INTERVAL_ENV",
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "REPUBLISH_INTERVAL_ENV",
    "SESSION_RECOVERY",
    "main",
    "rate_limits",
    "republish_interval",
    "session_opener",
    "session_recovery",
]

CONFIG_PATH_ENV = "LISTENER_CONFIG_PATH"
DEFAULT_QPS = 50.0
"""Kubernetes requests per second the scaler may send (upstream's scaler default)."""
DEFAULT_BURST = 100
"""Kubernetes requests the scaler may send at once above `DEFAULT_QPS`."""

SESSION_RECOVERY = SessionRecovery()
"""How the process keeps its session: a 409 on create retried every 30 s up to 10 times, a
forgotten session (404 on refresh) or a 200 poll answer without a message replaced in place.

Beyond: ARC #3209, #4356, #4285: upstream's listener exits and is recreated instead.
"""

CONFLICT_INTERVAL_ENV = "LISTENER_SESSION_CONFLICT_RETRY_INTERVAL"
"""Seconds between session creates answered 409, replacing `SESSION_RECOVERY`'s 30 (arc-sim, tests).

Beyond: ARC #3209: the retry is ours, so is its knob.
"""

REPUBLISH_INTERVAL_ENV = "LISTENER_REPUBLISH_INTERVAL"
"""Seconds an unchanged decision is held back at most, replacing the scaler's
`DEFAULT_REPUBLISH_INTERVAL`; 0 patches on every message and empty poll, as Go does (comparisons).

Beyond: issue 20: the interval is ours, so is its knob.
"""

BUILD_VERSION = "dev"
"""Reported in the User-Agent as ``version``."""

log = structlog.get_logger(__name__)


def main() -> int:
    """Run the listener; return the process exit status (1 on every end, 0 never in practice).

    Ports: main
    """
    path = os.environ.get(CONFIG_PATH_ENV)
    if path is None:
        print(f"Error: {CONFIG_PATH_ENV} environment variable is not set", file=sys.stderr)
        return 1
    try:
        config = read_config(path)
    except ConfigError as err:
        print(f"Failed to read config: {err}", file=sys.stderr)
        return 1
    try:
        recovery = session_recovery(os.environ)
        republish = republish_interval(os.environ)
    except ValueError as err:
        print(f"Failed to read config: {err}", file=sys.stderr)
        return 1
    try:
        configure_logging(config.log_level, config.log_format)
    except ValueError as err:
        print(f"Application returned an error: failed to create logger: {err}", file=sys.stderr)
        return 1
    if config.metrics_addr:
        # Go's client exposes no *_created series; prometheus_client's switch is process-wide,
        # so only the entry point turns it off, and only when metrics are served: without them
        # the process never imports prometheus_client (issue 20).
        from prometheus_client import disable_created_metrics

        disable_created_metrics()  # type: ignore[no-untyped-call]
    return asyncio.run(_run(config, recovery, republish_interval=republish))


def session_recovery(environ: Mapping[str, str]) -> SessionRecovery:
    """`SESSION_RECOVERY`, with the conflict interval from `CONFLICT_INTERVAL_ENV` when it is set.

    Raises:
        ValueError: the value is not a finite number of seconds ≥ 0 (the message names the variable).

    Python only: see `CONFLICT_INTERVAL_ENV`.
    """
    seconds = _seconds(environ, CONFLICT_INTERVAL_ENV)
    if seconds is None:
        return SESSION_RECOVERY
    return dataclasses.replace(SESSION_RECOVERY, conflict_interval=seconds)


def republish_interval(environ: Mapping[str, str]) -> float:
    """`REPUBLISH_INTERVAL_ENV` in seconds, else the scaler's `DEFAULT_REPUBLISH_INTERVAL`.

    Raises:
        ValueError: the value is not a finite number of seconds ≥ 0 (the message names the variable).

    Python only: see `REPUBLISH_INTERVAL_ENV`.
    """
    seconds = _seconds(environ, REPUBLISH_INTERVAL_ENV)
    return DEFAULT_REPUBLISH_INTERVAL if seconds is None else seconds


def _seconds(environ: Mapping[str, str], name: str) -> float | None:
    """Python only: the variable ``name`` as a finite number of seconds ≥ 0, None when unset."""
    raw = environ.get(name)
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{name} must be a number of seconds >= 0, got {raw!r}")
    return seconds


async def _run(
    config: ListenerConfig,
    recovery: SessionRecovery = SESSION_RECOVERY,
    *,
    republish_interval: float = DEFAULT_REPUBLISH_INTERVAL,
) -> int:
    """Install the signal handlers, run the app, turn its end into an exit status.

    Ports: the signal.NotifyContext and error handling of main
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await _run_app(config, recovery, republish_interval=republish_interval)
    except asyncio.CancelledError:
        print("Application returned an error: context canceled", file=sys.stderr)
        return 1
    except Exception as err:
        print(f"Application returned an error: {err}", file=sys.stderr)
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 0


def _credentials(config: ListenerConfig) -> Credentials:
    """PAT when a token is set, else the GitHub App. Ports: Config.ActionsClient (credential switch)"""
    if config.github_token:
        return PersonalAccessToken(token=config.github_token)
    return GitHubAppAuth(
        client_id=config.github_app_id,
        installation_id=config.github_app_installation_id,
        private_key=config.github_app_private_key,
    )


def rate_limits(config: ListenerConfig) -> tuple[float, int]:
    """QPS and burst for the scaler's Kubernetes client; missing values or values below 1 use the defaults.

    Missing values are normal (debug); out-of-range ones are warned about.

    Ports: effectiveRateLimiterConfig
    """
    if config.scaler is None:
        log.debug("listener scaler configuration is missing; using defaults", qps=DEFAULT_QPS, burst=DEFAULT_BURST)
        return DEFAULT_QPS, DEFAULT_BURST
    qps, burst = DEFAULT_QPS, DEFAULT_BURST
    configured_qps, configured_burst = config.scaler.get("qps"), config.scaler.get("burst")
    if not isinstance(configured_qps, int | float):
        log.debug("listener scaler qps is missing; using default", default=DEFAULT_QPS)
    elif configured_qps < 1:
        log.warning("listener scaler qps must be greater than 0; using default", configured=configured_qps)
    else:
        qps = float(configured_qps)
    if not isinstance(configured_burst, int):
        log.debug("listener scaler burst is missing; using default", default=DEFAULT_BURST)
    elif configured_burst < 1:
        log.warning("listener scaler burst must be greater than 0; using default", configured=configured_burst)
    else:
        burst = configured_burst
    return qps, burst


async def _run_app(config: ListenerConfig, recovery: SessionRecovery, *, republish_interval: float) -> None:
    """Build the Actions and Kubernetes clients and run the app. Ports: run"""
    try:
        actions = new_client(
            config.configure_url,
            _credentials(config),
            system_info=SystemInfo(
                version=BUILD_VERSION,
                commit_sha=BUILD_VERSION,
                scale_set_id=config.runner_scale_set_id,
                subsystem="ghalistener",
            ),
            root_ca=config.server_root_ca,
        )
    except ValueError as err:
        raise RuntimeError(f"failed to create actions client: {err}") from err
    qps, burst = rate_limits(config)
    rest = dataclasses.replace(await load_rest_config(), qps=qps, burst=burst)
    kube = new_kube_client(rest, field_owner="ghalistener", register_prometheus=False)

    async with actions:
        try:
            await ListenerApp(
                config,
                open_session=session_opener(actions, recovery=recovery),
                kube=kube,
                republish_interval=republish_interval,
            ).run()
        finally:
            await kube.close()


def session_opener(actions: ActionsClient, *, recovery: SessionRecovery = SESSION_RECOVERY) -> SessionOpener:
    """The app's session opener: ``actions``' message session, recovering as ``recovery`` says.

    Ports: the scalesetClient.MessageSessionClient call of run
    """

    async def open_session(scale_set_id: int, owner: str, /) -> SessionClient:
        return await actions.message_session_client(scale_set_id, owner, recovery=recovery)

    return open_session


if __name__ == "__main__":
    sys.exit(main())
