"""Go ARC 0.14.x's objects reconciled by our controllers: adopted with no churn (issue 17 item 4).

The objects are the fixtures in envtest/testdata/go-arc-0.14/ (written from the spec and
the upstream types of the integrity-hash scheme; README there): an AutoscalingRunnerSet,
its EphemeralRunnerSet with both revisions at 0 and the legacy ``integrity-hash``, two
runners (one idle, one busy) with their pods and JIT secrets, and the listener, all created
as admin before our controllers start. The runners are registered in the fake Actions
service under the IDs their status records; the busy one holds a job there, so removing it
would answer 400 JobStillRunning. All four controllers then run under chart RBAC.

Deletions are counted by a watch on the runners, removals by the fake's RemoveRunner count.

Beyond: ARC #4638; its review asked for a one-time legacy-hash migration, merged without one.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import string
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from arc_controllers.resourcebuilder.listener import scale_set_listener_name
from arc_controllers.resourcebuilder.runner import (
    JitRunnerConfig,
    RunnerBuildOptions,
    new_ephemeral_runner_jit_secret,
    new_ephemeral_runner_pod,
)
from reconcilekit.errors import InternalError
from reconcilekit.testing import Call, InterceptorClient

from .scaleset_world import (
    ARS,
    ER,
    ERS,
    LISTENER,
    POD,
    SECRET,
    World,
    consistently,
    eventually,
    follow_listener_uids,
    owned_tasks,
    world,
)

__all__ = ["world"]

FIXTURES = Path(__file__).resolve().parents[1] / "testdata" / "go-arc-0.14"
INTEGRITY_HASH = "actions.github.com/integrity-hash"


@dataclass
class GoArc:
    """What the fixture put on the API server and in the fake service."""

    name: str
    listener_uid: str
    runner_set: str = ""
    """The EphemeralRunnerSet's name: the scale set's, or Go 0.14.2's generated one."""
    runner_ids: dict[str, int] = field(default_factory=dict)
    """Runner name → the ID the fake service registered it under."""


def render(fixture: str, values: dict[str, str]) -> list[dict[str, Any]]:
    text = string.Template((FIXTURES / f"{fixture}.yaml").read_text()).substitute(values)
    return [doc for doc in yaml.safe_load_all(text) if doc]


async def create_with_status(w: World, doc: dict[str, Any]) -> dict[str, Any]:
    """Create ``doc`` and write its status through the status subresource (a create drops it)."""
    created: dict[str, Any] = await w.client.create({k: v for k, v in doc.items() if k != "status"})
    if doc.get("status"):
        created = await w.patch(created, {"status": doc["status"]}, status=True)
    return created


async def install(w: World, fixture: str, name: str | None = None, *, older_set: str = "") -> GoArc:
    """The fixture's objects as Go ARC left them, created in dependency order (owners first).

    ``name`` is the scale set's (default: the fixture's name). ``older_set``: first a copy of the
    set under this name with replicas 0, holding a copy of the fixture's busy runner (Go 0.14.2
    mid-rollout: created before the fixture's set, so older by creation time or, in the same
    second, by name).
    """
    name = name or fixture
    scale_set = w.service.state.create_scale_set({"name": f"{name}-{w.namespace}", "runnerGroupId": 1})
    values = {
        "NAMESPACE": w.namespace,
        "CONTROLLER_NAMESPACE": w.controller_namespace,
        "CONFIG_URL": w.service.config_url(),
        "SCALE_SET_ID": str(scale_set.id),
        "ARS_UID": "",
        "ERS_UID": "",
        "LISTENER_SUFFIX": "",
    }
    ars_doc = render(fixture, values)[0]
    values["LISTENER_SUFFIX"] = scale_set_listener_name(ars_doc).removeprefix(f"{name}-").removesuffix("-listener")
    await w.client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": ars_doc["spec"]["githubConfigSecret"], "namespace": w.namespace},
            "data": {"github_token": base64.b64encode(w.service.github.pat.encode()).decode()},
        }
    )
    values["ARS_UID"] = (await create_with_status(w, ars_doc))["metadata"]["uid"]
    go = GoArc(name, "")
    if older_set:
        await install_older_set(w, go, render(fixture, values), older_set)
    values["ERS_UID"] = (await create_with_status(w, render(fixture, values)[1]))["metadata"]["uid"]
    docs = render(fixture, values)
    go.runner_set = docs[1]["metadata"]["name"]
    for doc in docs[2:]:
        if doc["kind"] == "EphemeralRunner":
            await install_runner(w, go, doc)
        else:
            go.listener_uid = (await w.client.create(doc))["metadata"]["uid"]
    return go


