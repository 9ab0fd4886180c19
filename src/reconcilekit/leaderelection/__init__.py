"""Leader election on a coordination.k8s.io/v1 Lease.

`holds_leadership()` is the fence for leader-only code: inside a runnable the manager started
as leader-elected (and every task it creates) it is true only while the last successful
renewal began less than renew_deadline ago; elsewhere it is always true. Check it right
before each write that only the leader may make.

Ports: sigs.k8s.io/controller-runtime/pkg/leaderelection and client-go tools/leaderelection
"""

from reconcilekit._internal.fence import fence_holds as holds_leadership
from reconcilekit.leaderelection.elector import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LeaderElectionConfig,
    LeaderElector,
)
from reconcilekit.leaderelection.lease_lock import LEASE, LeaderElectionRecord, LeaseLock
from reconcilekit.leaderelection.watchdog import BLOCKED_EXIT_CODE, LoopWatchdog

__all__ = [
    "BLOCKED_EXIT_CODE",
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "LEASE",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "LoopWatchdog",
    "default_identity",
    "holds_leadership",
]


def default_identity() -> str:
    """``<hostname>_<random UUID>``. Ports: leaderelection.NewResourceLock's id"""
    import socket
    import uuid

    return f"{socket.gethostname()}_{uuid.uuid4()}"
