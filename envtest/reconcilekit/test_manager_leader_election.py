"""Must-show: two managers with leader election on a real Lease.

Stopping the leader hands over within the lease duration plus one (jittered) retry period,
and the replica that is not leading never reconciles.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from rk_support import CM, configmap

from reconcilekit.builder import controller_managed_by
from reconcilekit.client import new_client
from reconcilekit.config import load_rest_config
from reconcilekit.leaderelection.elector import JITTER_FACTOR
from reconcilekit.manager import Options, new_manager
from reconcilekit.reconcile import Request, Result
from reconcilekit.testing import consistently, eventually

pytestmark = [pytest.mark.slow]

LEASE, RENEW, RETRY = 4.0, 3.0, 1.0


class Recorder:
    def __init__(self, replica: str, log: list[tuple[str, str]]) -> None:
        self.replica = replica
        self.log = log

    async def reconcile(self, request: Request, /) -> Result:
        self.log.append((self.replica, request.name))
        return Result()


async def test_leader_hands_over_and_loser_never_reconciles(envtest_environment: Any, namespace: str) -> None:
    config = await load_rest_config(envtest_environment.kubeconfig_path)
    writer = new_client(config)
    reconciled: list[tuple[str, str]] = []
    opts = Options(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=f"le-{namespace}",
        leader_election_namespace=namespace,
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
    )
    managers, tasks = [], []
    for replica in ("a", "b"):
        mgr = new_manager(config, opts)
        controller_managed_by(mgr).for_(CM).named(f"cm-{replica}").complete(Recorder(replica, reconciled))
        managers.append(mgr)
    a, b = managers
    try:
        tasks.append(asyncio.create_task(a.start(), name="manager-a"))
        await asyncio.wait_for(a.elected().wait(), 30)
        tasks.append(asyncio.create_task(b.start(), name="manager-b"))
        for i in range(3):
            await writer.create(configmap(f"cm-{i}", namespace))
        await eventually(lambda: {n for r, n in reconciled if r == "a"} >= {"cm-0", "cm-1", "cm-2"}, timeout=30)
        await consistently(lambda: not b.elected().is_set() and all(r == "a" for r, _ in reconciled), duration=3)

        tasks[0].cancel()  # a clean stop without release: b must wait the lease out
        await asyncio.gather(tasks[0], return_exceptions=True)
        stopped = time.monotonic()
        stopped_index = len(reconciled)
        await asyncio.wait_for(b.elected().wait(), LEASE + RETRY * (1 + JITTER_FACTOR) + 5)
        handover = time.monotonic() - stopped
        print(f"handover after the leader stopped: {handover:.2f} s (lease {LEASE} s, retry {RETRY} s)")
        assert handover <= LEASE + RETRY * (1 + JITTER_FACTOR) + 1.0  # + scheduling slack on a shared machine
        await eventually(lambda: {n for r, n in reconciled if r == "b"} >= {"cm-0", "cm-1", "cm-2"}, timeout=30)
        assert all(r == "b" for r, _ in reconciled[stopped_index:])  # the stopped leader never ran again
        assert all(r == "a" for r, _ in reconciled[:stopped_index])  # b never ran while a led
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await writer.close()
