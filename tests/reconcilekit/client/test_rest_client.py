"""The REST client against a scripted HTTP endpoint on loopback: URLs, query, bodies, errors, counts, watch."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, ClassVar

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, ConfigDict

from reconcilekit.client import (
    GroupVersionKind,
    GroupVersionResource,
    ObjectKey,
    RestClient,
    RESTMapping,
    TypedClient,
    merge_from,
    merge_from_with_optimistic_lock,
    new_client,
)
from reconcilekit.client.metrics import REQUESTS_TOTAL, RequestKey, register_metrics
from reconcilekit.config import RestConfig
from reconcilekit.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NoKindMatchError,
    NotFoundError,
    TooManyRequestsError,
    TransportError,
    is_conflict,
)

CM = GroupVersionKind("", "v1", "ConfigMap")
NS = GroupVersionKind("", "v1", "Namespace")
WIDGET = GroupVersionKind("example.com", "v1", "Widget")

_DISCOVERY = {
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {"name": "configmaps", "namespaced": True, "kind": "ConfigMap"},
            {"name": "namespaces", "namespaced": False, "kind": "Namespace"},
            {"name": "namespaces/status", "namespaced": False, "kind": "Namespace"},
        ],
    },
}


def _status(code: int, reason: str, message: str = "m") -> dict[str, Any]:
    return {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}


class _Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: dict[tuple[str, str], tuple[int, Any, dict[str, str]]] = {}
        self.discovery = dict(_DISCOVERY)
        self.watch_lines: list[bytes] = []
        self.watch_silence = 0.0
        """Seconds a watch stays open and silent after its lines (or until ``end_silence``)."""
        self.end_silence = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            {
                "method": request.method,
                "path": request.path,
                "query": list(request.query.items()),
                "content_type": request.headers.get("Content-Type"),
                "authorization": request.headers.get("Authorization"),
                "body": body,
            }
        )
        if request.method == "GET" and request.path in self.discovery:
            return web.json_response(self.discovery[request.path])
        if request.path.endswith("/slow"):
            await asyncio.sleep(1.0)
        if request.query.get("watch") == "true":
            resp = web.StreamResponse()
            await resp.prepare(request)
            for line in self.watch_lines:
                await resp.write(line)
            if self.watch_silence:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.watch_silence):
                        await self.end_silence.wait()
            return resp
        code, payload, headers = self.replies.get((request.method, request.path), (404, _status(404, "NotFound"), {}))
        return web.json_response(payload, status=code, headers=headers)


@pytest.fixture
async def server() -> AsyncIterator[tuple[_Server, str]]:
    srv = _Server()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield srv, f"http://127.0.0.1:{port}"
    srv.end_silence.set()
    await runner.cleanup()


@pytest.fixture
async def client(server: tuple[_Server, str]) -> AsyncIterator[RestClient]:
    _, url = server
    async with new_client(RestConfig(host=url, bearer_token="t0ken"), field_owner="tester", timeout=5.0) as c:
        yield c


async def test_get_builds_the_namespaced_path_and_sends_the_token(
    server: tuple[_Server, str], client: RestClient
) -> None:
    srv, _ = server
    answer = {"kind": "ConfigMap", "metadata": {"name": "a"}}
    srv.replies[("GET", "/api/v1/namespaces/ns/configmaps/a")] = (200, answer, {})
    obj = await client.get(CM, ObjectKey("ns", "a"))
    assert obj["metadata"]["name"] == "a"
    assert srv.requests[-1]["authorization"] == "Bearer t0ken"
    assert "t0ken" not in repr(client.config)


async def test_cluster_scoped_paths_ignore_namespace(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    srv.replies[("GET", "/api/v1/namespaces/x")] = (200, {"kind": "Namespace"}, {})
    await client.get(NS, ObjectKey("", "x"))
    assert srv.requests[-1]["path"] == "/api/v1/namespaces/x"


async def test_list_query_and_items_get_their_kind(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    srv.replies[("GET", "/api/v1/namespaces/ns/configmaps")] = (
        200,
        {"kind": "ConfigMapList", "metadata": {"resourceVersion": "9", "continue": "tok"}, "items": [{"metadata": {}}]},
        {},
    )
    page = await client.list(CM, namespace="ns", labels={"b": "2", "a": "1"}, fields="metadata.name=x", limit=10)
    assert srv.requests[-1]["query"] == [
        ("labelSelector", "a=1,b=2"),
        ("fieldSelector", "metadata.name=x"),
        ("limit", "10"),
    ]
    assert page.items == [{"metadata": {}, "apiVersion": "v1", "kind": "ConfigMap"}]
    assert (page.resource_version, page.continue_token) == ("9", "tok")


async def test_writes_carry_field_owner_dry_run_and_explicit_content_type(
    server: tuple[_Server, str], client: RestClient
) -> None:
    srv, _ = server
    meta = {"name": "a", "namespace": "ns", "resourceVersion": "5"}
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    srv.replies[("POST", "/api/v1/namespaces/ns/configmaps")] = (201, {**base, "stored": True}, {})
    obj = dict(base)
    out = await client.create(obj, dry_run=True)
    assert out is obj
    assert obj["stored"] is True
    req = srv.requests[-1]
    assert req["query"] == [("dryRun", "All"), ("fieldManager", "tester")]
    assert req["content_type"] == "application/json"

    srv.replies[("PATCH", "/api/v1/namespaces/ns/configmaps/a/status")] = (200, base, {})
    patch = merge_from_with_optimistic_lock(base)
    await client.status().patch({**base, "status": {"x": 1}}, patch, field_owner="other")
    req = srv.requests[-1]
    assert req["content_type"] == "application/merge-patch+json"
    assert req["body"] == b'{"metadata":{"resourceVersion":"5"},"status":{"x":1}}'
    assert req["query"] == [("fieldManager", "other")]

    with pytest.raises(ValueError, match="force is only allowed on apply"):
        await client.patch(dict(base), patch, force=True)


async def test_apply_sends_force_and_field_manager(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    srv.replies[("PATCH", "/api/v1/namespaces/ns/configmaps/a")] = (200, base, {})
    await client.apply(dict(base))
    req = srv.requests[-1]
    assert req["content_type"] == "application/apply-patch+yaml"
    assert req["query"] == [("fieldManager", "tester"), ("force", "true")]


async def test_delete_sends_delete_options(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    srv.replies[("DELETE", "/api/v1/namespaces/ns/configmaps/a")] = (200, _status(200, ""), {})
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    await client.delete(obj, grace_period_seconds=0, propagation_policy="Foreground", preconditions={"uid": "u"})
    assert json.loads(srv.requests[-1]["body"]) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u"},
    }
    with pytest.raises(ValueError, match="unknown delete preconditions"):
        await client.delete(obj, preconditions={"name": "x"})
    # With a body the server ignores the query string, so a dry run must be in the body.
    await client.delete(obj, dry_run=True)
    assert json.loads(srv.requests[-1]["body"])["dryRun"] == ["All"]
    assert srv.requests[-1]["query"] == []


@pytest.mark.parametrize(
    ("code", "reason", "error"),
    [
        (404, "NotFound", NotFoundError),
        (403, "Forbidden", ForbiddenError),
        (409, "Conflict", ConflictError),
        (409, "AlreadyExists", AlreadyExistsError),
        (422, "Invalid", InvalidError),
        (410, "Expired", GoneError),
    ],
)
async def test_status_answers_become_errors(
    server: tuple[_Server, str], client: RestClient, code: int, reason: str, error: type[Exception]
) -> None:
    srv, _ = server
    srv.replies[("GET", "/api/v1/namespaces/ns/configmaps/a")] = (code, _status(code, reason), {})
    with pytest.raises(error) as info:
        await client.get(CM, ObjectKey("ns", "a"))
    assert is_conflict(info.value) == (reason == "Conflict")


async def test_retry_after_header_reaches_the_error(
    server: tuple[_Server, str], client: RestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reconcilekit.client import _rest

    monkeypatch.setattr(_rest, "MAX_RETRIES", 0)
    srv, _ = server
    srv.replies[("GET", "/api/v1/namespaces/ns/configmaps/a")] = (
        429,
        _status(429, "TooManyRequests"),
        {"Retry-After": "3"},
    )
    with pytest.raises(TooManyRequestsError) as info:
        await client.get(CM, ObjectKey("ns", "a"))
    assert info.value.retry_after == 3.0


async def test_unknown_kind_is_no_kind_match_and_refreshes_discovery(
    server: tuple[_Server, str], client: RestClient
) -> None:
    srv, _ = server
    with pytest.raises(NoKindMatchError):
        await client.get(WIDGET, ObjectKey("ns", "w"))
    srv.discovery["/apis/example.com/v1"] = {
        "kind": "APIResourceList",
        "resources": [{"name": "widgets", "namespaced": True, "kind": "Widget"}],
    }
    srv.replies[("GET", "/apis/example.com/v1/namespaces/ns/widgets/w")] = (200, {"kind": "Widget"}, {})
    assert await client.get(WIDGET, ObjectKey("ns", "w")) == {"kind": "Widget"}


async def test_bad_input_fails_before_any_request(client: RestClient) -> None:
    with pytest.raises(ValueError, match="needs a namespace"):
        await client.get(CM, ObjectKey("", "a"))
    with pytest.raises(ValueError, match=r"needs metadata\.namespace"):
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    with pytest.raises(ValueError, match="no apiVersion and kind"):
        await client.create({"metadata": {"name": "a"}})
    with pytest.raises(ValueError, match="field owner"):
        new_client(RestConfig(host="http://127.0.0.1:1"), field_owner="x" * 129)


async def test_requests_are_counted_per_client_and_in_prometheus(
    server: tuple[_Server, str], client: RestClient
) -> None:
    srv, url = server
    srv.replies[("GET", "/api/v1/namespaces/ns/configmaps/a")] = (200, {}, {})
    host = url.removeprefix("http://")
    before = REQUESTS_TOTAL.labels(code="200", method="GET", host=host)._value.get()
    await client.get(CM, ObjectKey("ns", "a"))
    with pytest.raises(NotFoundError):
        await client.get(CM, ObjectKey("ns", "b"))
    assert client.request_counts() == {
        RequestKey("discovery", "", 200): 1,
        RequestKey("get", "configmaps", 200): 1,
        RequestKey("get", "configmaps", 404): 1,
    }
    assert client.counts.by_verb() == {"discovery": 1, "get": 2}
    assert REQUESTS_TOTAL.labels(code="200", method="GET", host=host)._value.get() == before + 2
    client.reset_request_counts()
    assert client.request_counts() == {}
    registry = CollectorRegistry()
    register_metrics(registry)
    register_metrics(registry)  # idempotent
    assert registry.get_sample_value("rest_client_requests_total", {"code": "404", "method": "GET", "host": host})


async def test_no_answer_is_a_transport_error_and_counted() -> None:
    async with new_client(RestConfig(host="http://127.0.0.1:9"), timeout=2.0) as c:
        c.rest_mapper.add(RESTMapping(CM, GroupVersionResource("", "v1", "configmaps"), True))
        with pytest.raises(TransportError):
            await c.get(CM, ObjectKey("ns", "a"))
        assert c.request_counts() == {RequestKey("get", "configmaps", "<error>"): 1}


async def test_watch_yields_events_and_raises_gone_on_410(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    srv.watch_lines = [
        b'{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}\n',
        b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}\n',
        b'{"type":"ERROR","object":' + json.dumps(_status(410, "Expired", "too old")).encode() + b"}\n",
    ]
    events = []

    async def consume() -> None:
        async with aclosing(client.watch(CM, namespace="ns", resource_version="5", timeout_seconds=30)) as stream:
            async for event in stream:
                events.append(event)

    with pytest.raises(GoneError, match="too old"):
        await consume()
    assert [e.type for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1].object["kind"] == "ConfigMap"
    assert srv.requests[-1]["query"] == [
        ("watch", "true"),
        ("resourceVersion", "5"),
        ("timeoutSeconds", "30"),
        ("allowWatchBookmarks", "true"),
    ]


async def test_a_watch_silent_past_its_read_idle_timeout_fails_issue_16(
    server: tuple[_Server, str], client: RestClient
) -> None:
    """An open watch that receives no byte for read_idle_timeout seconds is a TransportError (sock_read)."""
    srv, _ = server
    srv.watch_lines = [b'{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}\n']
    srv.watch_silence = 10.0
    events = []

    async def consume() -> None:
        async with aclosing(client.watch(CM, timeout_seconds=60, read_idle_timeout=0.3)) as stream:
            async for event in stream:
                events.append(event)

    started = asyncio.get_running_loop().time()
    with pytest.raises(TransportError) as failure:
        await consume()
    waited = asyncio.get_running_loop().time() - started
    assert [e.type for e in events] == ["ADDED"]
    assert isinstance(failure.value.__cause__, aiohttp.SocketTimeoutError)
    assert 0.3 <= waited < 5.0


async def test_closed_client_refuses_requests(server: tuple[_Server, str]) -> None:
    _, url = server
    c = new_client(RestConfig(host=url))
    await c.close()
    with pytest.raises(RuntimeError, match="closed"):
        await c.get(CM, ObjectKey("ns", "a"))


class _ConfigMap(BaseModel):
    """A deliberately partial model: everything it does not declare must survive."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    GVK: ClassVar[GroupVersionKind] = CM
    api_version: str = "v1"
    kind: str = "ConfigMap"
    metadata: dict[str, Any] = {}
    data: dict[str, str] | None = None


