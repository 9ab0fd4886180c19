"""The Lease lock: a coordination.k8s.io/v1 Lease holds the leader election record.

Ports: k8s.io/client-go/tools/leaderelection/resourcelock (interface.go LeaderElectionRecord,
leaselock.go LeaseLock)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from reconcilekit.client.interfaces import Client, GroupVersionKind, Object, ObjectKey

__all__ = ["LEASE", "LeaderElectionRecord", "LeaseLock", "format_micro_time", "parse_micro_time"]

LEASE = GroupVersionKind("coordination.k8s.io", "v1", "Lease")
"""The kind the lock is stored in."""


def format_micro_time(when: datetime) -> str:
    """RFC 3339 in UTC with six fractional digits: ``2026-11-30T02:45:01.123456Z``. Ports: metav1.MicroTime"""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str | None) -> datetime | None:
    """The inverse of `format_micro_time` (also accepts whole seconds); ``None`` stays ``None``."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionRecord:
    """Who leads, since when, for how long. Times are UTC.

    Ports: resourcelock.LeaderElectionRecord
    """

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0
    strategy: str | None = None
    preferred_holder: str | None = None

    def to_spec(self) -> Object:
        """The Lease ``spec``. Ports: LeaderElectionRecordToLeaseSpec"""
        spec: Object = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.leader_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        if self.strategy:
            spec["strategy"] = self.strategy
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        return spec

    @classmethod
    def from_spec(cls, spec: Mapping[str, object]) -> LeaderElectionRecord:
        """Ports: LeaseSpecToLeaderElectionRecord"""
        duration = spec.get("leaseDurationSeconds")
        transitions = spec.get("leaseTransitions")
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(duration) if isinstance(duration, int) else 0,
            acquire_time=parse_micro_time(str(spec["acquireTime"])) if spec.get("acquireTime") else None,
            renew_time=parse_micro_time(str(spec["renewTime"])) if spec.get("renewTime") else None,
            leader_transitions=int(transitions) if isinstance(transitions, int) else 0,
            strategy=str(spec["strategy"]) if spec.get("strategy") else None,
            preferred_holder=str(spec["preferredHolder"]) if spec.get("preferredHolder") else None,
        )

    def with_(self, **changes: object) -> LeaderElectionRecord:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)  # type: ignore[arg-type]


class LeaseLock:
    """Reads and writes the record in one Lease, remembering the last Lease seen.

    Args:
        client: a direct (uncached) client.
        namespace, name: the Lease.
        identity: this candidate's identity.
        labels: put on the Lease when it is created.

    Ports: resourcelock.LeaseLock
    """

    def __init__(
        self, client: Client, *, namespace: str, name: str, identity: str, labels: Mapping[str, str] | None = None
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._labels = dict(labels or {})
        self._lease: Object | None = None

    def describe(self) -> str:
        """``"<namespace>/<name>"``. Ports: LeaseLock.Describe"""
        return f"{self.namespace}/{self.name}"

    async def get(self) -> tuple[LeaderElectionRecord, bytes]:
        """The record and its raw bytes (compared to notice change).

        Raises:
            NotFoundError: no Lease yet.

        Ports: LeaseLock.Get
        """
        lease = await self._client.get(LEASE, ObjectKey(self.namespace, self.name))
        self._lease = lease
        spec = lease.get("spec") or {}
        return LeaderElectionRecord.from_spec(spec), json.dumps(spec, sort_keys=True).encode()

    async def create(self, record: LeaderElectionRecord) -> None:
        """Create the Lease holding ``record``. Ports: LeaseLock.Create"""
        lease: Object = {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        if self._labels:
            lease["metadata"]["labels"] = dict(self._labels)
        self._lease = await self._client.create(lease)

    async def update(self, record: LeaderElectionRecord) -> None:
        """PUT ``record`` over the last Lease seen (optimistic on its resourceVersion).

        Raises:
            RuntimeError: the lock has not read or created the Lease yet.
            ConflictError: someone wrote the Lease since.

        Ports: LeaseLock.Update
        """
        if self._lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        lease = dict(self._lease)
        lease["spec"] = record.to_spec()
        if self._labels:
            meta = dict(lease.get("metadata") or {})
            meta["labels"] = {**(meta.get("labels") or {}), **self._labels}
            lease["metadata"] = meta
        self._lease = await self._client.update(lease)
