"""The leader elector: acquire a Lease, keep renewing it, and say so when it is lost.

Safety rests on judging a lease's validity by *local observation time*: a candidate
remembers the record it last saw and the monotonic time at which that record last
changed, and treats the lease as held until ``observed + leaseDurationSeconds`` passes
without a change. Clock skew between replicas does not matter.

Ports: k8s.io/client-go/tools/leaderelection/leaderelection.go (LeaderElector)
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from prometheus_client import Gauge

from reconcilekit.errors import is_conflict, is_not_found
from reconcilekit.leaderelection.lease_lock import LeaderElectionRecord, LeaseLock
from reconcilekit.metrics import REGISTRY

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LEADER_GAUGE",
    "LeaderElectionConfig",
    "LeaderElector",
]

log = structlog.get_logger(__name__)

DEFAULT_LEASE_DURATION = 15.0
"""Seconds a non-leader waits, from the last observed change, before taking over."""
DEFAULT_RENEW_DEADLINE = 10.0
"""Seconds the leader keeps retrying a renewal before it gives up leading."""
DEFAULT_RETRY_PERIOD = 2.0
"""Seconds between attempts to acquire or renew."""
JITTER_FACTOR = 1.2
"""Acquire attempts wait ``retry_period × [1, 1 + 1.2)``. Ports: leaderelection.JitterFactor"""

LEADER_GAUGE = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
    ["name"],
    registry=REGISTRY,
)
"""1 while this process leads the named lease. Ports: leaderelection metrics (leader_election_master_status)"""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """How to elect. Durations are seconds.

    Raises (from `validate`):
        ValueError: unless lease_duration > renew_deadline > 1.2 × retry_period > 0.

    Ports: leaderelection.LeaderElectionConfig
    """

    lock: LeaseLock
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    release_on_cancel: bool = False
    name: str = ""

    def validate(self) -> None:
        """Ports: leaderelection.NewLeaderElector's checks"""
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if self.lease_duration <= 0:
            raise ValueError("leaseDuration must be greater than zero")
        if self.renew_deadline <= 0:
            raise ValueError("renewDeadline must be greater than zero")
        if self.retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")
        if not self.lock.identity:
            raise ValueError("lock identity is empty")


