"""reconcilekit.handler: object, owner and map-function handlers (semantics §6.5)."""

from __future__ import annotations

from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from reconcilekit.handler import (
    EnqueueRequestForObject,
    Funcs,
    enqueue_request_for_owner,
    enqueue_requests_from_map_func,
)
from reconcilekit.reconcile import Request
from reconcilekit.workqueue import LOW_PRIORITY, PriorityQueue, RateLimitingQueue

REPLICASET = GroupVersionKind("apps", "v1", "ReplicaSet")
NODE = GroupVersionKind("", "v1", "Node")


def pod(name: str = "p", namespace: str = "ns", owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def ref(name: str, *, api_version: str = "apps/v1", kind: str = "ReplicaSet", controller: bool | None = None) -> Any:
    r: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": name}
    if controller is not None:
        r["controller"] = controller
    return r


def drain(queue: RateLimitingQueue[Request]) -> list[Request]:
    items = list(queue._queue)  # the FIFO, in order
    return items


def test_enqueue_request_for_object_uses_the_object_key() -> None:
    """Create, delete and generic enqueue the object; update the new one."""
    h, q = EnqueueRequestForObject(), RateLimitingQueue[Request]()
    h.create(CreateEvent(pod("a")), q)
    h.delete(DeleteEvent(pod("b")), q)
    h.generic(GenericEvent(pod("c", namespace="")), q)
    h.update(UpdateEvent(pod("old"), pod("new")), q)
    h.update(UpdateEvent(pod("old"), None), q)  # type: ignore[arg-type]
    h.create(CreateEvent(None), q)  # type: ignore[arg-type]
    assert drain(q) == [
        Request("ns", "a"),
        Request("ns", "b"),
        Request("", "c"),
        Request("ns", "new"),
        Request("ns", "old"),
    ]


def test_owner_handler_follows_only_the_controller_reference_by_default() -> None:
    """only_controller: just the ownerReference with controller: true."""
    h, q = enqueue_request_for_owner(REPLICASET), RateLimitingQueue[Request]()
    h.create(CreateEvent(pod(owners=[ref("rs-1"), ref("rs-2", controller=True), ref("rs-3", controller=False)])), q)
    assert drain(q) == [Request("ns", "rs-2")]


def test_owner_handler_without_a_controller_reference_enqueues_nothing() -> None:
    """No controller reference, no request (only_controller)."""
    h, q = enqueue_request_for_owner(REPLICASET), RateLimitingQueue[Request]()
    h.create(CreateEvent(pod(owners=[ref("rs-1")])), q)
    h.create(CreateEvent(pod()), q)
    assert drain(q) == []


def test_owner_handler_matching_every_owner_matches_group_and_kind_ignoring_version() -> None:
    """Every matching reference; the version is ignored; other groups and kinds are not."""
    h, q = enqueue_request_for_owner(REPLICASET, only_controller=False), RateLimitingQueue[Request]()
    owners = [
        ref("rs-1"),
        ref("rs-2", api_version="apps/v1beta2"),
        ref("other-group", api_version="extensions/v1beta1"),
        ref("other-kind", kind="Deployment"),
    ]
    h.delete(DeleteEvent(pod(owners=owners)), q)
    assert drain(q) == [Request("ns", "rs-1"), Request("ns", "rs-2")]


def test_owner_handler_gives_cluster_scoped_owners_an_empty_namespace() -> None:
    """A cluster-scoped owner's request has namespace ""."""
    h, q = enqueue_request_for_owner(NODE, namespaced=False), RateLimitingQueue[Request]()
    h.generic(GenericEvent(pod(owners=[ref("node-1", api_version="v1", kind="Node", controller=True)])), q)
    assert drain(q) == [Request("", "node-1")]


def test_owner_handler_collects_owners_of_old_and_new_on_update() -> None:
    """An update enqueues the owners of both objects, each once."""
    h, q = enqueue_request_for_owner(REPLICASET, only_controller=False), RateLimitingQueue[Request]()
    old = pod(owners=[ref("rs-1"), ref("rs-2")])
    new = pod(owners=[ref("rs-2"), ref("rs-3")])
    h.update(UpdateEvent(old, new), q)
    assert drain(q) == [Request("ns", "rs-1"), Request("ns", "rs-2"), Request("ns", "rs-3")]
    assert q._metrics is None  # an unnamed queue


def test_owner_handler_drops_an_object_with_an_unparsable_api_version() -> None:
    """A bad apiVersion aborts that object's mapping."""
    h, q = enqueue_request_for_owner(REPLICASET, only_controller=False), RateLimitingQueue[Request]()
    h.create(CreateEvent(pod(owners=[ref("rs-1"), ref("bad", api_version="a/b/c")])), q)
    assert drain(q) == []


def test_map_func_handler_maps_old_and_new_and_dedups() -> None:
    """Update: the function runs on both objects; each request is added once."""
    calls: list[str] = []

    def fn(o: dict[str, Any]) -> list[Request]:
        calls.append(o["metadata"]["name"])
        return [Request("ns", "shared"), Request("ns", "for-" + o["metadata"]["name"])]

    h, q = enqueue_requests_from_map_func(fn), RateLimitingQueue[Request]()
    h.update(UpdateEvent(pod("old"), pod("new")), q)
    assert calls == ["old", "new"]
    assert drain(q) == [Request("ns", "shared"), Request("ns", "for-old"), Request("ns", "for-new")]
    h.create(CreateEvent(pod("x")), q)
    assert drain(q)[-1] == Request("ns", "for-x")


def test_funcs_without_functions_do_nothing() -> None:
    """Missing functions are no-ops."""
    q = RateLimitingQueue[Request]()
    Funcs().create(CreateEvent(pod()), q)
    Funcs(create_func=lambda e, q: q.add(Request("x", "y"))).create(CreateEvent(pod()), q)
    assert drain(q) == [Request("x", "y")]


def with_rv(o: dict[str, Any], rv: str) -> dict[str, Any]:
    return {**o, "metadata": {**o["metadata"], "resourceVersion": rv}}


async def test_initial_list_creates_and_resyncs_go_in_at_low_priority() -> None:
    """On a priority queue: initial-list creates and same-RV updates get LOW_PRIORITY (-100)."""
    h, q = EnqueueRequestForObject(), PriorityQueue[Request]()
    h.create(CreateEvent(pod("initial"), is_in_initial_list=True), q)
    h.create(CreateEvent(pod("new")), q)
    h.update(UpdateEvent(with_rv(pod("resync"), "5"), with_rv(pod("resync"), "5")), q)
    h.update(UpdateEvent(with_rv(pod("changed"), "5"), with_rv(pod("changed"), "6")), q)
    got = [await q.get_with_priority() for _ in range(4)]
    assert got == [
        (Request("ns", "new"), 0),
        (Request("ns", "changed"), 0),
        (Request("ns", "initial"), LOW_PRIORITY),
        (Request("ns", "resync"), LOW_PRIORITY),
    ]


async def test_owner_and_map_handlers_apply_the_low_priority_rules_too() -> None:
    """The owner and map-function handlers use the same priorities."""
    q = PriorityQueue[Request]()
    owner = enqueue_request_for_owner(REPLICASET)
    owner.create(CreateEvent(pod(owners=[ref("rs", controller=True)]), is_in_initial_list=True), q)
    mapped = enqueue_requests_from_map_func(lambda o: [Request("ns", "mapped")])
    mapped.update(UpdateEvent(with_rv(pod(), "1"), with_rv(pod(), "1")), q)
    assert sorted([await q.get_with_priority() for _ in range(2)]) == [  # type: ignore[type-var]
        (Request("ns", "mapped"), LOW_PRIORITY),
        (Request("ns", "rs"), LOW_PRIORITY),
    ]
