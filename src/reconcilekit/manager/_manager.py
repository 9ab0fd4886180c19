"""The manager: the composition root that starts and stops everything in order.

Start: HTTP servers (metrics, probes) → the event broadcaster → caches, then wait for them to
sync (at most ``cache_sync_timeout``) → runnables that need no leader → leader election →
leader-elected runnables (controllers) once elected (at once when leader election is off).
Stop (cancellation, a runnable's error, or lost leadership): a candidate that does not lead
yet stops campaigning first, so a Lease that frees up during a slow shutdown is never taken;
then others → leader-elected → the event broadcaster (which flushes what the controllers
recorded while stopping) → caches → HTTP servers, all within ``graceful_shutdown_timeout``;
then a leader's election is cancelled (releasing the Lease if configured). A group that
stopped never starts again, and winning the Lease while stopping starts nothing and hands
the Lease straight back (whether or not release on cancel is set).

Leader-elected runnables run under a fence (`reconcilekit.leaderelection.holds_leadership`):
it holds while the last successful renewal began less than renew_deadline ago, and a
controller hands out no work item once it fails. While leading, a watchdog thread ends the
process (``os._exit``) if the event loop is blocked longer than lease_duration −
renew_deadline (`reconcilekit.leaderelection.watchdog`).

Ports: sigs.k8s.io/controller-runtime/pkg/manager (internal.go controllerManager,
manager.go New) and pkg/cluster (cluster.go)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from reconcilekit.cache.informer_cache import InformerCache
from reconcilekit.client.delegating import DelegatingClient
from reconcilekit.client.interfaces import Client, Reader, WithWatch
from reconcilekit.errors import ReconcileKitError
from reconcilekit.healthz import add_health_routes
from reconcilekit.leaderelection import LeaderElectionConfig, LeaderElector, LeaseLock, default_identity
from reconcilekit.leaderelection.watchdog import LoopWatchdog
from reconcilekit.manager._runnables import Group, RunnableGroup, classify
from reconcilekit.manager.interfaces import HealthCheck, Runnable
from reconcilekit.manager.options import Options
from reconcilekit.metrics.server import metrics_app
from reconcilekit.recorder import EventBroadcaster, EventRecorder

__all__ = ["ControllerManager", "LeaderElectionLostError", "new_manager"]

log = structlog.get_logger(__name__)

IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class LeaderElectionLostError(ReconcileKitError):
    """This process lost its Lease: it must exit now. Ports: manager's "leader election lost" error"""

    def __init__(self) -> None:
        super().__init__("leader election lost")


