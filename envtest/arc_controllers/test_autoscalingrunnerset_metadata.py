"""Resource metadata empty collection convergence (#4695) on a real API server, all four controllers.

Upstream: Describe "Resource metadata empty collection convergence"
(controllers/actions.github.com/autoscalingrunnerset_metadata_test.go @ 86169456): for every metadata
field of the AutoscalingRunnerSet, and for all of them at once, with explicit empty ``labels``,
``annotations`` or both, the full controller set creates every object once and then leaves it
alone: no object replaced or rewritten, not even a no-op patch sent, the explicit empty inputs kept
on the scale set, and a real spec change (maxRunners) still replaces the listener.

Upstream runs each of its 27 Its in its own namespace and drives the reconcilers by hand. Here the
27 scale sets share one namespace and one manager (set up once for the module, so the file costs
one convergence, not 27), and "rebuild the desired objects as a restart would" is a real restart:
the manager is stopped, every object's uid and resourceVersion recorded, and a new manager (fresh
caches, every object reconciled again) runs behind a client that records each PATCH it sends.
Each parametrized case then checks its own objects.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.resourcebuilder.listener import proxy_listener_secret_name, scale_set_listener_name
from arc_controllers.resourcebuilder.runner import proxy_ephemeral_runner_set_secret_name
from reconcilekit.client import new_client
from reconcilekit.config import load_rest_config
from reconcilekit.envtest import Environment
from reconcilekit.metrics import REGISTRY
from reconcilekit.testing import InterceptorClient

from .scaleset_world import ARS, ER, ERS, LISTENER, POD, ROLE, ROLE_BINDING, SA, SECRET, World, consistently, eventually

FIELDS = (
    "autoscalingListener",
    "listenerServiceAccountMetadata",
    "listenerRoleMetadata",
    "listenerRoleBindingMetadata",
    "listenerConfigSecretMetadata",
    "ephemeralRunnerSetMetadata",
    "ephemeralRunnerMetadata",
    "ephemeralRunnerConfigSecretMetadata",
)
KEYS = (("labels",), ("annotations",), ("labels", "annotations"))
CASES = [(f, k) for f in (*FIELDS, "all") for k in KEYS]
CONTROLLERS = ("autoscalingrunnerset", "autoscalinglistener", "ephemeralrunnerset", "ephemeralrunner")


def title(field_name: str, keys: tuple[str, ...]) -> str:
    """Upstream's It title, ``fmt.Sprintf("%s with empty %v", field, keys)``."""
    return f"{field_name} with empty [{' '.join(keys)}]"


def ars_body(w: World, name: str, field_name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """Upstream's unstructured ARS: the chosen fields hold explicit empty maps (a typed create would drop them)."""
    spec: dict[str, Any] = {
        "githubConfigUrl": w.service.config_url(),
        "githubConfigSecret": "github-config-secret",
        "template": {"spec": {"containers": [{"name": "runner", "image": "runner:latest"}]}},
    }
    selected = FIELDS if field_name == "all" else (field_name,)
    for resource in selected:
        spec[resource] = {key: {} for key in keys}
    if field_name == "all":
        spec["template"]["metadata"] = {key: {} for key in keys}
        listener_spec = {"containers": [{"name": "listener"}]}
        spec["listenerTemplate"] = {"metadata": {key: {} for key in keys}, "spec": listener_spec}
        spec["proxy"] = {"http": {"url": "http://proxy.example.com:8080", "credentialSecretRef": "proxy-auth"}}
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {"name": name, "namespace": w.namespace},
        "spec": spec,
    }


@dataclass
class Case:
    """One upstream It: its scale set, the objects it owns, and what happened to them."""

    field: str
    keys: tuple[str, ...]
    name: str
    objects: dict[str, tuple[Any, str]] = field(default_factory=dict)
    """label → (gvk, namespace/name key)."""
    before: dict[str, tuple[str, str]] = field(default_factory=dict)
    after: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    patches: list[str] = field(default_factory=list)
    """PATCH requests the restarted manager sent for this case's objects."""
    error: BaseException | None = None
    listener_uid: str = ""
    replaced: dict[str, Any] | None = None


@dataclass
class Suite:
    world: World
    cases: dict[str, Case]
    recorder: InterceptorClient | None = None


def reconciles(controller: str) -> float:
    return sum(
        REGISTRY.get_sample_value("controller_runtime_reconcile_total", {"controller": controller, "result": r}) or 0.0
        for r in ("success", "error", "requeue", "requeue_after")
    )