async def install_older_set(w: World, go: GoArc, docs: list[dict[str, Any]], name: str) -> None:
    """A draining set (replicas 0) holding one busy runner, as Go 0.14.2 left it mid-rollout."""
    ers = copy.deepcopy(docs[1])
    ers["metadata"]["name"] = name
    ers["spec"]["replicas"] = 0
    uid = (await create_with_status(w, ers))["metadata"]["uid"]
    busy = copy.deepcopy(next(d for d in docs if d["kind"] == "EphemeralRunner" and d["status"].get("jobId")))
    busy["metadata"]["name"] = f"{name}-runner-m9n8o"
    busy["metadata"]["ownerReferences"][0].update(name=name, uid=uid)
    busy["status"] = {**busy["status"], "runnerName": busy["metadata"]["name"], "jobId": "job-21", "jobRequestId": 1021}
    await install_runner(w, go, busy)


async def install_runner(w: World, go: GoArc, doc: dict[str, Any]) -> None:
    """The runner, registered in the fake service (busy when it has a job), its JIT secret and its pod."""
    name, status = doc["metadata"]["name"], doc["status"]
    for stale in [rid for rid, r in w.service.state.runners.items() if r.name == name]:
        del w.service.state.runners[stale]  # the same fixture installed by an earlier test (one shared service)
    registered, jit = w.service.state.generate_jit_config(int(doc["spec"]["runnerScaleSetId"]), name)
    w.service.register_runner(jit)
    if status.get("jobId"):
        registered.job_request_id = int(status["jobRequestId"])  # the job Go ARC's runner was running
    go.runner_ids[name] = registered.id
    runner = await create_with_status(w, {**doc, "status": {**status, "runnerId": registered.id}})
    config = JitRunnerConfig(
        encoded_jit_config=jit, runner_id=registered.id, runner_name=name, runner_scale_set_id=registered.scale_set_id
    )
    secret = await w.client.create(new_ephemeral_runner_jit_secret(runner, config, options=RunnerBuildOptions()))
    await w.client.create(new_ephemeral_runner_pod(runner, secret, options=RunnerBuildOptions()))


@dataclass
class Seen:
    """What the watches saw once the controllers started."""

    runners_deleted: list[str] = field(default_factory=list)
    """Runner names, each once, the first time a deletion timestamp or a delete showed."""
    listeners_added: list[str] = field(default_factory=list)
    listeners_deleted: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def watching(w: World) -> AsyncIterator[Seen]:
    seen = Seen()
    runners = await w.client.list(ER, namespace=w.namespace)
    listeners = await w.client.list(LISTENER, namespace=w.controller_namespace)

    async def follow_runners() -> None:
        async for event in w.client.watch(ER, namespace=w.namespace, resource_version=runners.resource_version):
            meta = event.object.get("metadata") or {}
            gone = event.type == "DELETED" or bool(meta.get("deletionTimestamp"))
            if gone and meta.get("name") not in seen.runners_deleted:
                seen.runners_deleted.append(meta["name"])

    listener_uids = follow_listener_uids(
        w, listeners.resource_version, added=seen.listeners_added, deleted=seen.listeners_deleted
    )
    async with owned_tasks(follow_runners(), listener_uids):
        yield seen


async def runner_set(w: World, go: GoArc) -> dict[str, Any]:
    return await w.get(ERS, go.runner_set)


async def hash_stripped(w: World, go: GoArc) -> bool:
    return INTEGRITY_HASH not in ((await runner_set(w, go))["metadata"].get("annotations") or {})


async def revisions(w: World, go: GoArc) -> tuple[int, int]:
    """(spec.actionableRevision, status.appliedActionableRevision), absent as 0."""
    ers = await runner_set(w, go)
    applied = (ers.get("status") or {}).get("appliedActionableRevision")
    return int(ers["spec"].get("actionableRevision") or 0), int(applied or 0)


async def listener_replaced(w: World, go: GoArc) -> bool:
    """One listener, not Go ARC's, without the hash, and the scale set Running again."""
    listeners = [item for item in await w.listeners() if not item["metadata"].get("deletionTimestamp")]
    ars = await w.get(ARS, go.name)
    return (
        len(listeners) == 1
        and listeners[0]["metadata"]["uid"] != go.listener_uid
        and INTEGRITY_HASH not in (listeners[0]["metadata"].get("annotations") or {})
        and (ars.get("status") or {}).get("phase") == "Running"
    )


