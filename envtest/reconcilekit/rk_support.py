"""Shared pieces of the reconcilekit integration tests."""

from __future__ import annotations

from typing import Any

from reconcilekit.cache import DeletedFinalStateUnknown
from reconcilekit.client.interfaces import GroupVersionKind, Object

CM = GroupVersionKind("", "v1", "ConfigMap")


def configmap(name: str, namespace: str, value: str = "0") -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "resilience"}},
        "data": {"value": value},
    }


class StateRecorder:
    """Rebuilds the world from handler calls alone, and keeps every call."""

    def __init__(self) -> None:
        self.state: dict[str, str] = {}
        """key → data.value, as the handler calls say."""
        self.calls: list[tuple[str, str, Any]] = []
        self.tombstones: list[str] = []

    def on_add(self, obj: Object, initial: bool) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        self.state[key] = obj["data"]["value"]
        self.calls.append(("add", key, obj["data"]["value"]))

    def on_update(self, old: Object, new: Object) -> None:
        key = f"{new['metadata']['namespace']}/{new['metadata']['name']}"
        self.state[key] = new["data"]["value"]
        self.calls.append(("update", key, new["data"]["value"]))

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            key = obj.key
            self.tombstones.append(key)
        else:
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        self.state.pop(key, None)
        self.calls.append(("delete", key, None))


def server_state(items: list[Object]) -> dict[str, str]:
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["data"]["value"] for o in items}
