"""The manager's options, defaulted in one place.

Ports: sigs.k8s.io/controller-runtime/pkg/manager (manager.go Options, setOptionsDefaults)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconcilekit.cache.options import Options as CacheOptions
from reconcilekit.client.interfaces import GroupVersionKind, WithWatch

__all__ = ["DEFAULT_CACHE_SYNC_TIMEOUT", "DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT", "Options"]

DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT = 30.0
"""Seconds every runnable together has to stop. Ports: defaultGracefulShutdownPeriod"""

DEFAULT_CACHE_SYNC_TIMEOUT = 120.0
"""Seconds the caches have to sync at start. Ports: CacheSyncTimeout default"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """How a manager runs. Durations are seconds.

    Attributes:
        cache: the shared informer cache's options.
        uncached: kinds the manager's client always reads from the server.
        metrics_bind_address: ``host:port`` of the metrics server (``":8080"``; ``"0"`` off).
        metrics_extra_handlers: more aiohttp handlers on the metrics server, by path.
        health_probe_bind_address: ``host:port`` of /healthz and /readyz (``""``/``"0"`` off).
        liveness_endpoint_name, readiness_endpoint_name: probe paths.
        leader_election: run leader-elected runnables only while holding the Lease.
        leader_election_id: the Lease's name (required with leader election).
        leader_election_namespace: the Lease's namespace; in a pod, defaults to its own.
        leader_election_labels: labels put on the Lease.
        leader_election_release_on_cancel: hand the Lease back on a clean stop (the manager's
            task cancelled, or SIGTERM/SIGINT via `run_until_signalled`): the leader writes an
            empty holder after its runnables stopped, so another replica takes over at its next
            retry instead of waiting the lease out. Off by default, as in controller-runtime
            (``LeaderElectionReleaseOnCancel`` defaults to false); only safe if the process
            exits right after the manager stops.
        lease_duration, renew_deadline, retry_period: 15 / 10 / 2 s.
        exit_on_blocked_leader: while leading, end the process with ``os._exit(70)`` when the
            event loop is blocked longer than lease_duration − renew_deadline (5 s by default),
            before it can resume and write as a leader another replica may have replaced (see
            `reconcilekit.leaderelection.watchdog`). On by default; Python only. Tests that run a
            manager with short leases inside the test runner's process turn it off: a loaded
            machine can stall that loop past a 1 s limit, and the exit would end the runner.
        graceful_shutdown_timeout: seconds for all runnables to stop (30); ``0`` does not wait,
            ``None`` waits for ever.
        cache_sync_timeout: seconds for caches to sync at start (120).
        new_client: builds the direct client from the config (Python only; defaults to
            `reconcilekit.client.new_client`).

    Ports: manager.Options
    """

    cache: CacheOptions = field(default_factory=CacheOptions)
    uncached: Sequence[GroupVersionKind] = ()
    metrics_bind_address: str = ":8080"
    metrics_extra_handlers: Mapping[str, Any] = field(default_factory=dict)
    health_probe_bind_address: str = ""
    liveness_endpoint_name: str = "/healthz"
    readiness_endpoint_name: str = "/readyz"
    leader_election: bool = False
    leader_election_id: str = ""
    leader_election_namespace: str = ""
    leader_election_labels: Mapping[str, str] = field(default_factory=dict)
    leader_election_release_on_cancel: bool = False
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    exit_on_blocked_leader: bool = True
    graceful_shutdown_timeout: float | None = DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
    cache_sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT
    new_client: Callable[[Any], WithWatch] | None = None