class _HTTPServer:
    """An aiohttp application bound before anything else starts, served until cancelled."""

    def __init__(self, name: str, app: web.Application, address: str) -> None:
        self.name = name
        self._app = app
        self._host, self._port = _split_address(address)
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] | None = None

    async def bind(self) -> None:
        runner = web.AppRunner(self._app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        self.address = (str(addresses[0][0]), int(addresses[0][1])) if addresses else None
        log.info("serving", server=self.name, address=self.address)

    def need_leader_election(self) -> bool:
        return False

    async def start(self) -> None:
        try:
            await asyncio.Future()
        finally:
            if self._runner is not None:
                await self._runner.cleanup()


def _split_address(address: str) -> tuple[str | None, int]:
    host, _, port = address.rpartition(":")
    return (host or None), int(port or 0)


def _enabled(address: str) -> bool:
    return address not in ("", "0")


class ControllerManager:
    """The `Manager`: one shared cache and client, the runnables, leader election, servers.

    Build it with `new_manager`.

    Ports: controllerManager (and cluster.cluster)
    """

    def __init__(self, client: WithWatch, options: Options, *, owns_client: bool = False) -> None:
        if options.leader_election and not options.leader_election_id:
            raise ValueError("LeaderElectionID must be configured")
        self._options = options
        self._client = client
        self._cache = InformerCache(client, options.cache)
        self._delegating = DelegatingClient(cache=self._cache, client=client, uncached=options.uncached)
        self._healthz: dict[str, HealthCheck] = {}
        self._readyz: dict[str, HealthCheck] = {}
        self._elected = asyncio.Event()
        self._stop = asyncio.Event()
        self._errors: list[BaseException] = []
        self._lost_leadership = False
        self._started = False
        self._groups = {g: RunnableGroup(g, self._on_error) for g in Group}
        self._servers: list[_HTTPServer] = []
        self._elector: LeaderElector | None = None
        self._elector_task: asyncio.Task[None] | None = None
        self._watchdog: LoopWatchdog | None = None
        self._owns_client = owns_client
        self.identity = default_identity()
        """This replica's leader election identity."""
        self._event_broadcaster = EventBroadcaster(client, options.event_broadcaster)
        self._groups[Group.EVENT_BROADCASTER].add(self._event_broadcaster)
        self.add(self._cache)

    # -- the Manager role --------------------------------------------------------------

    def add(self, runnable: Runnable, /) -> None:
        """Register ``runnable`` in its group; started now if the group runs. Ports: Manager.Add"""
        self._groups[classify(runnable)].add(runnable)

    def get_client(self) -> Client:
        """The delegating client. Ports: cluster.GetClient"""
        return self._delegating

    def get_api_reader(self) -> Reader:
        """The uncached reader (the direct client). Ports: cluster.GetAPIReader"""
        return self._client

    def get_cache(self) -> InformerCache:
        """The shared cache. Ports: cluster.GetCache"""
        return self._cache

    def get_field_indexer(self) -> InformerCache:
        """The cache, which indexes fields. Ports: cluster.GetFieldIndexer"""
        return self._cache

    def get_direct_client(self) -> WithWatch:
        """The client that talks to the server for every call (what the cache watches through)."""
        return self._client

    def get_event_recorder_for(self, name: str, /) -> EventRecorder:
        """A recorder whose Events come from component ``name``, written by the manager's broadcaster.

        Events recorded before the manager starts wait in the broadcaster's queue; after it
        stopped they are dropped. Ports: cluster.GetEventRecorderFor
        """
        return self._event_broadcaster.new_recorder(name)

    def elected(self) -> asyncio.Event:
        """Set once leading (at start when leader election is off). Ports: Manager.Elected"""
        return self._elected

    def add_healthz_check(self, name: str, check: HealthCheck, /) -> None:
        """Ports: Manager.AddHealthzCheck"""
        if self._started:
            raise RuntimeError("unable to add new checker because healthz endpoint has already been created")
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: HealthCheck, /) -> None:
        """Ports: Manager.AddReadyzCheck"""
        if self._started:
            raise RuntimeError("unable to add new checker because readyz endpoint has already been created")
        self._readyz[name] = check

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """Where the metrics server listens, once started (``None`` if off)."""
        return next((s.address for s in self._servers if s.name == "metrics"), None)

    @property
    def health_probe_address(self) -> tuple[str, int] | None:
        """Where the probe server listens, once started (``None`` if off)."""
        return next((s.address for s in self._servers if s.name == "health-probe"), None)

    async def start(self) -> None:
        """Run everything until cancelled, a runnable fails, or leadership is lost.

        Raises:
            LeaderElectionLostError: the Lease was lost (stop the process).
            TimeoutError: caches did not sync in time, or runnables did not stop in time.
            Exception: the first error a runnable raised.
            RuntimeError: started twice.

        Ports: controllerManager.Start
        """
        if self._started:
            raise RuntimeError("manager already started")
        self._started = True
        cancelled = False
        try:
            await self._start_servers()
            self._groups[Group.EVENT_BROADCASTER].start()
            self._groups[Group.CACHES].start()
            await self._wait_for_caches()
            self._groups[Group.OTHERS].start()
            self._start_leader_election()
            await self._stop.wait()
        except asyncio.CancelledError:
            cancelled = True
        except Exception as err:
            self._errors.append(err)
        finally:
            await self._shutdown()
        if self._lost_leadership:
            raise LeaderElectionLostError()
        if self._errors:
            raise self._errors[0]
        if cancelled:
            raise asyncio.CancelledError

    # -- internals ---------------------------------------------------------------------

    def _on_error(self, err: BaseException) -> None:
        log.error("runnable failed", error=repr(err))
        self._errors.append(err)
        self._stop.set()

    async def _start_servers(self) -> None:
        opts = self._options
        if _enabled(opts.metrics_bind_address):
            self._servers.append(
                _HTTPServer(
                    "metrics", metrics_app(extra_handlers=opts.metrics_extra_handlers), opts.metrics_bind_address
                )
            )
        if _enabled(opts.health_probe_bind_address):
            app = web.Application()
            add_health_routes(app, opts.readiness_endpoint_name, dict(self._readyz))
            add_health_routes(app, opts.liveness_endpoint_name, dict(self._healthz))
            self._servers.append(_HTTPServer("health-probe", app, opts.health_probe_bind_address))
        group = self._groups[Group.HTTP_SERVERS]
        for server in self._servers:
            await server.bind()
            group.add(server)
        group.start()

    async def _wait_for_caches(self) -> None:
        """Ports: runnableGroup's WaitForSync on the caches group, with CacheSyncTimeout"""
        timeout = self._options.cache_sync_timeout
        caches = list(self._groups[Group.CACHES].runnables)
        try:
            async with asyncio.timeout(timeout):
                for runnable in caches:
                    cache: Any = runnable.get_cache()  # type: ignore[attr-defined]
                    if not await cache.wait_for_cache_sync():
                        raise RuntimeError("cache stopped before it synced")
        except TimeoutError:
            raise TimeoutError(f"timed out waiting for cache to be synced (after {timeout} s)") from None

    def _start_leader_election(self) -> None:
        opts = self._options
        if not opts.leader_election:
            self._become_leader()
            return
        namespace = opts.leader_election_namespace or _in_cluster_namespace()
        lock = LeaseLock(
            self._client,
            namespace=namespace,
            name=opts.leader_election_id,
            identity=self.identity,
            labels=opts.leader_election_labels,
        )
        self._elector = LeaderElector(
            LeaderElectionConfig(
                lock=lock,
                lease_duration=opts.lease_duration,
                renew_deadline=opts.renew_deadline,
                retry_period=opts.retry_period,
                release_on_cancel=opts.leader_election_release_on_cancel,
                name=opts.leader_election_id,
            ),
            on_started_leading=self._become_leader,
            on_stopped_leading=self._leadership_ended,
        )
        self._groups[Group.LEADER_ELECTION].fence = self._elector.holds_lease
        if opts.exit_on_blocked_leader:
            self._watchdog = LoopWatchdog(limit=opts.lease_duration - opts.renew_deadline, name=lock.describe())
        self._elector_task = asyncio.create_task(self._elector.run(), name="leader-election")
        self._elector_task.add_done_callback(self._elector_done)

    def _elector_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (err := task.exception()) is not None:
            self._on_error(err)

    def _become_leader(self) -> None:
        if self._stop.is_set():  # won while stopping: start nothing, hand the Lease back
            log.info("acquired the lease while stopping; starting nothing")
            if self._elector is not None:
                self._elector.resign()
            if self._elector_task is not None:
                self._elector_task.cancel()
            return
        if self._watchdog is not None:
            self._watchdog.start()
        self._groups[Group.LEADER_ELECTION].start()
        self._elected.set()

    def _leadership_ended(self) -> None:
        if self._watchdog is not None:
            self._watchdog.stop()
        if not self._stop.is_set():  # lost, not stopped by us
            log.error("leader election lost")
            self._lost_leadership = True
            self._stop.set()

    async def _shutdown(self) -> None:
        """Stop in reverse order within the grace period. Ports: controllerManager.engageStopProcedure"""
        self._stop.set()
        if self._elector_task is not None and not self._elected.is_set():
            await self._stop_elector()  # not leading: stop campaigning before anything slow
        timeout = 0.0 if self._lost_leadership else self._options.graceful_shutdown_timeout
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        all_done = True
        stop_order = (Group.OTHERS, Group.LEADER_ELECTION, Group.EVENT_BROADCASTER, Group.CACHES, Group.HTTP_SERVERS)
        for group in stop_order:
            remaining = None if deadline is None else max(deadline - loop.time(), 0.0)
            if timeout == 0.0:
                remaining = 0.0
            all_done = await self._groups[group].stop(within=remaining) and all_done
        await self._stop_elector()
        close = getattr(self._client, "close", None)
        if self._owns_client and callable(close):
            with contextlib.suppress(Exception):
                await close()
        if not all_done and timeout != 0.0:
            self._errors.append(
                TimeoutError(f"failed waiting for all runnables to end within grace period of {timeout} s")
            )

    async def _stop_elector(self) -> None:
        """Cancel the election and wait for it (a leader releases the Lease if configured)."""
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._elector_task is None:
            return
        self._elector_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(self._elector_task), self._options.renew_deadline + 1)


def _in_cluster_namespace() -> str:
    """Ports: leaderelection.getInClusterNamespace"""
    try:
        return IN_CLUSTER_NAMESPACE_FILE.read_text().strip()
    except OSError as err:
        raise ValueError(
            "unable to find leader election namespace: not running in-cluster, please specify leader_election_namespace"
        ) from err


def new_manager(
    config: Any, /, options: Options | None = None, *, client: WithWatch | None = None
) -> ControllerManager:
    """A new manager over a cluster's ``config``.

    Args:
        config: whatever the client factory takes (``reconcilekit.config``'s REST config).
        options: see `Options`.
        client: use this client instead of building one from ``config`` (tests pass a
            `reconcilekit.testing.FakeClient`); the caller then closes it. A client the
            manager built is closed when the manager stops.

    Raises:
        ValueError: leader election without ``leader_election_id``.

    Ports: manager.New
    """
    opts = options or Options()
    if client is not None:
        return ControllerManager(client, opts)
    factory = opts.new_client
    if factory is None:
        factory = importlib.import_module("reconcilekit.client").new_client
    return ControllerManager(factory(config), opts, owns_client=True)