async def live_runners(w: World) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["name"]: r for r in (await w.client.list(ER, namespace=w.namespace)).items}


def refuse_the_strip(call: Call) -> None:
    """The set's controller dies at the commit point: every patch dropping the hash fails."""
    annotations = ((call.obj or {}).get("metadata") or {}).get("annotations") or {}
    if call.verb == "patch" and call.kind == "EphemeralRunnerSet" and INTEGRITY_HASH not in annotations:
        raise InternalError(500, "InternalError", "the controller stopped before the commit point")


async def test_a_settled_go_arc_scale_set_is_adopted_without_deleting_a_runner_arc_4638(world: World) -> None:
    """Every runner's spec equals the set's: none is deleted or unregistered, idle or busy. The
    hash goes from the set, the revisions stay equal (0, 0), and the listener, which runs Go
    ARC's image, is replaced once, as upstream replaces a listener carrying the hash."""
    w = world
    go = await install(w, "settled")
    removals = w.service.requests("remove_runner")
    async with watching(w) as seen:
        await w.start()
        await eventually(lambda: hash_stripped(w, go), within=60)
        await eventually(lambda: listener_replaced(w, go), within=60)

        async def unchanged() -> bool:
            runners = await live_runners(w)
            return sorted(runners) == sorted(go.runner_ids) and not seen.runners_deleted

        await consistently(unchanged, duration=3)
    assert w.service.requests("remove_runner") == removals
    assert await revisions(w, go) == (0, 0)
    runners = await live_runners(w)
    assert runners["settled-runner-d3e4f"]["status"]["jobId"] == "job-12"  # the busy one still runs its job
    assert all(r["status"]["phase"] == "Running" for r in runners.values())
    assert all(w.service.state.runners.get(rid) is not None for rid in go.runner_ids.values())  # still registered
    assert seen.listeners_deleted == [go.listener_uid]
    assert len(seen.listeners_added) == 1  # replaced once, not again
    assert await w.find(POD, "settled-runner-a1b2c") is not None
    assert await w.find(SECRET, "settled-runner-a1b2c") is not None


async def test_the_cleanup_go_arc_left_pending_is_done_once_across_a_restart_arc_4638(world: World) -> None:
    """Both runners run the image Go ARC replaced: the idle one is removed (one RemoveRunner,
    one deletion), the busy one keeps its job. The first controller process dies at the
    commit point over and over; its retries remove nothing more, and neither does the
    restarted process, which strips the hash. Then the applied revision takes over: a
    runner spec edit is applied as revision 1, with the busy runner kept."""
    w = world
    go = await install(w, "pending")
    idle, busy = "pending-runner-g5h6i", "pending-runner-j7k8l"
    removals = w.service.requests("remove_runner")
    async with watching(w) as seen:
        await w.start(wrap_client=lambda client: InterceptorClient(client, before=refuse_the_strip))

        async def idle_removed() -> bool:
            return idle not in await live_runners(w) and w.service.requests("remove_runner") == removals + 1

        await eventually(idle_removed, within=60)

        async def no_second_removal() -> bool:
            return (
                w.service.requests("remove_runner") == removals + 1
                and seen.runners_deleted == [idle]
                and not await hash_stripped(w, go)
            )

        await consistently(no_second_removal, duration=3)  # the set's reconciles keep failing meanwhile
        await w.stop()

        await w.start()  # the restarted process
        await eventually(lambda: hash_stripped(w, go), within=60)
        await consistently(
            lambda: no_churn_after_adoption(w, removals + 1, seen, [idle]),
            duration=3,
        )
        assert await revisions(w, go) == (0, 0)

        ars = await w.get(ARS, go.name)
        template = ars["spec"]["template"]
        template["spec"]["containers"][0]["image"] = "ghcr.io/actions/actions-runner:2.331.0"
        await w.patch(ars, {"spec": {"template": template}})
        await eventually(lambda: revision_applied(w, go, 1), within=60)
    assert w.service.state.runners[go.runner_ids[busy]].busy
    assert busy not in seen.runners_deleted
    assert w.service.requests("remove_runner") == removals + 1


