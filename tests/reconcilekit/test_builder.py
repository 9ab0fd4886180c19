"""reconcilekit.builder: wiring for_/owns/watches into a controller on a manager, and build errors."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any, ClassVar

import pytest

from reconcilekit import predicate
from reconcilekit.builder import controller_managed_by
from reconcilekit.cache.interfaces import ResourceEventHandler
from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.controller import Options
from reconcilekit.handler import enqueue_requests_from_map_func
from reconcilekit.reconcile import Request, Result
from reconcilekit.workqueue import FakeClock

DEPLOYMENT = GroupVersionKind("apps", "v1", "Deployment")
REPLICASET = GroupVersionKind("apps", "v1", "ReplicaSet")
CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
_n = itertools.count()


class Registration:
    def has_synced(self) -> bool:
        return True


class Informer:
    """Calls handlers synchronously; always synced."""

    def __init__(self) -> None:
        self.handlers: list[ResourceEventHandler] = []

    def add_event_handler(self, handler: ResourceEventHandler, /, *, resync_period: float | None = None) -> Any:
        self.handlers.append(handler)
        return Registration()

    def remove_event_handler(self, registration: Any, /) -> None:
        self.handlers.clear()

    def add(self, o: dict[str, Any]) -> None:
        for h in self.handlers:
            h.on_add(o, False)

    def update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for h in self.handlers:
            h.on_update(old, new)


class Cache:
    def __init__(self) -> None:
        self.informers: dict[GroupVersionKind, Informer] = {}

    async def get_informer(self, gvk: GroupVersionKind, /) -> Informer:
        return self.informers.setdefault(gvk, Informer())


class FakeManager:
    """Just what the builder uses: the cache and add()."""

    def __init__(self) -> None:
        self.cache = Cache()
        self.runnables: list[Any] = []

    def get_cache(self) -> Any:
        return self.cache

    def add(self, runnable: Any, /) -> None:
        self.runnables.append(runnable)


class Recorder:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def reconcile(self, request: Request, /) -> Result:
        self.requests.append(request)
        return Result()


class Deployment:
    """A model class: the builder reads its GVK class variable."""

    GVK: ClassVar[GroupVersionKind] = DEPLOYMENT


class ClusterThing:
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("example.com", "v1", "ClusterThing")
    NAMESPACED: ClassVar[bool] = False


def obj(gvk: GroupVersionKind, name: str, namespace: str = "ns", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": {"name": name, "namespace": namespace, **meta}}


def owned_by(gvk: GroupVersionKind, name: str, owner: str, **extra: Any) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "uid": "u", "controller": True}
    return obj(gvk, name, ownerReferences=[ref], **extra)


@contextlib.asynccontextmanager
async def running(mgr: FakeManager) -> Any:
    tasks = [asyncio.create_task(r.start(), name=f"runnable-{n}") for n, r in enumerate(mgr.runnables)]
    for _ in range(10):
        await asyncio.sleep(0)
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def options(**kw: Any) -> Options:
    return Options(clock=FakeClock(), skip_name_validation=True, **kw)


async def test_for_owns_and_watches_wire_their_handlers() -> None:
    """for_ enqueues the object, owns its controller owner, watches whatever the handler maps to."""
    mgr, rec = FakeManager(), Recorder()
    (
        controller_managed_by(mgr)
        .for_(Deployment)
        .owns(REPLICASET)
        .watches(CONFIGMAP, enqueue_requests_from_map_func(lambda o: [Request("ns", "from-cm")]))
        .with_options(options())
        .complete(rec)
    )
    assert len(mgr.runnables) == 1
    async with running(mgr):
        mgr.cache.informers[DEPLOYMENT].add(obj(DEPLOYMENT, "d1"))
        mgr.cache.informers[REPLICASET].add(owned_by(REPLICASET, "rs", "d2"))
        mgr.cache.informers[CONFIGMAP].add(obj(CONFIGMAP, "cm"))
        await settle()
    assert rec.requests == [Request("ns", "d1"), Request("ns", "d2"), Request("ns", "from-cm")]


async def test_the_default_name_is_the_lower_cased_kind() -> None:
    """No named(): the for_ kind, lower-cased; the log context carries the group and kind."""
    mgr = FakeManager()
    controller = controller_managed_by(mgr).for_(Deployment).with_options(options()).build(Recorder())
    assert controller.name == "deployment"
    assert controller._options.log_values == {  # type: ignore[attr-defined]
        "controller_group": "apps",
        "controller_kind": "Deployment",
    }
    named = controller_managed_by(mgr).for_(DEPLOYMENT).named("my_ctrl").with_options(options()).build(Recorder())
    assert named.name == "my_ctrl"


async def test_event_filters_run_before_each_watch_s_own_predicates() -> None:
    """with_event_filter applies to for_/owns/watches, ahead of their predicates."""
    asked: list[str] = []

    def judge(name: str, answer: bool) -> predicate.Funcs:
        return predicate.Funcs(create_func=lambda e: asked.append(name) or answer)

    mgr, rec = FakeManager(), Recorder()
    (
        controller_managed_by(mgr)
        .for_(Deployment, predicates=[judge("for", True)])
        .with_event_filter(judge("global", True))
        .with_options(options())
        .complete(rec)
    )
    async with running(mgr):
        mgr.cache.informers[DEPLOYMENT].add(obj(DEPLOYMENT, "d1"))
        await settle()
    assert asked == ["global", "for"]
    assert rec.requests == [Request("ns", "d1")]


async def test_owns_follows_only_the_controller_owner_unless_match_every_owner() -> None:
    """owns() uses the controller reference; match_every_owner=True follows every Deployment owner."""
    refs = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ctrl", "uid": "1", "controller": True},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other", "uid": "2"},
    ]
    results = []
    for every in (False, True):
        mgr, rec = FakeManager(), Recorder()
        (
            controller_managed_by(mgr)
            .for_(Deployment)
            .owns(REPLICASET, match_every_owner=every)
            .with_options(options())
            .complete(rec)
        )
        async with running(mgr):
            mgr.cache.informers[REPLICASET].add(obj(REPLICASET, "rs", ownerReferences=refs))
            await settle()
        results.append(sorted(r.name for r in rec.requests))
    assert results == [["ctrl"], ["ctrl", "other"]]


async def test_owns_a_cluster_scoped_owner_enqueues_without_namespace() -> None:
    """A for_ model with NAMESPACED = False gets requests with namespace ""."""
    mgr, rec = FakeManager(), Recorder()
    controller_managed_by(mgr).for_(ClusterThing).owns(REPLICASET).with_options(options()).complete(rec)
    ref = {"apiVersion": "example.com/v1", "kind": "ClusterThing", "name": "t", "uid": "1", "controller": True}
    async with running(mgr):
        mgr.cache.informers[REPLICASET].add(obj(REPLICASET, "rs", ownerReferences=[ref]))
        await settle()
    assert rec.requests == [Request("", "t")]


def test_for_twice_fails_the_build() -> None:
    """for_ at most once."""
    b = controller_managed_by(FakeManager()).for_(Deployment).for_(REPLICASET).with_options(options())
    with pytest.raises(ValueError, match="only be called once"):
        b.build(Recorder())


def test_owns_without_for_fails_the_build() -> None:
    """owns() needs a for_ kind to enqueue."""
    b = controller_managed_by(FakeManager()).owns(REPLICASET).named(f"x{next(_n)}").with_options(options())
    with pytest.raises(ValueError, match=r"owns\(\) can only be used together with for_\(\)"):
        b.build(Recorder())


def test_no_watches_fails_the_build() -> None:
    """A controller with nothing to watch would never run."""
    with pytest.raises(ValueError, match="there are no watches configured"):
        controller_managed_by(FakeManager()).named("lonely").with_options(options()).build(Recorder())


def test_neither_for_nor_named_fails_the_build() -> None:
    """Without for_ there is no default name."""
    b = controller_managed_by(FakeManager()).watches(CONFIGMAP, enqueue_requests_from_map_func(lambda o: []))
    with pytest.raises(ValueError, match=r"one of for_\(\) or named\(\) must be called"):
        b.with_options(options()).build(Recorder())


def test_a_second_build_or_a_missing_reconciler_fails() -> None:
    """One builder makes one controller; a reconciler is required."""
    mgr = FakeManager()
    b = controller_managed_by(mgr).for_(Deployment).with_options(options())
    with pytest.raises(ValueError, match="non-nil Reconciler"):
        b.build(None)  # type: ignore[arg-type]
    b.build(Recorder())
    with pytest.raises(ValueError, match="one reconciler"):
        b.build(Recorder())
    assert len(mgr.runnables) == 1


def test_a_kind_without_a_gvk_is_rejected() -> None:
    """Kinds are GroupVersionKinds or models with a GVK."""
    with pytest.raises(TypeError, match="GVK"):
        controller_managed_by(FakeManager()).for_(dict)


def test_a_duplicate_controller_name_fails_the_build() -> None:
    """Names are unique per process unless validation is skipped."""
    name = f"builder_dup_{next(_n)}"
    controller_managed_by(FakeManager()).for_(Deployment).named(name).complete(Recorder())
    with pytest.raises(ValueError, match="already exists"):
        controller_managed_by(FakeManager()).for_(Deployment).named(name).complete(Recorder())
