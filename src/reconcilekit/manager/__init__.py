"""The manager: runnables, shared cache and clients, leader election, health and metrics.

Ports: sigs.k8s.io/controller-runtime/pkg/manager
"""

from reconcilekit.manager._manager import ControllerManager, LeaderElectionLostError, new_manager
from reconcilekit.manager.interfaces import HealthCheck, LeaderElectionRunnable, Manager, Runnable
from reconcilekit.manager.options import Options
from reconcilekit.manager.signals import run_until_signalled, setup_signal_handler

__all__ = [
    "ControllerManager",
    "HealthCheck",
    "LeaderElectionLostError",
    "LeaderElectionRunnable",
    "Manager",
    "Options",
    "Runnable",
    "new_manager",
    "run_until_signalled",
    "setup_signal_handler",
]