async def converge(w: World, case: Case) -> None:
    """Running, listener pod up, then one runner (upstream patches replicas to 1) with its secret and pod."""

    async def running() -> dict[str, Any] | None:
        ars = await w.get(ARS, case.name)
        status = ars.get("status") or {}
        ok = status.get("phase") == "Running" and status.get("observedGeneration") == ars["metadata"]["generation"]
        return ars if ok else None

    ars = await eventually(running, within=90)
    listener = scale_set_listener_name(ars)
    await eventually(lambda: w.find(POD, listener, w.controller_namespace), within=60)
    ers = await w.get(ERS, case.name)
    await w.patch(ers, {"spec": {"replicas": 1}})

    async def runner() -> dict[str, Any] | None:
        runners = [
            r
            for r in (await w.client.list(ER, namespace=w.namespace)).items
            if any(ref.get("name") == case.name for ref in r["metadata"].get("ownerReferences") or [])
        ]
        if len(runners) != 1:
            return None
        name = runners[0]["metadata"]["name"]
        if await w.find(SECRET, name) is None or await w.find(POD, name) is None:
            return None
        return runners[0]

    runner_name = (await eventually(runner, within=90))["metadata"]["name"]
    ns, cns = w.namespace, w.controller_namespace
    case.objects = {
        "AutoscalingRunnerSet": (ARS, f"{ns}/{case.name}"),
        "EphemeralRunnerSet": (ERS, f"{ns}/{case.name}"),
        "AutoscalingListener": (LISTENER, f"{cns}/{listener}"),
        "ServiceAccount": (SA, f"{cns}/{listener}"),
        "Role": (ROLE, f"{ns}/{listener}"),
        "RoleBinding": (ROLE_BINDING, f"{ns}/{listener}"),
        "listener config Secret": (SECRET, f"{cns}/{listener}-config"),
        "listener Pod": (POD, f"{cns}/{listener}"),
        "EphemeralRunner": (ER, f"{ns}/{runner_name}"),
        "runner JIT Secret": (SECRET, f"{ns}/{runner_name}"),
        "runner Pod": (POD, f"{ns}/{runner_name}"),
    }
    if case.field == "all":
        live = await w.get(LISTENER, listener, cns)
        case.objects["listener proxy Secret"] = (SECRET, f"{cns}/{proxy_listener_secret_name(live)}")
        case.objects["set proxy Secret"] = (SECRET, f"{ns}/{proxy_ephemeral_runner_set_secret_name(ers)}")
        await eventually(lambda: w.find(SECRET, proxy_ephemeral_runner_set_secret_name(ers)))
        await eventually(lambda: w.find(SECRET, proxy_listener_secret_name(live), cns))


async def snapshot(w: World, case: Case) -> dict[str, tuple[str, str] | None]:
    """uid and resourceVersion of every object of the case (None: gone or being deleted)."""
    out: dict[str, tuple[str, str] | None] = {}
    for label, (gvk, key) in case.objects.items():
        namespace, name = key.split("/")
        obj = await w.find(gvk, name, namespace)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            out[label] = None
        else:
            out[label] = (obj["metadata"]["uid"], obj["metadata"]["resourceVersion"])
    return out


async def replace_listener(w: World, case: Case) -> None:
    """Upstream's last step: a genuine spec change (maxRunners 2) still replaces the listener."""
    ars = await w.get(ARS, case.name)
    old = await w.listener_of(ars)
    assert old is not None
    case.listener_uid = old["metadata"]["uid"]
    await w.patch(ars, {"spec": {"maxRunners": 2}})

    async def replaced() -> dict[str, Any] | None:
        new = await w.listener_of(ars)
        current = await w.get(ARS, case.name)
        status = current.get("status") or {}
        if new is None or new["metadata"]["uid"] == case.listener_uid or new["metadata"].get("deletionTimestamp"):
            return None
        if status.get("phase") != "Running" or status.get("observedGeneration") != current["metadata"]["generation"]:
            return None
        return new

    case.replaced = await eventually(replaced, within=60)