async def test_typed_client_round_trips_unknown_fields(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    stored = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"},
        "data": {"k": "v"},
        "binaryData": {"b": "AA=="},
        "immutable": False,
    }
    srv.replies[("GET", "/api/v1/namespaces/ns/configmaps/a")] = (200, stored, {})
    typed = TypedClient(client)
    model = await typed.get(_ConfigMap, ObjectKey("ns", "a"))
    patch = merge_from(model)
    model.data = {"k": "w"}
    srv.replies[("PATCH", "/api/v1/namespaces/ns/configmaps/a")] = (200, {**stored, "data": {"k": "w"}}, {})
    out = await typed.patch(model, patch)
    assert out is model
    assert srv.requests[-1]["body"] == b'{"data":{"k":"w"}}'
    srv.replies[("PUT", "/api/v1/namespaces/ns/configmaps/a")] = (200, stored, {})
    await typed.update(model)
    sent = json.loads(srv.requests[-1]["body"])
    assert sent["binaryData"] == {"b": "AA=="}
    assert sent["immutable"] is False
    assert model.data == {"k": "v"}  # refreshed from the answer


async def test_token_bucket_spaces_requests_after_the_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    """Burst 2 at 10 qps: two at once, then 0.1 s apart (sleeps recorded, not timed)."""
    from reconcilekit.client import _rest

    now = [100.0]
    sleeps: list[float] = []
    monkeypatch.setattr(_rest.time, "monotonic", lambda: now[0])

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(round(seconds, 6))

    monkeypatch.setattr(_rest.asyncio, "sleep", fake_sleep)
    bucket = _rest.TokenBucket(10.0, 2)
    for _ in range(4):
        await bucket.wait()
    assert sleeps == [0.1, 0.2]
    now[0] += 1.0  # a second later the bucket is full again (capped at burst)
    sleeps.clear()
    await bucket.wait()
    await bucket.wait()
    assert sleeps == []


