"""A scale set gone from the Actions service registers again (issue 19 rule 1, ARC #4370).

All four controllers run under chart RBAC with the fake Actions service; no kubelet, so the
test writes the listener pod's death itself, as the listener process ends when the service
answers 404 for its scale set. The scale set is "up" once its id annotation, its listener and
the listener's pod exist: the phase is not waited for (a listener pod that never runs keeps
the scale set Pending once conditions are in).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from arc_controllers.resourcebuilder.listener import scale_set_listener_name

from .scaleset_world import ARS, ERS, LISTENER, POD, World, eventually, world

__all__ = ["world"]

SCALE_SET_ID = "runner-scale-set-id"


async def _up(w: World, *, not_id: int = 0) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """The scale set registered under an id other than ``not_id``, its listener on that id, and the listener pod."""

    async def check() -> tuple[dict[str, Any], int, dict[str, Any]] | None:
        ars = await w.get(ARS, w.name)
        scale_set_id = int((ars["metadata"].get("annotations") or {}).get(SCALE_SET_ID) or 0)
        if scale_set_id <= 0 or scale_set_id == not_id:
            return None
        listener = await w.listener_of(ars)
        if listener is None or listener["spec"].get("runnerScaleSetId") != scale_set_id:
            return None
        if listener["metadata"].get("deletionTimestamp"):
            return None
        pod = await w.find(POD, scale_set_listener_name(ars), w.controller_namespace)
        return None if pod is None else (ars, scale_set_id, pod)

    result: tuple[dict[str, Any], int, dict[str, Any]] = await eventually(check, within=60.0)
    return result


async def _die(w: World, pod: dict[str, Any]) -> None:
    """Write the listener pod Failed: its ``listener`` container exited 1 just now."""
    finished = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    terminated = {"exitCode": 1, "reason": "Error", "finishedAt": finished}
    container = {"name": "listener", "image": pod["spec"]["containers"][0]["image"], "imageID": "", "ready": False,
                 "restartCount": 0, "state": {"terminated": terminated}}  # fmt: skip
    await w.patch(pod, {"status": {"phase": "Failed", "containerStatuses": [container]}}, status=True)


async def _replaced(w: World, pod: dict[str, Any]) -> dict[str, Any]:
    """The listener pod that replaced ``pod`` (same name, new UID)."""

    async def check() -> dict[str, Any] | None:
        now = await w.find(POD, pod["metadata"]["name"], w.controller_namespace)
        return None if now is None or now["metadata"]["uid"] == pod["metadata"]["uid"] else now

    result: dict[str, Any] = await eventually(check, within=60.0)
    return result


async def test_scale_set_gone_from_the_service_registers_again_arc_4370(world: World) -> None:
    """An admin deletes the scale set on the service; its listener dies (404): it is registered again.

    Reproduction of ARC #4370: before the fix the listener pod was recreated under the stale
    id for good and the annotation never changed. Expected: within 60 s a new scale set on
    the service, its id in the annotation, the runner set (same object, new revision) and a
    new listener on it. Lookups: one for the death, then upstream's ``runnerScaleSetGone``
    before re-registering and before creating the listener (3 measured; a scale set reconcile
    that runs before the cache holds the new listener asks once more, hence the bound of 5).
    """
    w = world
    await w.start()
    await w.client.create(w.ars())
    _, old_id, pod = await _up(w)
    runner_set = await w.get(ERS, w.name)
    lookups = w.service.requests("get_scale_set")
    loop = asyncio.get_running_loop()

    w.service.delete_scale_set(old_id)
    await _die(w, pod)
    died = loop.time()
    _, new_id, _ = await _up(w, not_id=old_id)
    healed = loop.time() - died

    assert w.service.state.scale_set(new_id).name == w.name
    assert old_id not in w.service.state.scale_sets

    async def runner_set_follows() -> bool:
        now = await w.get(ERS, w.name)
        return bool(now["spec"]["ephemeralRunnerSpec"]["runnerScaleSetId"] == new_id)

    await eventually(runner_set_follows)
    now = await w.get(ERS, w.name)
    assert now["metadata"]["uid"] == runner_set["metadata"]["uid"], "the runner set is kept, not replaced"
    assert int(now["spec"].get("actionableRevision") or 0) > int(runner_set["spec"].get("actionableRevision") or 0)
    assert len(await w.listeners()) == 1
    asked = w.service.requests("get_scale_set") - lookups
    assert asked <= 5, f"{asked} scale set lookups for one death"
    print(f"re-registered {healed:.2f} s after the death; {asked} scale set lookups")


async def test_crash_loop_asks_the_service_once_per_death_arc_4370(world: World) -> None:
    """A listener that keeps dying while its scale set exists asks for the scale set once per death, no more.

    Three deaths (2 s and 4 s of crash backoff between them), each reconciled several times
    (status write, pod delete, pod create): three lookups, the same scale set id throughout.
    """
    w = world
    await w.start()
    await w.client.create(w.ars())
    ars, scale_set_id, pod = await _up(w)
    lookups = w.service.requests("get_scale_set")
    for _ in range(3):
        await _die(w, pod)
        pod = await _replaced(w, pod)
    assert w.service.requests("get_scale_set") - lookups == 3
    listener = await w.get(LISTENER, scale_set_listener_name(ars), w.controller_namespace)
    assert listener["spec"]["runnerScaleSetId"] == scale_set_id
    assert (await w.get(ARS, w.name))["metadata"]["annotations"][SCALE_SET_ID] == str(scale_set_id)
