"""Must-show: two managers with leader election on a real Lease.

Stopping the leader cleanly (``leader_election_release_on_cancel=True``) hands over within
the lease duration plus the retry period, and the replica that is not leading never
reconciles. A leader that dies without releasing is replaced once its Lease expires in
the survivor's view (timing model in that test's docstring). Both print the measured
hand-over time (``pytest -s``).
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
SLACK = 1.0
"""Seconds of scheduling slack on a shared machine (API calls, event-loop latency)."""


class Recorder:
    def __init__(self, replica: str, log: list[tuple[str, str]]) -> None:
        self.replica = replica
        self.log = log

    async def reconcile(self, request: Request, /) -> Result:
        self.log.append((self.replica, request.name))
        return Result()


async def _hand_over(envtest_environment: Any, namespace: str, *, release: bool) -> float:
    """Two managers; stop the leader (releasing the Lease or not); return the hand-over seconds.

    The hand-over is timed from the moment the leader's task is cancelled to the moment the
    other manager is elected. Also checks that only the leader ever reconciles.
    """
    config = await load_rest_config(envtest_environment.kubeconfig_path)
    writer = new_client(config)
    reconciled: list[tuple[str, str]] = []
    opts = Options(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=f"le-{namespace}",
        leader_election_namespace=namespace,
        leader_election_release_on_cancel=release,
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        exit_on_blocked_leader=False,  # a 1 s limit could end the test runner on a loaded machine
    )
    managers, tasks = [], []
    for replica in ("a", "b"):
        mgr = new_manager(config, opts)
        controller_managed_by(mgr).for_(CM).named(f"cm-{replica}-{namespace}").complete(Recorder(replica, reconciled))
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

        stopped = time.monotonic()
        tasks[0].cancel()
        await asyncio.gather(tasks[0], return_exceptions=True)
        stopped_index = len(reconciled)
        await asyncio.wait_for(b.elected().wait(), LEASE + 2 * RETRY * (1 + JITTER_FACTOR) + 10)
        handover = time.monotonic() - stopped
        await eventually(lambda: {n for r, n in reconciled if r == "b"} >= {"cm-0", "cm-1", "cm-2"}, timeout=30)
        assert all(r == "b" for r, _ in reconciled[stopped_index:])  # the stopped leader never ran again
        assert all(r == "a" for r, _ in reconciled[:stopped_index])  # b never ran while a led
        return handover
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await writer.close()


async def test_leader_hands_over_and_loser_never_reconciles(envtest_environment: Any, namespace: str) -> None:
    """Clean stop with release on: the Lease is handed back, the other replica takes it at its next try.

    The stopping manager writes an empty holder; the candidate, retrying every
    retry_period × [1, 2.2), takes it at its next attempt: well inside lease + retry.
    """
    handover = await _hand_over(envtest_environment, namespace, release=True)
    print(f"\nhand-over after a clean stop (release on): {handover:.2f} s (lease {LEASE} s, retry {RETRY} s)")
    assert handover < LEASE + RETRY


async def test_leader_that_dies_without_releasing_is_replaced_after_its_lease(
    envtest_environment: Any, namespace: str
) -> None:
    """Crash (cancelled without release): the other replica waits the Lease out.

    Timing model (L = lease_duration, R = retry_period, J = 1.2 the jitter factor):
    the leader renews every R, so its last renewal is at or before the stop. The candidate
    polls every R × [1, 1 + J); it sees that last renewal (a changed record) at most
    R × (1 + J) after the stop, and from then counts L on its own clock. Its first poll
    after that expiry, at most another R × (1 + J) later, takes the Lease. So the hand-over
    is at most L + 2 × (1 + J) × R after the stop, plus API-call and scheduling slack.
    """
    handover = await _hand_over(envtest_environment, namespace, release=False)
    bound = LEASE + 2 * (1 + JITTER_FACTOR) * RETRY
    print(f"\nhand-over after a crash (no release): {handover:.2f} s (bound {bound:.1f} s + {SLACK} s slack)")
    assert handover <= bound + SLACK
