"""Fakes for the controller and source tests: an informer, the informer map, a scripted reconciler."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reconcilekit.cache.interfaces import DeletedFinalStateUnknown, IndexFunc, ResourceEventHandler
from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.errors import NoKindMatchError
from reconcilekit.reconcile import Request, Result

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


def obj(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    """A ConfigMap-shaped object."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, **meta}}


class FakeRegistration:
    def __init__(self, informer: FakeInformer) -> None:
        self._informer = informer

    def has_synced(self) -> bool:
        return self._informer.synced


class FakeInformer:
    """Calls its handlers synchronously, like the real informer; sync is a switch."""

    def __init__(self, objects: list[dict[str, Any]] | None = None, *, synced: bool = True) -> None:
        self.objects = list(objects or [])
        self.synced = synced
        self.handlers: dict[FakeRegistration, ResourceEventHandler] = {}

    def add_event_handler(
        self, handler: ResourceEventHandler, /, *, resync_period: float | None = None
    ) -> FakeRegistration:
        registration = FakeRegistration(self)
        self.handlers[registration] = handler
        for o in self.objects:
            handler.on_add(o, True)
        return registration

    def remove_event_handler(self, registration: FakeRegistration, /) -> None:
        del self.handlers[registration]

    def add_indexers(self, indexers: dict[str, IndexFunc], /) -> None:
        pass

    def has_synced(self) -> bool:
        return self.synced

    def add(self, o: dict[str, Any]) -> None:
        for handler in list(self.handlers.values()):
            handler.on_add(o, False)

    def update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        for handler in list(self.handlers.values()):
            handler.on_update(old, new)

    def delete(self, o: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        for handler in list(self.handlers.values()):
            handler.on_delete(o)


class FakeInformers:
    """The informer map: one FakeInformer per kind; can fail the first ``fail`` lookups."""

    def __init__(self, fail: int = 0) -> None:
        self.informers: dict[GroupVersionKind, FakeInformer] = {}
        self.fail = fail
        self.calls = 0

    def informer_for(self, gvk: GroupVersionKind) -> FakeInformer:
        return self.informers.setdefault(gvk, FakeInformer())

    async def get_informer(self, gvk: GroupVersionKind, /) -> FakeInformer:
        self.calls += 1
        if self.calls <= self.fail:
            raise NoKindMatchError(gvk.group, gvk.version, gvk.kind)
        return self.informer_for(gvk)

    async def index_field(self, gvk: GroupVersionKind, field: str, extract: IndexFunc, /) -> None:
        pass

    async def wait_for_cache_sync(self) -> bool:
        return True

    async def start(self) -> None:
        await asyncio.Event().wait()


class ScriptedReconciler:
    """Answers each request from ``script`` (a function of the request and the call count)."""

    def __init__(self, script: Callable[[Request, int], Result] | None = None) -> None:
        self.script = script or (lambda _request, _n: Result())
        self.calls: asyncio.Queue[Request] = asyncio.Queue()
        self.count = 0

    async def reconcile(self, request: Request, /) -> Result:
        self.count += 1
        self.calls.put_nowait(request)
        return self.script(request, self.count)


async def settle(rounds: int = 20) -> None:
    """Let every ready callback run (the controller's outcome handling is synchronous after a reconcile)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def next_call(reconciler: ScriptedReconciler) -> Request:
    """The next request reconciled; the timeout only guards against a hang."""
    request = await asyncio.wait_for(reconciler.calls.get(), timeout=5)
    await settle()
    return request