async def test_retry_after_answers_are_retried_then_surface(server: tuple[_Server, str], client: RestClient) -> None:
    """429 with Retry-After is repeated (client-go's rule); without the header it is raised at once."""
    srv, _ = server
    path = "/api/v1/namespaces/ns/configmaps/busy"
    srv.replies[("GET", path)] = (429, _status(429, "TooManyRequests"), {"Retry-After": "0"})
    with pytest.raises(TooManyRequestsError):
        await client.get(CM, ObjectKey("ns", "busy"))
    assert client.request_counts()[RequestKey("get", "configmaps", 429)] == 11  # 1 + MAX_RETRIES

    srv.replies[("GET", path)] = (429, _status(429, "TooManyRequests"), {})
    client.reset_request_counts()
    with pytest.raises(TooManyRequestsError):
        await client.get(CM, ObjectKey("ns", "busy"))
    assert client.request_counts() == {RequestKey("get", "configmaps", 429): 1}


async def test_every_request_has_a_timeout(server: tuple[_Server, str]) -> None:
    """A server slower than the client's timeout gives TransportError, counted as <error>."""
    _, url = server
    async with new_client(RestConfig(host=url), timeout=0.2) as c:
        c.rest_mapper.add(RESTMapping(CM, GroupVersionResource("", "v1", "configmaps"), True))
        with pytest.raises(TransportError, match="timed out"):
            await c.get(CM, ObjectKey("ns", "slow"))
        assert c.request_counts() == {RequestKey("get", "configmaps", "<error>"): 1}


