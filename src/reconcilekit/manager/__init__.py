"""The manager: runnables, shared cache and clients, leader election, health and metrics.

Ports: sigs.k8s.io/controller-runtime/pkg/manager
"""

from reconcilekit.manager.interfaces import HealthCheck, LeaderElectionRunnable, Manager, Runnable

__all__ = ["HealthCheck", "LeaderElectionRunnable", "Manager", "Runnable"]
