"""Which runners a spec rollout replaced: watched EphemeralRunners and EphemeralRunnerSets, in write order.

A runner created for a queued job just before the runner spec changes is idle when the
EphemeralRunnerSet's revision cleanup deletes it (the seed mechanism: idle and pending
runners of the old revision go, busy ones finish), and a runner of the new revision takes
its job. It was registered and never ran a job, yet it is no over-provisioning: the
summary counts it apart. The criteria are strict and use only what the API server shows:

- the runner never took a job (the kubelet's record);
- its deletion was written while the set's ``spec.actionableRevision`` was above its
  ``actions.github.com/actionable-revision`` stamp and the set's
  ``status.appliedActionableRevision`` had not reached the spec yet: the window in which
  the revision cleanup deletes runners (the status patch closes it);
- it was created while its stamp was the set's spec revision, or inside that same window: a
  reconcile that decided before the controller's cache saw the change, whose create lands a
  few milliseconds after the spec write (the set's reconciles are serialized and the cleanup
  is their first branch, so one that had seen the change creates nothing). A runner of an old
  stamp created after the window closed was built from a stale spec: it stays "beyond demand".

Writes are ordered by ``metadata.resourceVersion``: the sim's envtest has one etcd, whose
revision is global across objects. That is a liberty of this harness (the API contract lets
clients compare resourceVersions only for equality); a resourceVersion that is not an
integer leaves the runner uncounted here, so it stays "beyond demand".

Python only: the simulation has no Go counterpart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import EPHEMERAL_RUNNER, EPHEMERAL_RUNNER_SET
from reconcilekit.client.interfaces import WithWatch

__all__ = ["RevisionLedger", "RunnerWrites", "SetWrite", "watch_revisions"]

log = structlog.get_logger("arc_controllers.cmd.sim.rollouts")


@dataclass(frozen=True, slots=True)
class SetWrite:
    """One observed write of the EphemeralRunnerSet: its resourceVersion and revisions then."""

    rv: int
    spec_revision: int
    applied_revision: int


@dataclass(slots=True)
class RunnerWrites:
    """An EphemeralRunner's revision stamp and the resourceVersions of its creation and deletion."""

    stamp: int
    created_rv: int | None = None
    """The resourceVersion of its creation; ``None`` when first seen in a (re)list, not as it was created."""
    deleted_rv: int | None = None
    """The resourceVersion of the write that set ``deletionTimestamp``."""


@dataclass(slots=True)
class RevisionLedger:
    """The writes ``watch_revisions`` saw, for `replaced_by_rollout`."""

    set_writes: list[SetWrite] = field(default_factory=list)
    runners: dict[str, RunnerWrites] = field(default_factory=dict)

    def observe_set(self, obj: Mapping[str, Any]) -> None:
        """Record an EphemeralRunnerSet version."""
        rv = _rv(obj)
        if rv is None:
            return
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        self.set_writes.append(
            SetWrite(rv, int(spec.get("actionableRevision") or 0), int(status.get("appliedActionableRevision") or 0))
        )

    def observe_runner(self, event_type: str, obj: Mapping[str, Any], *, live: bool) -> None:
        """Record an EphemeralRunner version (``live``: from a watch, not a list)."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        rv = _rv(obj)
        if not name or rv is None:
            return
        writes = self.runners.get(name)
        if writes is None:
            annotations = meta.get("annotations") or {}
            stamp = int(annotations.get(constants.ANNOTATION_KEY_ACTIONABLE_REVISION) or 0)
            created = rv if live and event_type == "ADDED" else None
            writes = self.runners[name] = RunnerWrites(stamp=stamp, created_rv=created)
        if writes.deleted_rv is None and (meta.get("deletionTimestamp") or event_type == "DELETED"):
            writes.deleted_rv = rv

    def _set_at(self, rv: int) -> SetWrite | None:
        """The set as it stood just before the write ``rv``."""
        before = [w for w in self.set_writes if w.rv < rv]
        return max(before, key=lambda w: w.rv) if before else None

    def replaced_by_rollout(self, runners_with_job: set[str]) -> set[str]:
        """Runners that never took a job, were created on their revision and deleted by the revision cleanup."""
        replaced: set[str] = set()
        for name, w in self.runners.items():
            if name in runners_with_job or w.created_rv is None or w.deleted_rv is None:
                continue
            at_creation, at_deletion = self._set_at(w.created_rv), self._set_at(w.deleted_rv)
            if at_creation is None or at_deletion is None or not _in_cleanup(at_deletion, w.stamp):
                continue
            if at_creation.spec_revision == w.stamp or _in_cleanup(at_creation, w.stamp):
                replaced.add(name)
        return replaced


def _in_cleanup(at: SetWrite, stamp: int) -> bool:
    """The set's spec moved past ``stamp`` and the revision cleanup has not finished yet."""
    return at.spec_revision > stamp and at.applied_revision < at.spec_revision


def _rv(obj: Mapping[str, Any]) -> int | None:
    text = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(text) if text.isdigit() else None


async def watch_revisions(client: WithWatch, namespace: str, ledger: RevisionLedger) -> None:
    """Feed ``ledger`` from watches of EphemeralRunners and EphemeralRunnerSets in ``namespace`` until cancelled."""
    await asyncio.gather(
        _watch(client, namespace, ledger, runners=True),
        _watch(client, namespace, ledger, runners=False),
    )


async def _watch(client: WithWatch, namespace: str, ledger: RevisionLedger, *, runners: bool) -> None:
    gvk = EPHEMERAL_RUNNER if runners else EPHEMERAL_RUNNER_SET
    while True:
        try:
            listed = await client.list(gvk, namespace=namespace)
            for obj in listed.items:
                if runners:
                    ledger.observe_runner("ADDED", obj, live=False)
                else:
                    ledger.observe_set(obj)
            stream = client.watch(
                gvk, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=300
            )
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                async for event in stream:
                    if str(event.type) not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    if runners:
                        ledger.observe_runner(str(event.type), event.object, live=True)
                    else:
                        ledger.observe_set(event.object)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a broken watch: list again
            log.debug("revision watch ended, relisting", kind=gvk.kind, error=repr(err))
            await asyncio.sleep(0.5)
