"""Leader election on a coordination.k8s.io/v1 Lease.

Ports: sigs.k8s.io/controller-runtime/pkg/leaderelection and client-go tools/leaderelection
"""

from reconcilekit.leaderelection.elector import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LeaderElectionConfig,
    LeaderElector,
)
from reconcilekit.leaderelection.lease_lock import LEASE, LeaderElectionRecord, LeaseLock

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "LEASE",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "default_identity",
]


def default_identity() -> str:
    """``<hostname>_<random UUID>``. Ports: leaderelection.NewResourceLock's id"""
    import socket
    import uuid

    return f"{socket.gethostname()}_{uuid.uuid4()}"
