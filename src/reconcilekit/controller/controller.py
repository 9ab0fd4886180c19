"""The controller role and `new_controller`.

A controller is a `Runnable`: hand it to a manager (``mgr.add(ctrl)``) or let
the builder do it. It owns its queue, its sources' tasks and its workers.

Ports: sigs.k8s.io/controller-runtime/pkg/controller/controller.go and name.go
"""

from __future__ import annotations

from typing import Protocol

from reconcilekit.controller._controller import RECONCILE_ID
from reconcilekit.controller._controller import Controller as _Controller
from reconcilekit.controller._workers import yield_worker
from reconcilekit.controller.options import Options
from reconcilekit.reconcile import Reconciler, Request, Result
from reconcilekit.source.source import Source

__all__ = ["Controller", "new_controller", "reconcile_id_from_context", "yield_worker"]

_names: set[str] = set()
"""Names of the controllers made in this process. Ports: name.go's usedNames"""


class Controller(Protocol):
    """**Protocol:** a running reconcile loop fed by sources.

    Ports: controller.Controller
    """

    @property
    def name(self) -> str:
        """The name, as in metrics and logs."""
        ...

    def watch(self, source: Source, /) -> None:
        """Add a source of requests. Ports: Controller.Watch"""
        ...

    async def reconcile(self, request: Request, /) -> Result:
        """Reconcile one request now, outside the queue. Ports: Controller.Reconcile"""
        ...

    def need_leader_election(self) -> bool:
        """Whether to run only while elected. Ports: LeaderElectionRunnable"""
        ...

    async def start(self) -> None:
        """Run until cancelled. Ports: Controller.Start"""
        ...


def new_controller(name: str, reconciler: Reconciler, options: Options | None = None, /) -> Controller:
    """Build a controller that is not registered anywhere; ``mgr.add()`` it to run it.

    Args:
        name: Unique in the process (unless ``options.skip_name_validation``);
            the ``controller`` label of its metrics. Use letters, digits and underscores.
        reconciler: What each request is handed to.
        options: Workers, timeouts and rate limiting; `Options` defaults if ``None``.

    Raises:
        ValueError: ``name`` is empty, or another controller has it already.

    Differs: controller-runtime's ``controller.New`` also registers with the
    manager; here the builder (or the caller) does, so controllers never import the manager.

    Ports: controller.NewUnmanaged (with checkName)
    """
    options = options or Options()
    if not name:
        raise ValueError("must specify name for controller")
    if not options.skip_name_validation:
        if name in _names:
            raise ValueError(
                f"controller with name {name} already exists. Controller names must be unique to avoid "
                "multiple controllers reporting to the same metric. This validation can be disabled via "
                "the skip_name_validation option"
            )
        _names.add(name)
    return _Controller(name, reconciler, options)


def reconcile_id_from_context() -> str | None:
    """The reconcile ID of the reconcile running in this context (and the tasks it started), else ``None``.

    Ports: controller.ReconcileIDFromContext
    """
    return RECONCILE_ID.get(None)
