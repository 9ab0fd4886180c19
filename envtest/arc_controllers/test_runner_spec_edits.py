"""Which edits publish a new actionable revision and which rebuild the listener, counted from watch streams.

Issue 8 / spec §5.2 step 10 and 12: the revision moves only on a semantic runner-spec change;
the listener is rebuilt only when its own spec or metadata changes. Counts come from watches
on the API server (every ADDED/DELETED of a listener, every spec.actionableRevision value the
EphemeralRunnerSet took), not from polling. All four controllers run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from .scaleset_world import (
    ARS,
    ERS,
    LISTENER,
    World,
    consistently,
    eventually,
    follow_listener_uids,
    owned_tasks,
    world,
)

__all__ = ["world"]


@dataclass
class Tally:
    """What the watches saw after the baseline: listener creations/deletions and revision values."""

    listeners_added: list[str] = field(default_factory=list)
    listeners_deleted: list[str] = field(default_factory=list)
    revisions: list[int] = field(default_factory=list)
    runner_set_writes: int = 0


@contextlib.asynccontextmanager
async def watching(w: World) -> AsyncIterator[Tally]:
    tally = Tally()
    listeners = await w.client.list(LISTENER, namespace=w.controller_namespace)
    sets = await w.client.list(ERS, namespace=w.namespace)

    async def follow_sets() -> None:
        async for event in w.client.watch(ERS, namespace=w.namespace, resource_version=sets.resource_version):
            if event.type in ("ADDED", "MODIFIED"):
                tally.runner_set_writes += 1
                revision = int(event.object["spec"].get("actionableRevision") or 0)
                if not tally.revisions or tally.revisions[-1] != revision:
                    tally.revisions.append(revision)

    listener_uids = follow_listener_uids(
        w, listeners.resource_version, added=tally.listeners_added, deleted=tally.listeners_deleted
    )
    async with owned_tasks(listener_uids, follow_sets()):
        yield tally


async def _running(w: World) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        ars = await w.get(ARS, w.name)
        status = ars.get("status") or {}
        ok = status.get("phase") == "Running" and status.get("observedGeneration") == ars["metadata"]["generation"]
        listeners = await w.listeners()
        return ars if ok and len(listeners) == 1 and not listeners[0]["metadata"].get("deletionTimestamp") else None

    result: dict[str, Any] = await eventually(check)
    return result


async def _settled(w: World, *, within: float = 30.0) -> None:
    """Running, one listener, and then nothing written for two seconds.

    Running is reported before the listener controller has finished its own writes (its
    finalizer, its status), so a quiet window that a late write breaks starts again, up to
    ``within`` seconds, instead of failing the baseline.
    """
    await _running(w)
    deadline = asyncio.get_running_loop().time() + within

    async def snapshot() -> tuple[list[tuple[str, str]], str]:
        listeners = [(o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for o in await w.listeners()]
        return listeners, (await w.get(ERS, w.name))["metadata"]["resourceVersion"]

    while True:
        before = await snapshot()

        async def quiet(before: tuple[list[tuple[str, str]], str] = before) -> bool:
            return await snapshot() == before

        try:
            await consistently(quiet, duration=2.0)
            return
        except AssertionError:
            if asyncio.get_running_loop().time() > deadline:
                raise


EDITS: dict[str, dict[str, Any]] = {
    "maxRunners": {"spec": {"maxRunners": 5}},
    "minRunners": {"spec": {"minRunners": 1}},
    "runner-set annotation": {"spec": {"ephemeralRunnerSetMetadata": {"annotations": {"cost-center": "7"}}}},
    "runner image": {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:2.330.0"}]}
            }
        }
    },
    "runner env": {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "runner",
                            "image": "ghcr.io/actions/actions-runner:latest",
                            "env": [{"name": "RUNNER_DEBUG", "value": "1"}],
                        }
                    ]
                }
            }
        }
    },
}
# (revision bumps, listener rebuilds) each edit must cause
EXPECTED = {
    "maxRunners": (0, 1),
    "minRunners": (0, 1),
    "runner-set annotation": (0, 0),
    "runner image": (1, 0),
    "runner env": (1, 0),
}


@pytest.mark.parametrize("edit", list(EDITS))
# Upstream: Context "When updating a new AutoScalingRunnerSet"
#   It "updates EphemeralRunnerSet when the runner image changes without touching the Listener"
#   It "recreates only the Listener when max runners changes"
#   It "updates EphemeralRunnerSet annotations when only EphemeralRunnerSet metadata annotations change"
async def test_edit_bumps_revision_and_rebuilds_listener_as_often_as_upstream(world: World, edit: str) -> None:
    w = world
    await w.start()
    await w.client.create(w.ars())
    await _settled(w)
    revision = int((await w.get(ERS, w.name))["spec"].get("actionableRevision") or 0)

    async with watching(w) as tally:
        await asyncio.sleep(0.5)  # both watches established
        ars = await w.get(ARS, w.name)
        await w.patch(ars, EDITS[edit])
        await _settled(w)
        await asyncio.sleep(1.0)

    bumps, rebuilds = EXPECTED[edit]
    final = int((await w.get(ERS, w.name))["spec"].get("actionableRevision") or 0)
    assert final == revision + bumps
    if bumps == 0:
        assert set(tally.revisions) <= {revision}, tally
    else:  # the revision moved once, by one
        assert tally.revisions in ([revision + 1], [revision, revision + 1]), tally
    assert len(tally.listeners_added) == rebuilds, tally
    assert len(tally.listeners_deleted) == rebuilds, tally
