"""Fakes for the listener's unit tests: a Kubernetes stand-in and job messages."""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, Patch
from reconcilekit.errors import ConflictError, NotFoundError


@dataclass
class JobStarted:
    """A JobStarted message with the fields the scaler reads."""

    runner_name: str = "runner-1"
    runner_request_id: int = 123
    repository_name: str = "actions-runner-controller"
    owner_name: str = "actions"
    job_id: str = "job-1"
    job_workflow_ref: str = "actions/actions-runner-controller/.github/workflows/ci.yaml@refs/heads/main"
    job_display_name: str = "build"
    workflow_run_id: int = 456
    event_name: str = ""
    queue_time: datetime | None = None
    scale_set_assign_time: datetime | None = None
    runner_assign_time: datetime | None = None
    runner_id: int = 1


@dataclass
class JobCompleted:
    """A JobCompleted message."""

    runner_name: str = "runner-1"
    result: str = "succeeded"


@dataclass
class Request:
    """One recorded API call."""

    verb: str
    key: ObjectKey
    subresource: str = ""
    body: dict[str, Any] = field(default_factory=dict)


class _Status:
    def __init__(self, kube: FakeKube) -> None:
        self._kube = kube

    async def patch(self, obj: Object, patch: Patch, /) -> Object:
        return await self._kube._patch(obj, patch, subresource="status")


class FakeKube:
    """An in-memory API server for EphemeralRunners and EphemeralRunnerSets.

    Honours ``metadata.resourceVersion`` in a merge patch (409 when stale), applies
    merge patches, counts requests. ``on_patch`` hooks run before the n-th patch
    is applied (to interleave a competing write); ``not_found_for`` answers 404
    to that verb.
    """

    def __init__(self) -> None:
        self.objects: dict[tuple[str, ObjectKey], Object] = {}
        self.requests: list[Request] = []
        self.on_patch: list[Callable[[], None]] = []
        self.not_found_for: str = ""
        self._patches = 0

    def add(self, obj: Object) -> Object:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("resourceVersion", "1")
        self.objects[(obj["kind"], ObjectKey(meta["namespace"], meta["name"]))] = obj
        return obj

    def bump(self, kind: str, key: ObjectKey) -> None:
        meta = self.objects[(kind, key)]["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def status(self) -> _Status:
        return _Status(self)

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        self.requests.append(Request("GET", key))
        if self.not_found_for == "GET" or (gvk.kind, key) not in self.objects:
            raise NotFoundError(404, "NotFound", f"{key} not found")
        return copy.deepcopy(self.objects[(gvk.kind, key)])

    async def patch(self, obj: Object, patch: Patch, /) -> Object:
        return await self._patch(obj, patch, subresource="")

    async def _patch(self, obj: Object, patch: Patch, *, subresource: str) -> Object:
        assert patch.type == "application/merge-patch+json"
        key = ObjectKey(obj["metadata"]["namespace"], obj["metadata"]["name"])
        body = json.loads(patch.data(obj))
        self.requests.append(Request("PATCH", key, subresource, body))
        if self._patches < len(self.on_patch):
            self.on_patch[self._patches]()
        self._patches += 1
        if self.not_found_for == "PATCH" or (obj["kind"], key) not in self.objects:
            raise NotFoundError(404, "NotFound", f"{key} not found")
        stored = self.objects[(obj["kind"], key)]
        wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
        if wanted_rv and wanted_rv != stored["metadata"]["resourceVersion"]:
            raise ConflictError(409, "Conflict", "the object has been modified")
        if subresource == "status":
            body = {"status": body.get("status", {})}
        else:
            body = {k: v for k, v in body.items() if k != "status"}
        _merge(stored, body)
        self.bump(obj["kind"], key)
        obj.clear()
        obj.update(copy.deepcopy(stored))
        return obj

    def patches(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.verb == "PATCH"]


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def runner(name: str = "runner-1", phase: str = "", *, deleting: bool = False) -> Object:
    obj: Object = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"namespace": "default", "name": name, "resourceVersion": "1"},
        "status": {"phase": phase} if phase else {},
    }
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        obj["metadata"]["finalizers"] = ["x"]
    return obj


def runner_set(name: str = "set-abcde") -> Object:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"namespace": "default", "name": name, "resourceVersion": "1"},
        "spec": {"replicas": 0, "patchID": 0},
    }


@dataclass
class Stats:
    total_assigned_jobs: int = 0
    total_running_jobs: int = 0
    total_registered_runners: int = 0
    total_busy_runners: int = 0
    total_idle_runners: int = 0


@dataclass
class Session:
    session_id: uuid.UUID = field(default_factory=uuid.uuid4)
    message_queue_url: str = "http://127.0.0.1/queue"
    message_queue_access_token: str = "token-1"
    statistics: Stats | None = field(default_factory=Stats)


@dataclass
class Available:
    runner_request_id: int


@dataclass
class Message:
    message_id: int
    statistics: Stats | None = field(default_factory=Stats)
    job_available_messages: list[Available] = field(default_factory=list)
    job_started_messages: list[Any] = field(default_factory=list)
    job_completed_messages: list[Any] = field(default_factory=list)


class FakeSession:
    """A message session client: records every call in order, answers from a script."""

    def __init__(self, messages: Sequence[Message | BaseException | None] = ()) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.script = list(messages)
        self.session = Session()
        self.polling = asyncio.Event()
        self.acked = asyncio.Event()
        self.closed = False

    async def get_message(self, last: int, capacity: int, /) -> Message | None:
        self.calls.append(("get", last, capacity))
        if not self.script:
            self.polling.set()
            await asyncio.Event().wait()  # a long poll that only cancellation ends
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    async def delete_message(self, message_id: int, /) -> None:
        self.calls.append(("ack", message_id))
        self.acked.set()

    async def acquire_jobs(self, ids: list[int], /) -> list[int]:
        self.calls.append(("acquire", list(ids)))
        return list(ids)

    async def close(self) -> None:
        self.calls.append(("close",))
        self.closed = True
