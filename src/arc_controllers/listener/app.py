"""Wires one listener process: session, message loop, scaler and metrics server.

Start order (upstream's): parse the config URL → metrics exporter → owner name
(hostname, else a random UUID) → create the message session → listener and
scaler → run the loop and the metrics server together. When the loop ends, for
whatever reason, the metrics server and the scaler's republish timer are stopped and
the session is deleted: on every exit path, with a fresh (uncancelled) wait.

Ports: cmd/ghalistener/main.go (run)
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import Coroutine
from typing import Any, Protocol

import structlog

from arc_controllers.actions.config import parse_github_config_url
from arc_controllers.listener.config import ListenerConfig
from arc_controllers.listener.loop import Listener, MessageClient, run_to_completion
from arc_controllers.listener.metrics import DISCARD, Exporter, MetricsServer
from arc_controllers.listener.scaler import DEFAULT_REPUBLISH_INTERVAL, Scaler, ScalerClient

__all__ = ["SESSION_CLOSE_TIMEOUT", "AppError", "ListenerApp", "SessionClient", "SessionOpener"]

log = structlog.get_logger(__name__)

SESSION_CLOSE_TIMEOUT = 30.0
"""Seconds allowed for deleting the session at exit (the pod's grace period is 60 s)."""


class SessionClient(MessageClient, Protocol):
    """A message session the app can also delete. Ports: scaleset.MessageSessionClient (as main uses it)"""

    async def close(self) -> None: ...


class SessionOpener(Protocol):
    """Opens the message session; `ActionsClient.message_session_client` is one.

    Python only: the seam between the app and the Actions client.
    """

    async def __call__(self, runner_scale_set_id: int, owner: str, /) -> SessionClient: ...


class AppError(Exception):
    """A start-up step failed; the message names it. Python only: Go's wrapped errors from run."""


class ListenerApp:
    """One run of the listener, from session creation to session deletion.

    Ports: the body of main.run
    """

    def __init__(
        self,
        config: ListenerConfig,
        *,
        open_session: SessionOpener,
        kube: ScalerClient,
        hostname: str | None = None,
        session_close_timeout: float = SESSION_CLOSE_TIMEOUT,
        republish_interval: float = DEFAULT_REPUBLISH_INTERVAL,
    ) -> None:
        """Args:
        config: A validated configuration.
        open_session: Opens the message session on the Actions service.
        kube: The Kubernetes client the scaler patches through.
        hostname: Owner name of the session; the machine's hostname when None.
        session_close_timeout: Seconds allowed for the session delete at exit.
            Differs: scaleset v0.4.0 sets no overall limit (only the 5-minute
            per-attempt timeout); the legacy listener used 30 s, kept here.
        republish_interval: Seconds an unchanged decision is held back at most after the last
            patch (`arc_controllers.listener.scaler.Scaler`); 0 patches on every message and poll,
            as Go does.

        Python only: Go builds these values inside run.
        """
        self._config = config
        self._open_session = open_session
        self._kube = kube
        self._hostname = hostname
        self._session_close_timeout = session_close_timeout
        self._republish_interval = republish_interval
        self.metrics_server: MetricsServer | None = None
        """The metrics server once `run` built it; None when no metrics address is set."""
        self.session: SessionClient | None = None
        """The message session once created."""
        self.listener: Listener | None = None
        """The message loop once built."""

    async def run(self) -> None:
        """Run until the loop fails or the task is cancelled; never returns normally.

        Raises:
            AppError: the config URL is invalid or the session cannot be created
                (a 409 conflict included, once the opener's own retries are spent:
                the pod then exits and is replaced).
            ListenerError: the loop failed (the session has been deleted).
            OSError: the metrics address cannot be bound.
            asyncio.CancelledError: SIGTERM or SIGINT (the session has been deleted).

        Ports: main.run
        """
        config = self._config
        try:
            github = parse_github_config_url(config.configure_url)
        except ValueError as err:
            raise AppError(f"failed to parse GitHub config from URL: {err}") from err

        exporter: Exporter | None = None
        if config.metrics_addr:
            exporter = Exporter(
                scale_set_name=config.ephemeral_runner_set_name,
                scale_set_namespace=config.ephemeral_runner_set_namespace,
                enterprise=github.enterprise,
                organization=github.organization,
                repository=github.repository,
                metrics=config.metrics,
            )
            self.metrics_server = MetricsServer(
                exporter.registry, addr=config.metrics_addr, endpoint=config.metrics_endpoint
            )

        owner = self._hostname or _hostname()
        try:
            self.session = await self._open_session(config.runner_scale_set_id, owner)
        except Exception as err:
            raise AppError(f"failed to create actions message session client: {err}") from err

        try:
            if exporter is not None:
                exporter.record_static(config.min_runners, config.max_runners)
            self.listener = Listener(
                self.session,
                scale_set_id=config.runner_scale_set_id,
                max_runners=config.max_runners,
                recorder=exporter or DISCARD,
            )
            scaler = Scaler(
                self._kube,
                namespace=config.ephemeral_runner_set_namespace,
                runner_set_name=config.ephemeral_runner_set_name,
                min_runners=config.min_runners,
                max_runners=config.max_runners,
                republish_interval=self._republish_interval,
            )
            log.info("starting listener", scale_set_id=config.runner_scale_set_id, owner=owner)
            try:
                await _run_until_first_exit(
                    self.listener.run(scaler),
                    self.metrics_server.serve() if self.metrics_server is not None else None,
                )
            finally:
                await scaler.aclose()
        finally:
            await self._close_session()

    async def _close_session(self) -> None:
        """Delete the session even while cancelled; failures are only logged.

        Ports: the deferred sessionClient.Close(context.Background()) in main.run
        """
        if self.session is None:
            return
        try:
            async with asyncio.timeout(self._session_close_timeout):
                await run_to_completion(self.session.close(), name="listener-close-session")
        except Exception as err:
            log.error("failed to close session client", error=str(err))


async def _run_until_first_exit(
    listener: Coroutine[Any, Any, None], metrics: Coroutine[Any, Any, None] | None
) -> None:
    """Run the loop and the metrics server; when either ends, stop the other and raise its outcome.

    Python only: Go's errgroup plus the cancel-with-cause of the metrics context.
    """
    tasks = {asyncio.create_task(listener, name="listener-loop")}
    if metrics is not None:
        tasks.add(asyncio.create_task(metrics, name="listener-metrics-server"))
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        for task in tasks:
            if not task.cancelled():
                task.exception()  # mark as retrieved; the first one is raised below
    first = sorted(done, key=lambda t: t.get_name() != "listener-loop")[0]
    if first.cancelled():
        raise asyncio.CancelledError
    error = first.exception()
    if error is not None:
        raise error
    raise AppError(f"{first.get_name()} exited")


def _hostname() -> str:
    """The machine's hostname, else a random UUID. Ports: the os.Hostname fallback in main.run"""
    with contextlib.suppress(OSError):
        name = socket.gethostname()
        if name:
            return name
    name = str(uuid.uuid4())
    log.info("failed to get hostname, fallback to uuid", uuid=name)
    return name