async def _each(cases: list[Case], step: Any) -> None:
    """Run ``step`` for every case not yet failed, recording a failure on its case only."""
    live = [c for c in cases if c.error is None]
    results = await asyncio.gather(*(step(c) for c in live), return_exceptions=True)
    for case, result in zip(live, results):
        if isinstance(result, BaseException):
            case.error = result


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def suite(
    envtest_environment: Environment, arc_crds: None, actions_service: FakeActionsService
) -> AsyncIterator[Suite]:
    env = envtest_environment
    config = await load_rest_config(env.kubeconfig_path)
    client = new_client(config)
    namespace = await env.create_namespace()
    controller_namespace = await env.create_namespace(prefix="arc-system-")
    token = base64.b64encode(actions_service.github.pat.encode()).decode()
    for name, data in (
        ("github-config-secret", {"github_token": token}),
        ("proxy-auth", {"username": base64.b64encode(b"user").decode(), "password": base64.b64encode(b"pw").decode()}),
    ):
        await client.create(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": data}
        )
    w = World(env, namespace, controller_namespace, actions_service, client)
    cases = {title(f, k): Case(f, k, f"{w.name}-{i}") for i, (f, k) in enumerate(CASES)}
    suite = Suite(w, cases)
    try:
        await w.start()
        await asyncio.gather(*(w.client.create(ars_body(w, c.name, c.field, c.keys)) for c in cases.values()))
        await _each(list(cases.values()), lambda c: converge(w, c))

        # the restart: stop, record, start again behind a recorder, let every object be reconciled again
        await w.stop()
        for case in cases.values():
            if case.error is None:
                case.before = {k: v for k, v in (await snapshot(w, case)).items() if v is not None}
        totals = {c: reconciles(c) for c in CONTROLLERS}
        recorders: list[InterceptorClient] = []

        def record(inner: Any) -> InterceptorClient:
            recorders.append(InterceptorClient(inner))
            return recorders[-1]

        await w.start(wrap_client=record)
        suite.recorder = recorders[0]
        count = len(cases)

        async def reconciled_again() -> bool:
            return all(reconciles(c) - totals[c] >= count for c in CONTROLLERS)

        # a controller stuck on one case (or a case that keeps moving) is reported by that case's own test
        with contextlib.suppress(AssertionError):
            await eventually(reconciled_again, within=30)
        with contextlib.suppress(AssertionError):
            await consistently(lambda: _quiet(suite), duration=2.0)
        for case in cases.values():
            if case.error is None:
                case.after = await snapshot(w, case)
                keys = {key for _, key in case.objects.values()}
                case.patches = [
                    f"{c.kind} {c.namespace}/{c.name} {c.subresource}".strip()
                    for c in suite.recorder.calls
                    if c.verb == "patch" and f"{c.namespace}/{c.name}" in keys
                ]
        await _each(list(cases.values()), lambda c: replace_listener(w, c))
        yield suite
    finally:
        await w.stop()
        await w.purge()
        for ns in (namespace, controller_namespace):
            with contextlib.suppress(Exception):
                await env.delete_namespace(ns)
        await client.close()


async def _quiet(suite: Suite) -> bool:
    for case in suite.cases.values():
        if case.error is None and await snapshot(suite.world, case) != case.before:
            return False
    return True


@pytest.mark.parametrize(("field_name", "keys"), CASES, ids=[title(f, k) for f, k in CASES])
# Upstream: Describe "Resource metadata empty collection convergence" / It "<field> with empty [<keys>]" (#4695)
async def test_resource_metadata_empty_collection_convergence(
    suite: Suite, field_name: str, keys: tuple[str, ...]
) -> None:
    case = suite.cases[title(field_name, keys)]
    if case.error is not None:
        raise case.error
    assert suite.recorder is not None
    assert suite.recorder.count("watch") > 0, "the recorder sits between the restarted manager and the server"
    w = suite.world
    # every object created once, none replaced or rewritten by the restarted controllers
    assert set(case.before) == set(case.objects), f"missing before the restart: {set(case.objects) - set(case.before)}"
    for label, was in case.before.items():
        now = case.after.get(label)
        assert now is not None, f"{label} was deleted"
        assert now[0] == was[0], f"{label} must not be replaced"
        assert now[1] == was[1], f"{label} must not be rewritten"
    # not even a no-op patch: "even no-op patches must not starve later reconciliation"
    assert case.patches == []
    # the controllers' own patches kept the explicit empty inputs
    ars = await w.get(ARS, case.name)
    for resource in FIELDS if field_name == "all" else (field_name,):
        for key in keys:
            assert ars["spec"][resource].get(key) == {}, f"spec.{resource}.{key} lost its explicit empty map"
    # a genuine spec change still replaces the listener
    assert case.replaced is not None
    assert case.replaced["spec"]["maxRunners"] == 2
