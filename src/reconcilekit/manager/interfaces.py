"""The manager's roles: runnables, their optional capabilities, and the manager itself.

A runnable's ``start()`` runs until it is cancelled (returning early is allowed;
raising stops the whole manager). The manager owns every runnable's task.

Ports: sigs.k8s.io/controller-runtime/pkg/manager (manager.go)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from reconcilekit.cache.interfaces import Cache
from reconcilekit.client.interfaces import Client, Reader
from reconcilekit.recorder.interfaces import EventRecorder

__all__ = ["HealthCheck", "LeaderElectionRunnable", "Manager", "Runnable"]

HealthCheck = Callable[[], Awaitable[None]]
"""A health or readiness check: returns when healthy, raises (with a reason) when not. Ports: healthz.Checker"""


class Runnable(Protocol):
    """**Protocol:** something the manager starts and stops. Ports: manager.Runnable"""

    async def start(self) -> None:
        """Run until cancelled."""
        ...


@runtime_checkable
class LeaderElectionRunnable(Protocol):
    """**Protocol:** a runnable that says whether it needs to be leader to run.

    Runnables without this method are leader-elected (controllers are, by default).

    Ports: manager.LeaderElectionRunnable
    """

    def need_leader_election(self) -> bool: ...


class Manager(Protocol):
    """Owns the shared cache, the clients, the runnables, leader election and the HTTP servers.

    Ports: manager.Manager (and cluster.Cluster's getters)
    """

    def add(self, runnable: Runnable, /) -> None:
        """Register ``runnable``; started in its group when the manager starts (or now, if running)."""
        ...

    def get_client(self) -> Client:
        """The delegating client: reads from the cache, writes to the API server."""
        ...

    def get_api_reader(self) -> Reader:
        """The uncached reader: every read goes to the API server."""
        ...

    def get_cache(self) -> Cache:
        """The shared informer cache (also the field indexer)."""
        ...

    def get_event_recorder_for(self, name: str, /) -> EventRecorder:
        """A recorder of core/v1 Events whose source component is ``name`` (the controller's name)."""
        ...

    def elected(self) -> asyncio.Event:
        """Set once this process leads (at start when leader election is off)."""
        ...

    def add_healthz_check(self, name: str, check: HealthCheck, /) -> None:
        """Add a liveness check served under /healthz. Raises RuntimeError after start."""
        ...

    def add_readyz_check(self, name: str, check: HealthCheck, /) -> None:
        """Add a readiness check served under /readyz. Raises RuntimeError after start."""
        ...

    async def start(self) -> None:
        """Run everything until cancelled or a runnable fails; stops in reverse order.

        Raises:
            LeaderElectionLostError: this process lost the Lease (it must exit).
        """
        ...
