"""The manager's event recorder on a real kube-apiserver (issue 19, rule 4).

1. As admin: an Event is created in the object's namespace with ``source.component`` = the
   recorder's name; the same Event again patches it to count 2 (one Event object).
2. As a ServiceAccount whose Role allows ConfigMaps but nothing on events (as ARC's chart): the
   first Event is refused with 403, one info line says so, no further Event request is sent for
   that namespace, and every reconcile that records an Event still succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from reconcilekit.builder import controller_managed_by
from reconcilekit.cache.options import Options as CacheOptions
from reconcilekit.client import GroupVersionKind, RestClient, new_client
from reconcilekit.config import RestConfig
from reconcilekit.manager import ControllerManager, Options, new_manager
from reconcilekit.reconcile import Request, Result
from reconcilekit.recorder import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from reconcilekit.testing import consistently, eventually

from .rk_support import CM, configmap

EVENT = GroupVersionKind("", "v1", "Event")
RBAC = "rbac.authorization.k8s.io/v1"
ACCOUNT = "no-events"


@contextlib.asynccontextmanager
async def running(mgr: ControllerManager) -> AsyncIterator[None]:
    task = asyncio.create_task(mgr.start(), name="manager")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _events(client: RestClient, namespace: str) -> list[dict[str, Any]]:
    return (await client.list(EVENT, namespace=namespace)).items


async def test_event_is_created_then_patched_to_count_2(
    rest_config: RestConfig, client: RestClient, namespace: str
) -> None:
    """The same Event twice: one Event object, count 2, in the ConfigMap's namespace."""
    cm = await client.create(configmap("events-admin", namespace))
    mgr = new_manager(rest_config, Options(metrics_bind_address="0"))
    recorder = mgr.get_event_recorder_for("recorder-test")
    async with running(mgr):
        recorder.event(cm, EVENT_TYPE_WARNING, "Failed", "could not do the thing")
        await eventually(lambda: _count_is(client, namespace, 1), timeout=30)
        recorder.event(cm, EVENT_TYPE_WARNING, "Failed", "could not do the thing")
        await eventually(lambda: _count_is(client, namespace, 2), timeout=30)
    [event] = await _events(client, namespace)
    assert event["source"] == {"component": "recorder-test"}
    assert event["involvedObject"]["uid"] == cm["metadata"]["uid"]
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "Failed", "could not do the thing")
    assert event["firstTimestamp"] <= event["lastTimestamp"]


async def _count_is(client: RestClient, namespace: str, count: int) -> bool:
    events = await _events(client, namespace)
    return len(events) == 1 and events[0].get("count") == count


async def _identity_without_events(client: RestClient, admin: RestConfig, namespace: str) -> RestConfig:
    """A ServiceAccount that may read ConfigMaps and nothing else; a REST config with its token."""
    meta = {"name": ACCOUNT, "namespace": namespace}
    await client.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    await client.create({"apiVersion": RBAC, "kind": "Role", "metadata": meta, "rules": [rule]})
    await client.create(
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
        }
    )
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    answer = await client.sub_resource("token").create(account, request)
    return RestConfig(
        host=admin.host, ca_file=admin.ca_file, ca_data=admin.ca_data, bearer_token=answer["status"]["token"]
    )


class _RecordingReconciler:
    """Records a Warning Event about each ConfigMap it reconciles, then succeeds."""

    def __init__(self, client: Any, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder
        self.succeeded: list[str] = []

    async def reconcile(self, request: Request, /) -> Result:
        cm = await self._client.get(CM, request.key)
        self._recorder.event(cm, EVENT_TYPE_WARNING, "Forbidden", f"cannot create roles for {request.name}")
        self._recorder.event(cm, EVENT_TYPE_NORMAL, "Reconciled", "done")
        self.succeeded.append(request.name)
        return Result()


@pytest.mark.slow
async def test_forbidden_events_log_once_and_reconciles_keep_succeeding(
    rest_config: RestConfig, client: RestClient, namespace: str
) -> None:
    """No rights on events (ARC's chart): one info line, one refused request, every reconcile succeeds."""
    config = await _identity_without_events(client, rest_config, namespace)
    async with new_client(config, field_owner="no-events", timeout=30.0) as sa:
        # a Role takes effect at once, but wait until the identity can read before starting
        await eventually(lambda: _can_list(sa, namespace), timeout=30)
        options = Options(metrics_bind_address="0", cache=CacheOptions(default_namespaces=[namespace]))
        mgr = new_manager(config, options, client=sa)
        reconciler = _RecordingReconciler(mgr.get_client(), mgr.get_event_recorder_for("arc-like-controller"))
        controller_managed_by(mgr).named("recording").for_(CM).complete(reconciler)
        with capture_logs() as logs:
            async with running(mgr):
                for i in range(3):
                    await client.create(configmap(f"cm-{i}", namespace))
                await eventually(lambda: {"cm-0", "cm-1", "cm-2"} <= set(reconciler.succeeded), timeout=60)
                await client.create(configmap("cm-late", namespace))
                await eventually(lambda: "cm-late" in reconciler.succeeded, timeout=60)
                await consistently(lambda: _event_requests(sa) == 1, duration=1.0)
    forbidden = [e for e in logs if "forbidden" in str(e.get("event"))]
    print(
        f"\nforbidden log lines: {forbidden}; event requests: {_event_requests(sa)}; reconciles: {reconciler.succeeded}"
    )
    assert len(forbidden) == 1
    assert forbidden[0]["log_level"] == "info"
    assert forbidden[0]["namespace"] == namespace
    assert not [e for e in logs if e["log_level"] == "error"]
    assert await _events(client, namespace) == []


async def _can_list(sa: RestClient, namespace: str) -> bool:
    try:
        await sa.list(CM, namespace=namespace, limit=1)
    except Exception:
        return False
    return True


def _event_requests(sa: RestClient) -> int:
    return sum(n for key, n in sa.request_counts().items() if key.resource == "events")