class LeaderElector:
    """Runs one candidate's election. `run` returns when leadership is lost.

    Args:
        config: see `LeaderElectionConfig`.
        on_started_leading: called once this candidate leads.
        on_stopped_leading: called when it stops leading (lost, or cancelled while leading).
        on_new_leader: called with the identity of each newly observed leader.
        clock: monotonic seconds (tests inject one).

    Ports: leaderelection.LeaderElector
    """

    def __init__(
        self,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        config.validate()
        self._config = config
        self._lock = config.lock
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock
        self._observed = LeaderElectionRecord()
        self._observed_raw = b""
        self._observed_time = 0.0
        self._reported_leader = ""
        self._renewed_at: float | None = None
        self._leading = False
        self._resigned = False
        self._gauge = LEADER_GAUGE.labels(name=config.name or config.lock.name)
        self._call_timeout = max(config.renew_deadline / 2, 1.0)

    @property
    def identity(self) -> str:
        return self._lock.identity

    def is_leader(self) -> bool:
        """True while the last record seen names this candidate. Ports: LeaderElector.IsLeader"""
        return self._observed.holder_identity == self._lock.identity

    def holds_lease(self) -> bool:
        """True while this candidate leads and its last successful renewal began less than renew_deadline ago.

        Leader-only work checks this (the manager's fence) before it acts: once false it stays
        false until this elector acquires the lease again, which a stopped `run` never does.

        Python only: client-go's IsLeader trusts the last record seen, however old.
        """
        return self._leading and self._renewed_at is not None and self.renewal_age() < self._config.renew_deadline

    def renewal_age(self) -> float:
        """Seconds since the last successful acquire or renew began (infinite before the first)."""
        return float("inf") if self._renewed_at is None else self._clock() - self._renewed_at

    def get_leader(self) -> str:
        """The identity in the last record seen. Ports: LeaderElector.GetLeader"""
        return self._observed.holder_identity

    async def run(self) -> None:
        """Acquire, call ``on_started_leading``, renew until that fails; then return.

        Cancellation stops the election and releases the lease if configured, or always after
        `resign`.

        Ports: LeaderElector.Run
        """
        leading = False
        try:
            await self._acquire()
            leading = self._leading = True
            self._gauge.set(1)
            log.info("successfully acquired lease", lease=self._lock.describe(), identity=self.identity)
            self._on_started()
            await self._renew()
        finally:
            self._leading = False
            self._gauge.set(0)
            if leading:
                if (self._config.release_on_cancel or self._resigned) and self.is_leader():
                    await self._release()
                self._on_stopped()

    def resign(self) -> None:
        """Hand the lease back when `run` ends, whatever ``release_on_cancel`` says.

        For a candidate that won the lease but will not lead (its manager is stopping): keeping
        the lease would block every other candidate for a full lease duration. Call it from
        ``on_started_leading``, then cancel `run`.

        Python only (issue 16).
        """
        self._resigned = True

    async def _acquire(self) -> None:
        """Try now, then every retry_period × [1, 2.2) until success. Ports: LeaderElector.acquire"""
        log.info("attempting to acquire leader lease", lease=self._lock.describe())
        while True:
            if await self._try_acquire_or_renew():
                return
            await asyncio.sleep(self._config.retry_period * (1 + random.random() * JITTER_FACTOR))

    async def _renew(self) -> None:
        """Every retry_period: retry until renewed; give up once renew_deadline has passed since
        the last success, or at once when another holder's lease is valid.

        The deadline is judged on the monotonic clock from the last successful renewal, so a
        loop that resumes after a pause (SIGSTOP, a blocking call) notices before it tries again.

        Ports: LeaderElector.renew (Differs: client-go times renew_deadline from the start of
        each retry round and keeps retrying after it reads another holder)
        """
        cfg = self._config
        while True:
            while True:
                remaining = cfg.renew_deadline - self.renewal_age()
                if remaining <= 0:
                    log.info("failed to renew lease before the renew deadline", lease=self._lock.describe())
                    return
                try:
                    async with asyncio.timeout(remaining):
                        renewed = await self._try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
                if renewed:
                    break
                if not self.is_leader():
                    log.info("lease taken by another holder", lease=self._lock.describe(), holder=self.get_leader())
                    return
                await asyncio.sleep(cfg.retry_period)
            await asyncio.sleep(cfg.retry_period)

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt; a success makes its start the last renewal. Ports: LeaderElector.tryAcquireOrRenew"""
        began = self._clock()
        now = datetime.now(UTC)
        record = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=int(self._config.lease_duration),
            acquire_time=now,
            renew_time=now,
        )
        # Fast path: still leading by our own view: renew over the cached Lease.
        if self.is_leader() and self._lease_valid():
            record = record.with_(
                acquire_time=self._observed.acquire_time, leader_transitions=self._observed.leader_transitions
            )
            try:
                async with asyncio.timeout(self._call_timeout):
                    await self._lock.update(record)
                self._set_observed(record)
                self._renewed_at = began
                return True
            except Exception as err:  # fall through to the slow path
                log.debug("lease renewal over the cached lease failed", error=repr(err))
        # Slow path: read the Lease.
        try:
            async with asyncio.timeout(self._call_timeout):
                old, raw = await self._lock.get()
        except Exception as err:
            if not is_not_found(err):
                log.warning("error retrieving lease", lease=self._lock.describe(), error=repr(err))
                return False
            try:
                async with asyncio.timeout(self._call_timeout):
                    await self._lock.create(record)
            except Exception as create_err:
                log.warning("error initially creating lease", error=repr(create_err))
                return False
            self._set_observed(record)
            self._renewed_at = began
            return True
        if raw != self._observed_raw:
            self._observed, self._observed_raw, self._observed_time = old, raw, self._clock()
            self._maybe_report_leader()
        if old.holder_identity and self._lease_valid() and not self.is_leader():
            return False
        if self.is_leader():
            record = record.with_(acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
        else:
            record = record.with_(leader_transitions=old.leader_transitions + 1)
        try:
            async with asyncio.timeout(self._call_timeout):
                await self._lock.update(record)
        except Exception as err:
            log.debug("failed to update lease", error=repr(err))
            return False
        self._set_observed(record)
        self._renewed_at = began
        return True

    async def _release(self) -> None:
        """Hand the lease back: holder "", duration 1 s. Ports: LeaderElector.release"""
        try:
            async with asyncio.timeout(self._config.renew_deadline):
                while True:
                    try:
                        old, _ = await self._lock.get()
                        if old.holder_identity != self.identity:
                            return
                        now = datetime.now(UTC)
                        await self._lock.update(
                            LeaderElectionRecord(
                                holder_identity="",
                                lease_duration_seconds=1,
                                acquire_time=now,
                                renew_time=now,
                                leader_transitions=old.leader_transitions,
                            )
                        )
                        self._observed = LeaderElectionRecord()
                        log.info("released lease", lease=self._lock.describe())
                        return
                    except Exception as err:
                        if not is_conflict(err):
                            log.warning("failed to release lease", error=repr(err))
                            return
        except TimeoutError:
            log.warning("failed to release lease in time", lease=self._lock.describe())

    def _lease_valid(self) -> bool:
        return self._observed_time + self._observed.lease_duration_seconds > self._clock()

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self._observed = record
        self._observed_raw = json.dumps(record.to_spec(), sort_keys=True).encode()
        self._observed_time = self._clock()
        self._maybe_report_leader()

    def _maybe_report_leader(self) -> None:
        holder = self._observed.holder_identity
        if holder and holder != self._reported_leader:
            self._reported_leader = holder
            if holder != self.identity:
                log.info("new leader elected", identity=holder)
            if self._on_new_leader is not None:
                self._on_new_leader(holder)