async def test_with_options_shares_the_session_and_counts(server: tuple[_Server, str], client: RestClient) -> None:
    srv, _ = server
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    srv.replies[("POST", "/api/v1/namespaces/ns/configmaps")] = (201, base, {})
    dry = client.with_options(dry_run=True, field_owner="dry-owner")
    await dry.create(dict(base))
    assert srv.requests[-1]["query"] == [("dryRun", "All"), ("fieldManager", "dry-owner")]
    await dry.close()  # not the owner: the parent's session stays open
    await client.create(dict(base))
    assert srv.requests[-1]["query"] == [("fieldManager", "tester")]
    assert client.counts.by_verb()["create"] == 2


def test_public_names_resolve() -> None:
    """Every name in the __all__ of the client's modules exists."""
    import importlib

    for name in (
        "reconcilekit.client",
        "reconcilekit.client.client",
        "reconcilekit.client.patch",
        "reconcilekit.client.typed",
        "reconcilekit.client.apiutil",
        "reconcilekit.client.metrics",
        "reconcilekit.config",
        "reconcilekit.retry",
        "reconcilekit.controllerutil",
        "reconcilekit.errors",
    ):
        module = importlib.import_module(name)
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == [], name


def test_requests_before_the_counter_exists_are_in_it_and_prometheus_is_not_imported_until() -> None:
    """A process that never reads `REQUESTS_TOTAL` never imports prometheus_client; one that reads it
    late finds every request counted since the start."""
    script = (
        "import sys\n"
        "from reconcilekit.client import metrics\n"
        "metrics.count_request(200, 'GET', 'h:1'); metrics.count_request(200, 'GET', 'h:1')\n"
        "metrics.count_request('<error>', 'PATCH', 'h:1')\n"
        "assert 'prometheus_client' not in sys.modules\n"
        "total = metrics.REQUESTS_TOTAL\n"
        "metrics.count_request(200, 'GET', 'h:1')\n"
        "print(total.labels(code='200', method='GET', host='h:1')._value.get(),"
        " total.labels(code='<error>', method='PATCH', host='h:1')._value.get())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3.0", "1.0"]
