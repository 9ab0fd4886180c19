"""The example operator, end to end on a manager over the in-memory FakeClient."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

from reconcilekit.client.interfaces import ObjectKey
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
    mirror.setup(mgr)
    task = asyncio.create_task(mgr.start())
    try:
        await fake.create(source("a,b"))

        def copy(ns: str) -> Any:
            return fake.stored(mirror.CM, ObjectKey(ns, "settings"))

        await eventually(lambda: copy("a") and copy("b"))
        assert copy("a")["data"] == {"value": "1"}
        assert mirror.FINALIZER in fake.stored(mirror.CM, ObjectKey("src", "settings"))["metadata"]["finalizers"]

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
