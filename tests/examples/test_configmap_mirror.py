"""The example operator, end to end on a manager over the in-memory FakeClient."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

import aiohttp

from reconcilekit.client.interfaces import ObjectKey
from reconcilekit.errors import NotFoundError
from reconcilekit.manager import Options, new_manager
from reconcilekit.testing import FakeClient, eventually

_PATH = Path(__file__).resolve().parents[2] / "examples" / "configmap_mirror.py"
_spec = importlib.util.spec_from_file_location("configmap_mirror", _PATH)
assert _spec is not None
assert _spec.loader is not None
mirror = importlib.util.module_from_spec(_spec)
sys.modules["configmap_mirror"] = mirror
_spec.loader.exec_module(mirror)


def source(targets: str, value: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "src", "annotations": {mirror.TARGETS: targets}},
        "data": {"value": value},
    }


async def test_mirror_follows_the_source_and_cleans_up() -> None:
    fake = FakeClient()
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=fake)
    mirror.setup(mgr, name="mirror-1")
    task = asyncio.create_task(mgr.start())
    try:
        await fake.create(source("a,b"))

        def copy(ns: str) -> Any:
            return fake.stored(mirror.CM, ObjectKey(ns, "settings"))

        def source_finalizers() -> list[str]:
            return list(fake.stored(mirror.CM, ObjectKey("src", "settings"))["metadata"].get("finalizers") or [])

        # The copies are written before the source's finalizer patch: wait for both.
        await eventually(lambda: copy("a") and copy("b") and mirror.FINALIZER in source_finalizers())
        assert copy("a")["data"] == {"value": "1"}
        assert mirror.FINALIZER in source_finalizers()

        src = await fake.get(mirror.CM, ObjectKey("src", "settings"))
        src["data"]["value"] = "2"
        await fake.update(src)
        await eventually(lambda: copy("a")["data"] == {"value": "2"} and copy("b")["data"] == {"value": "2"})

        tampered = await fake.get(mirror.CM, ObjectKey("b", "settings"))
        tampered["data"]["value"] = "hand-edited"
        await fake.update(tampered)
        await eventually(lambda: copy("b")["data"] == {"value": "2"})

        src = await fake.get(mirror.CM, ObjectKey("src", "settings"))
        src["metadata"]["annotations"][mirror.TARGETS] = "a"
        await fake.update(src)
        await eventually(lambda: copy("b") is None)

        await fake.delete(src)
        await eventually(lambda: copy("a") is None and fake.stored(mirror.CM, ObjectKey("src", "settings")) is None)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_configmap_it_does_not_own_is_left_alone_and_reported() -> None:
    """A user's c/settings is never overwritten or deleted; the clash is named on the source."""
    fake = FakeClient()
    user = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "c"}}
    await fake.create({**user, "data": {"mine": "keep me"}})
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=fake)
    mirror.setup(mgr, retry=0.05, name="mirror-2")
    task = asyncio.create_task(mgr.start())
    try:
        await fake.create(source("c,d"))

        def stored(ns: str) -> Any:
            return fake.stored(mirror.CM, ObjectKey(ns, "settings"))

        def blocked_in() -> Any:
            return (stored("src")["metadata"].get("annotations") or {}).get(mirror.BLOCKED)

        await eventually(lambda: stored("d") is not None and blocked_in() == "c")
        await asyncio.sleep(0.2)  # a few retries (every 0.05 s): still not taken over
        assert stored("c")["data"] == {"mine": "keep me"}
        assert mirror.COPY_OF not in (stored("c")["metadata"].get("labels") or {})
        assert mirror.SOURCE not in (stored("c")["metadata"].get("annotations") or {})

        src = await fake.get(mirror.CM, ObjectKey("src", "settings"))
        src["metadata"]["annotations"][mirror.TARGETS] = ""  # clear the annotation
        await fake.update(src)
        await eventually(lambda: stored("d") is None and blocked_in() is None)
        assert stored("c")["data"] == {"mine": "keep me"}  # not deleted: never ours

        await fake.delete(await fake.get(mirror.CM, ObjectKey("src", "settings")))
        await eventually(lambda: stored("src") is None)
        assert stored("c")["data"] == {"mine": "keep me"}
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class NamespacedFakeClient(FakeClient):
    """A FakeClient whose creates fail with NotFound in a namespace that does not exist yet."""

    def __init__(self, namespaces: set[str]) -> None:
        super().__init__()
        self.namespaces = namespaces

    async def create(self, obj: Any, /, **kwargs: Any) -> Any:
        namespace = obj["metadata"].get("namespace")
        if namespace not in self.namespaces:
            raise NotFoundError(404, "NotFound", f'namespaces "{namespace}" not found')
        return await super().create(obj, **kwargs)


async def test_a_missing_target_namespace_is_mirrored_once_it_appears() -> None:
    """The create fails with NotFound: the source is requeued after ``retry`` until it works."""
    fake = NamespacedFakeClient({"src"})
    mgr = new_manager(None, Options(metrics_bind_address="0"), client=fake)
    mirror.setup(mgr, retry=0.05, name="mirror-3")
    task = asyncio.create_task(mgr.start())
    try:
        await fake.create(source("late"))
        await eventually(lambda: fake.stored(mirror.CM, ObjectKey("src", "settings"))["metadata"].get("finalizers"))
        fake.namespaces.add("late")  # no event about the namespace: only the requeue finds it
        await eventually(lambda: fake.stored(mirror.CM, ObjectKey("late", "settings")) is not None)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_probes_answer_ping() -> None:
    """setup registers ping checks: /healthz and /readyz answer ok."""
    fake = FakeClient()
    mgr = new_manager(None, Options(metrics_bind_address="0", health_probe_bind_address="127.0.0.1:0"), client=fake)
    mirror.setup(mgr, name="mirror-4")
    task = asyncio.create_task(mgr.start())
    try:
        await eventually(lambda: mgr.health_probe_address is not None)
        host, port = mgr.health_probe_address
        async with aiohttp.ClientSession() as session:
            for path in ("/healthz", "/readyz"):
                async with session.get(f"http://{host}:{port}{path}?verbose") as response:
                    assert response.status == 200
                    assert "[+]ping ok" in await response.text()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
