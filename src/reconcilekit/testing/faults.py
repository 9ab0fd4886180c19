"""Fault injection around any client: lagging watches, conflicts, crashes, request counts.

Every tool here wraps a `WithWatch` client (the in-memory `FakeClient` or the real REST
client) and is itself a `WithWatch`, so a cache or a manager can be built over it.

* `InterceptorClient`: records every call and runs your hook before (and after) it; the hook
  may raise to inject an error. `count` / `assert_count` check request counts.
* `ConflictInjector`: 409 Conflict on the k-th (and following ``times - 1``) writes of a kind.
* `CrashInjector`: cancels the reconcile at a chosen client call, before or after the call
  reaches the server (a process that died there), via `CrashInjector.run`.
* `LaggingClient`: watch events held back or delayed on demand, or watches cut and kept
  from reconnecting (a cache that falls behind).

Example, a reconciler that must survive a crash right after it created a Pod::

    fake = FakeClient([runner_set])
    crash = CrashInjector(fake, verb="create", kind="Pod", nth=1, when="after")
    reconciler = MyReconciler(client=crash)
    assert await crash.run(reconciler.reconcile(request)) is CRASHED
    await reconciler.reconcile(request)                       # "the restarted process"
    crash.assert_count(1, verb="create", kind="Pod")           # no second Pod

Python only: controller-runtime's interceptor client, grown into a fault kit.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from reconcilekit.client.interfaces import (
    GroupVersionKind,
    Object,
    ObjectKey,
    ObjectList,
    Patch,
    WatchEvent,
    WithWatch,
)
from reconcilekit.errors import ConflictError

__all__ = [
    "CRASHED",
    "Call",
    "ConflictInjector",
    "CrashInjector",
    "InterceptorClient",
    "LaggingClient",
    "SimulatedCrash",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Call:
    """One client call as the hooks see it.

    Attributes:
        verb: get, list, watch, create, update, patch, delete, deletecollection.
        kind: the kind's name ("Pod").
        namespace, name: the target ("" when not applicable).
        subresource: "status" etc., or "".
        obj: the object passed to a write, else ``None``.
    """

    verb: str
    kind: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    obj: Object | None = None


Hook = Callable[[Call], Awaitable[None] | None]


def _call_of(verb: str, obj: Object, subresource: str = "") -> Call:
    meta = obj.get("metadata") or {}
    return Call(
        verb,
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        subresource,
        obj,
    )


class InterceptorClient:
    """A `WithWatch` that records calls and runs hooks around them.

    Args:
        client: the client that does the work.
        before: called before each call is sent; raise to fail the call instead.
        after: called after a call succeeded.

    Attributes:
        calls: every call made, oldest first.
    """

    def __init__(self, client: WithWatch, *, before: Hook | None = None, after: Hook | None = None) -> None:
        self._client = client
        self._before = before
        self._after = after
        self.calls: list[Call] = []

    @property
    def inner(self) -> WithWatch:
        """The wrapped client."""
        return self._client

    def count(self, verb: str | None = None, kind: str | None = None, *, subresource: str | None = None) -> int:
        """How many calls match every filter given."""
        return sum(
            1
            for c in self.calls
            if (verb is None or c.verb == verb)
            and (kind is None or c.kind == kind)
            and (subresource is None or c.subresource == subresource)
        )

    def assert_count(
        self, expected: int, *, verb: str | None = None, kind: str | None = None, subresource: str | None = None
    ) -> None:
        """Fail with the list of calls made unless exactly ``expected`` calls match.

        Raises:
            AssertionError: the count differs.
        """
        got = self.count(verb, kind, subresource=subresource)
        if got != expected:
            seen = "\n".join(f"  {c.verb} {c.kind} {c.namespace}/{c.name} {c.subresource}".rstrip() for c in self.calls)
            raise AssertionError(f"expected {expected} {verb or '*'} {kind or '*'} calls, got {got}:\n{seen}")

    def reset(self) -> None:
        """Forget the recorded calls."""
        self.calls.clear()

    async def _around(self, call: Call, action: Callable[[], Awaitable[_T]]) -> _T:
        self.calls.append(call)
        await self._hook(self._before, call)
        result = await action()
        await self._hook(self._after, call)
        return result

    @staticmethod
    async def _hook(hook: Hook | None, call: Call) -> None:
        if hook is None:
            return
        out = hook(call)
        if inspect.isawaitable(out):
            await out

    # -- Reader ------------------------------------------------------------------------

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        return await self._around(Call("get", gvk.kind, key.namespace, key.name), lambda: self._client.get(gvk, key))

    async def list(self, gvk: GroupVersionKind, /, **kwargs: Any) -> ObjectList:
        call = Call("list", gvk.kind, kwargs.get("namespace") or "")
        return await self._around(call, lambda: self._client.list(gvk, **kwargs))

    # -- Writer ------------------------------------------------------------------------

    async def create(self, obj: Object, /, **kwargs: Any) -> Object:
        return await self._around(_call_of("create", obj), lambda: self._client.create(obj, **kwargs))

    async def update(self, obj: Object, /, **kwargs: Any) -> Object:
        return await self._around(_call_of("update", obj), lambda: self._client.update(obj, **kwargs))

    async def patch(self, obj: Object, patch: Patch, /, **kwargs: Any) -> Object:
        return await self._around(_call_of("patch", obj), lambda: self._client.patch(obj, patch, **kwargs))

    async def delete(self, obj: Object, /, **kwargs: Any) -> Object | None:
        return await self._around(_call_of("delete", obj), lambda: self._client.delete(obj, **kwargs))

    async def delete_all_of(self, gvk: GroupVersionKind, /, **kwargs: Any) -> None:
        call = Call("deletecollection", gvk.kind, kwargs.get("namespace") or "")
        await self._around(call, lambda: self._client.delete_all_of(gvk, **kwargs))

    def status(self) -> _InterceptedSubResource:
        return _InterceptedSubResource(self, "status")

    def sub_resource(self, name: str, /) -> _InterceptedSubResource:
        return _InterceptedSubResource(self, name)

    # -- watch -------------------------------------------------------------------------

    async def watch(self, gvk: GroupVersionKind, /, **kwargs: Any) -> AsyncIterator[WatchEvent]:
        call = Call("watch", gvk.kind, kwargs.get("namespace") or "")
        self.calls.append(call)
        await self._hook(self._before, call)
        async for event in self._client.watch(gvk, **kwargs):
            yield event


class _InterceptedSubResource:
    def __init__(self, parent: InterceptorClient, name: str) -> None:
        self._parent = parent
        self._name = name

    def _inner(self) -> Any:
        client = self._parent.inner
        return client.status() if self._name == "status" else client.sub_resource(self._name)

    async def get(self, obj: Object, /) -> Object:
        return await self._parent._around(_call_of("get", obj, self._name), lambda: self._inner().get(obj))

    async def create(self, obj: Object, body: Object, /, **kwargs: Any) -> Object:
        call = _call_of("create", obj, self._name)
        return await self._parent._around(call, lambda: self._inner().create(obj, body, **kwargs))

    async def update(self, obj: Object, /, **kwargs: Any) -> Object:
        call = _call_of("update", obj, self._name)
        return await self._parent._around(call, lambda: self._inner().update(obj, **kwargs))

    async def patch(self, obj: Object, patch: Patch, /, **kwargs: Any) -> Object:
        call = _call_of("patch", obj, self._name)
        return await self._parent._around(call, lambda: self._inner().patch(obj, patch, **kwargs))


class ConflictInjector(InterceptorClient):
    """409 Conflict on the ``nth`` write of ``kind`` (1-based) and the ``times - 1`` after it.

    Args:
        verbs: which calls count as writes ("update" and "patch", subresources included).

    The failed write never reaches the server, exactly like a stale resourceVersion.
    """

    def __init__(
        self,
        client: WithWatch,
        *,
        kind: str,
        nth: int = 1,
        times: int = 1,
        verbs: tuple[str, ...] = ("update", "patch"),
    ) -> None:
        super().__init__(client, before=self._maybe_conflict)
        if nth < 1 or times < 1:
            raise ValueError("nth and times must be at least 1")
        self._kind, self._nth, self._times, self._verbs = kind, nth, times, verbs
        self._writes = 0
        self.injected = 0
        """How many conflicts were injected so far."""

    def _maybe_conflict(self, call: Call) -> None:
        if call.kind != self._kind or call.verb not in self._verbs:
            return
        self._writes += 1
        if self._nth <= self._writes < self._nth + self._times:
            self.injected += 1
            raise ConflictError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {call.kind.lower()}s "{call.name}": the object has been modified; '
                "please apply your changes to the latest version and try again (injected)",
            )


class SimulatedCrash(BaseException):
    """Raised at a crash point outside `CrashInjector.run`: passes ``except Exception`` like cancellation."""


class _Crashed:
    def __repr__(self) -> str:
        return "CRASHED"


CRASHED = _Crashed()
"""What `CrashInjector.run` returns when the crash point was hit."""


class CrashInjector(InterceptorClient):
    """Stops a reconcile dead at the ``nth`` call matching ``verb`` and ``kind``.

    ``when="before"``: the call never reaches the server. ``when="after"``: the server
    applied it, but the caller never sees the answer (the process died in between).

    Inside `run` the crash is a real cancellation of the task running the reconcile, raised
    at that await point; elsewhere it raises `SimulatedCrash`. The injector fires once.
    """

    def __init__(
        self,
        client: WithWatch,
        *,
        verb: str,
        kind: str,
        nth: int = 1,
        when: Literal["before", "after"] = "before",
    ) -> None:
        super().__init__(
            client,
            before=self._maybe_crash if when == "before" else None,
            after=self._maybe_crash if when == "after" else None,
        )
        self._verb, self._kind, self._nth = verb, kind, nth
        self._seen = 0
        self._task: asyncio.Task[Any] | None = None
        self.fired = False
        """True once the crash happened."""

    async def _maybe_crash(self, call: Call) -> None:
        if self.fired or call.verb != self._verb or call.kind != self._kind:
            return
        self._seen += 1
        if self._seen != self._nth:
            return
        self.fired = True
        current = asyncio.current_task()
        if self._task is not None and current is self._task:
            current.cancel()
            await asyncio.sleep(0)  # the CancelledError surfaces here, inside the reconcile
        raise SimulatedCrash(f"simulated crash at {call.verb} {call.kind} {call.namespace}/{call.name}")

    async def run(self, coro: Coroutine[Any, Any, _T]) -> _T | _Crashed:
        """Run ``coro`` (a reconcile) in its own task; `CRASHED` if the crash point cancelled it."""
        task = asyncio.ensure_future(coro)
        self._task = task
        try:
            return await task
        except (asyncio.CancelledError, SimulatedCrash):
            if self.fired and task.done():
                return CRASHED
            raise
        finally:
            self._task = None


class LaggingClient(InterceptorClient):
    """A client whose watches fall behind on demand.

    * `hold` / `release`: events keep arriving from the server but are delivered only on
      `release` (in order). The cache then serves stale data, as a slow informer does.
    * ``delay``: seconds each event waits before delivery.
    * `disconnect` / `reconnect`: end every open watch cleanly and keep new ones from
      opening until `reconnect`; changes made meanwhile reach the informer only through
      its re-watch, or its relist if the server compacted past its resourceVersion.
    """

    def __init__(self, client: WithWatch, *, delay: float = 0.0) -> None:
        super().__init__(client)
        self.delay = delay
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._open = asyncio.Event()
        self._open.set()
        self._cut = 0
        self.watches_opened = 0
        """How many watches reached the server."""

    def hold(self) -> None:
        """Buffer events from now on."""
        self._flowing.clear()

    def release(self) -> None:
        """Deliver buffered events and stop buffering."""
        self._flowing.set()

    def disconnect(self) -> None:
        """End every open watch and block new ones until `reconnect`."""
        self._open.clear()
        self._cut += 1

    def reconnect(self) -> None:
        """Let watches open again."""
        self._open.set()

    async def watch(self, gvk: GroupVersionKind, /, **kwargs: Any) -> AsyncIterator[WatchEvent]:
        self.calls.append(Call("watch", gvk.kind, kwargs.get("namespace") or ""))
        await self._open.wait()
        self.watches_opened += 1
        generation = self._cut
        queue: asyncio.Queue[WatchEvent | BaseException | None] = asyncio.Queue()

        async def pump() -> None:
            try:
                async for event in self._client.watch(gvk, **kwargs):
                    queue.put_nowait(event)
                queue.put_nowait(None)
            except Exception as err:
                queue.put_nowait(err)

        reader = asyncio.create_task(pump(), name=f"lagging-watch-{gvk.kind}")
        try:
            while True:
                if self._cut != generation:
                    return
                try:
                    async with asyncio.timeout(0.05):
                        item = await queue.get()
                except TimeoutError:
                    continue
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                while not self._flowing.is_set() and self._cut == generation:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(0.05):
                            await self._flowing.wait()
                if self._cut != generation:
                    return
                if self.delay > 0:
                    await asyncio.sleep(self.delay)
                yield item
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