async def no_churn_after_adoption(w: World, removals: int, seen: Seen, deleted: list[str]) -> bool:
    return w.service.requests("remove_runner") == removals and seen.runners_deleted == deleted


async def revision_applied(w: World, go: GoArc, revision: int) -> bool:
    return await revisions(w, go) == (revision, revision)


RUNNER_SPEC_HASH = "actions.github.com/runner-spec-hash"


async def owned_runner_sets(w: World, go: GoArc) -> list[str]:
    """Names of the EphemeralRunnerSets the scale set controls (deleting ones too)."""
    sets = (await w.client.list(ERS, namespace=w.namespace)).items
    return sorted(
        s["metadata"]["name"]
        for s in sets
        if any(ref.get("controller") and ref.get("name") == go.name for ref in s["metadata"].get("ownerReferences", []))
    )


async def test_a_released_0_14_2_runner_set_under_a_generated_name_is_adopted_arc_4638(world: World) -> None:
    """Go ARC 0.14.2 named its set ``released-x7k2p`` and marked it with runner-spec-hash; both
    runners (one busy) equal its spec. Our controllers adopt that set under its name (no second
    set named like the scale set), delete no runner, strip the hash, point the new listener at
    it, and scale it when the listener patches its replicas."""
    w = world
    go = await install(w, "release-0.14.2", name="released")
    assert go.runner_set == "released-x7k2p"
    removals = w.service.requests("remove_runner")
    async with watching(w) as seen:
        await w.start()

        async def adopted() -> bool:
            ers = await runner_set(w, go)
            return RUNNER_SPEC_HASH not in (ers["metadata"].get("annotations") or {}) and await listener_replaced(w, go)

        await eventually(adopted, within=60)

        async def one_set_no_churn() -> bool:
            runners = await live_runners(w)
            return (
                await owned_runner_sets(w, go) == [go.runner_set]
                and sorted(runners) == sorted(go.runner_ids)
                and not seen.runners_deleted
            )

        await consistently(one_set_no_churn, duration=3)
        listener = (await w.listeners())[0]
        assert listener["spec"]["ephemeralRunnerSetName"] == go.runner_set
        assert w.service.requests("remove_runner") == removals
        assert await w.find(ERS, go.name) is None

        ers = await runner_set(w, go)  # the listener scales the adopted set up
        await w.patch(ers, {"spec": {"replicas": 3, "patchID": 8}})

        async def scaled() -> bool:
            runners = await live_runners(w)
            return len(runners) == 3 and all(
                r["metadata"]["ownerReferences"][0]["name"] == go.runner_set for r in runners.values()
            )

        await eventually(scaled, within=60)
        assert await owned_runner_sets(w, go) == [go.runner_set]
    assert not seen.runners_deleted
    runners = await live_runners(w)
    assert runners["released-x7k2p-runner-d3e4f"]["status"]["jobId"] == "job-12"  # the busy one still runs its job


async def test_a_0_14_2_rollout_adopts_the_newest_set_and_drains_the_older_one_arc_4638(world: World) -> None:
    """Go 0.14.2 mid-rollout: an older set at replicas 0 still runs one busy runner. The newest
    set is adopted; the older one is deleted as Go did, its busy runner keeps its job (the set's
    finalizer waits for it), and no runner anywhere is deleted or created."""
    w = world
    go = await install(w, "release-0.14.2", name="released", older_set="released-b4c5d")
    older_busy = "released-b4c5d-runner-m9n8o"
    removals = w.service.requests("remove_runner")
    async with watching(w) as seen:
        await w.start()

        async def older_deleting() -> bool:
            older = await w.find(ERS, "released-b4c5d")
            return older is not None and bool(older["metadata"].get("deletionTimestamp"))

        await eventually(older_deleting, within=60)
        await eventually(lambda: listener_replaced(w, go), within=60)

        async def no_churn() -> bool:
            runners = await live_runners(w)
            return (
                sorted(runners) == sorted(go.runner_ids)
                and not seen.runners_deleted
                and await owned_runner_sets(w, go) == ["released-b4c5d", go.runner_set]
            )

        await consistently(no_churn, duration=3)
    assert w.service.requests("remove_runner") == removals
    assert (await w.listeners())[0]["spec"]["ephemeralRunnerSetName"] == go.runner_set
    assert (await live_runners(w))[older_busy]["status"]["jobId"] == "job-21"
    assert not (await runner_set(w, go))["metadata"].get("deletionTimestamp")
