"""The HTTP routes of the fake Actions service: same paths and JSON as the real one.

GitHub side (with or without ``/api/v3``): access tokens, registration
tokens, runner registration. Actions side under ``/tenant/1/``: runner
groups, scale sets, JIT configs, runners, message sessions, the message
queue and acquire jobs. Control API under ``/_fake/``. The ``api-version``
query is accepted and ignored. Errors are Actions exception bodies
``{"typeName", "message"}`` with an ``ActivityId`` header.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from arc_controllers.actions.fake.control import FaultInjector, add_control_routes
from arc_controllers.actions.fake.github import FakeGitHub, GitHubAuthError
from arc_controllers.actions.fake.model import UNLIMITED, FakeError, FakeSession
from arc_controllers.actions.fake.state import FakeState

__all__ = ["TENANT_PATH", "FakeContext", "build_app"]

log = structlog.get_logger(__name__)

TENANT_PATH = "/tenant/1"
"""Path of the fake's only Actions tenant."""

_SETS = f"{TENANT_PATH}/_apis/runtime/runnerscalesets"
_AGENTS = f"{TENANT_PATH}/_apis/distributedtask/pools/0/agents"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(kw_only=True)
class FakeContext:
    """What the routes work on."""

    state: FakeState
    github: FakeGitHub
    faults: FaultInjector
    poll_hold: float
    """Seconds a get-message call waits for a message before answering 202."""
    base_url: str = ""
    """``http://127.0.0.1:<port>``, set once the server listens."""
    organization: str = "my-org"
    """Organization of the config URL ``/_fake/credentials`` hands out."""

    @property
    def tenant_url(self) -> str:
        return f"{self.base_url}{TENANT_PATH}/"


_CTX = web.AppKey("fake_context", FakeContext)


def _ctx(request: web.Request) -> FakeContext:
    """Return the fake's context from the request's application."""
    return request.app[_CTX]


def _json(body: Any, status: int = 200) -> web.Response:
    """Answer with compact JSON."""
    return web.json_response(body, status=status, dumps=lambda v: json.dumps(v, separators=(",", ":")))


def _exception(status: int, type_name: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """Answer with an Actions exception body and an ActivityId header."""
    response = _json({"typeName": type_name, "message": message}, status)
    response.headers["ActivityId"] = str(uuid.uuid4())
    response.headers.update(headers or {})
    return response


def _github_error(status: int, message: str) -> web.Response:
    """Answer with a GitHub REST error body and an X-GitHub-Request-Id header."""
    response = _json({"message": message, "documentation_url": "https://docs.github.com/rest"}, status)
    response.headers["X-GitHub-Request-Id"] = uuid.uuid4().hex[:16].upper()
    return response


async def _body(request: web.Request) -> Any:
    """Read the request body as JSON; ``None`` when empty."""
    raw = await request.read()
    if not raw.strip():
        return None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except ValueError:
        raise FakeError(400, "ArgumentException", "request body is not JSON") from None


def _int(request: web.Request, name: str) -> int:
    """Read a numeric path parameter."""
    try:
        return int(request.match_info[name])
    except ValueError:
        raise FakeError(400, "ArgumentException", f"{name} must be a number") from None


# -- middleware ------------------------------------------------------------------------


@web.middleware
async def _faults_and_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count the request and its answer's status, fire matching faults, map errors to exception bodies."""
    route = request.match_info.route.name or ""
    endpoint = route.split(".")[0]
    if not endpoint or endpoint.startswith("control_"):
        return await _answer(request, handler)
    faults = _ctx(request).faults
    for fault in faults.take(endpoint):
        if fault.kind == "latency":
            await asyncio.sleep(fault.delay)
        elif fault.kind == "drop":
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError
        elif fault.kind == "empty_body":
            faults.answers[(endpoint, 200)] += 1
            return web.Response(status=200, body=b"", content_type="application/json")
        else:
            faults.answers[(endpoint, fault.status)] += 1
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            if fault.type_name:
                return _exception(fault.status, fault.type_name, fault.message, headers)
            return web.Response(status=fault.status, text=fault.message, headers=headers)
    response = await _answer(request, handler)
    faults.answers[(endpoint, response.status)] += 1
    return response


async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The handler's answer, errors mapped to exception bodies."""
    try:
        return await handler(request)
    except FakeError as err:
        return _exception(err.status, err.type_name, err.message)
    except GitHubAuthError as err:
        return _github_error(401, str(err))


# -- GitHub side -------------------------------------------------------------------------


async def _access_tokens(request: web.Request) -> web.StreamResponse:
    """POST …/app/installations/{id}/access_tokens → 201 installation token."""
    body = _ctx(request).github.access_token(_int(request, "installation_id"), request.headers.get("Authorization", ""))
    return _json(body, 201)


async def _registration_token(request: web.Request) -> web.StreamResponse:
    """POST …/actions/runners/registration-token → 201 registration token."""
    return _json(_ctx(request).github.registration_token(request.headers.get("Authorization", "")), 201)


async def _runner_registration(request: web.Request) -> web.StreamResponse:
    """POST …/actions/runner-registration → 201 tenant URL and admin JWT."""
    body = await _body(request)
    if not isinstance(body, dict) or not body.get("url") or body.get("runner_event") != "register":
        return _github_error(400, "url and runner_event=register are required")
    ctx = _ctx(request)
    return _json(ctx.github.admin_connection(request.headers.get("Authorization", ""), ctx.tenant_url), 201)


# -- Actions side: auth helpers -------------------------------------------------------------


def _admin(request: web.Request) -> FakeContext:
    """Require a live admin token; 401 otherwise."""
    ctx = _ctx(request)
    if not ctx.github.check_admin(request.headers.get("Authorization", "")):
        raise FakeError(401, "VssUnauthorizedException", "admin token is missing, expired or revoked")
    return ctx


def _queue_session(request: web.Request) -> tuple[FakeContext, FakeSession]:
    """Require the scale set's live message-queue token; 401 otherwise (404 when the scale set is gone)."""
    ctx = _ctx(request)
    ctx.state.scale_set(_int(request, "scale_set_id"))
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    session = ctx.state.session_by_token(_int(request, "scale_set_id"), token if scheme == "Bearer" else "")
    if session is None:
        raise FakeError(401, "VssUnauthorizedException", "message queue token is missing or expired")
    return ctx, session


def _session_json(ctx: FakeContext, session: FakeSession) -> dict[str, Any]:
    """The RunnerScaleSetSession JSON of a session."""
    ss = ctx.state.scale_set(session.scale_set_id)
    return {
        "sessionId": session.session_id,
        "ownerName": session.owner_name,
        "runnerScaleSet": ctx.state.scale_set_json(ss),
        "messageQueueUrl": f"{ctx.base_url}{_SETS}/{ss.id}/messages",
        "messageQueueAccessToken": session.queue_token,
        "statistics": ctx.state.statistics(ss.id),
    }


# -- Actions side: runner groups, scale sets, runners --------------------------------------


async def _runner_groups(request: web.Request) -> web.StreamResponse:
    """GET runnergroups/?groupName= → {count, value}."""
    groups = _admin(request).state.runner_groups_named(request.query.get("groupName", ""))
    return _json({"count": len(groups), "value": groups})


async def _list_scale_sets(request: web.Request) -> web.StreamResponse:
    """GET runnerscalesets?runnerGroupId=&name= → {count, value}."""
    ctx = _admin(request)
    name = request.query.get("name")
    group = request.query.get("runnerGroupId")
    found = [
        ctx.state.scale_set_json(ss)
        for ss in ctx.state.scale_sets.values()
        if (name is None or ss.name == name) and (group is None or str(ss.runner_group_id) == group)
    ]
    return _json({"count": len(found), "value": found})


async def _create_scale_set(request: web.Request) -> web.StreamResponse:
    """POST runnerscalesets → 200 RunnerScaleSet."""
    ctx = _admin(request)
    body = await _body(request)
    if not isinstance(body, dict):
        raise FakeError(400, "ArgumentException", "a scale set object is required")
    return _json(ctx.state.scale_set_json(ctx.state.create_scale_set(body)))


async def _get_scale_set(request: web.Request) -> web.StreamResponse:
    """GET runnerscalesets/{id} → 200 RunnerScaleSet or 404."""
    ctx = _admin(request)
    return _json(ctx.state.scale_set_json(ctx.state.scale_set(_int(request, "scale_set_id"))))


async def _update_scale_set(request: web.Request) -> web.StreamResponse:
    """PATCH runnerscalesets/{id} with a partial scale set → 200."""
    ctx = _admin(request)
    body = await _body(request)
    if not isinstance(body, dict):
        raise FakeError(400, "ArgumentException", "a scale set object is required")
    return _json(ctx.state.scale_set_json(ctx.state.update_scale_set(_int(request, "scale_set_id"), body)))


async def _delete_scale_set(request: web.Request) -> web.StreamResponse:
    """DELETE runnerscalesets/{id} → 204."""
    _admin(request).state.delete_scale_set(_int(request, "scale_set_id"))
    return web.Response(status=204)


async def _generate_jit_config(request: web.Request) -> web.StreamResponse:
    """POST runnerscalesets/{id}/generatejitconfig → 200 {runner, encodedJITConfig}."""
    ctx = _admin(request)
    body = await _body(request)
    name = str(body.get("name") or "") if isinstance(body, dict) else ""
    runner, encoded = ctx.state.generate_jit_config(_int(request, "scale_set_id"), name)
    return _json({"runner": runner.reference(), "encodedJITConfig": encoded})


async def _list_runners(request: web.Request) -> web.StreamResponse:
    """GET agents?agentName= → {count, value}."""
    ctx = _admin(request)
    name = request.query.get("agentName")
    found = [r.reference() for r in ctx.state.runners.values() if name is None or r.name == name]
    return _json({"count": len(found), "value": found})


async def _get_runner(request: web.Request) -> web.StreamResponse:
    """GET agents/{id} → 200 RunnerReference or 404."""
    return _json(_admin(request).state.runner(_int(request, "runner_id")).reference())


async def _remove_runner(request: web.Request) -> web.StreamResponse:
    """DELETE agents/{id} → 204, also for an unknown id; busy → 400 JobStillRunningException."""
    _admin(request).state.remove_runner(_int(request, "runner_id"))
    return web.Response(status=204)


# -- Actions side: sessions, messages, jobs -------------------------------------------------------


async def _create_session(request: web.Request) -> web.StreamResponse:
    """POST runnerscalesets/{id}/sessions → 200 session, 409 when one is live."""
    ctx = _admin(request)
    body = await _body(request)
    owner = str(body.get("ownerName") or "") if isinstance(body, dict) else ""
    session = ctx.state.create_session(_int(request, "scale_set_id"), owner)
    return _json(_session_json(ctx, session))


async def _refresh_session(request: web.Request) -> web.StreamResponse:
    """PATCH …/sessions/{sid} → 200 session with a new queue token."""
    ctx = _admin(request)
    session = ctx.state.refresh_session(_int(request, "scale_set_id"), request.match_info["session_id"])
    return _json(_session_json(ctx, session))


async def _delete_session(request: web.Request) -> web.StreamResponse:
    """DELETE …/sessions/{sid} → 204."""
    _admin(request).state.delete_session(_int(request, "scale_set_id"), request.match_info["session_id"])
    return web.Response(status=204)


async def _get_message(request: web.Request) -> web.StreamResponse:
    """GET …/messages[?lastMessageId=] (long poll) → 200 message or 202."""
    ctx, session = _queue_session(request)
    try:
        last = int(request.query.get("lastMessageId", "0"))
        capacity = int(request.headers.get("X-ScaleSetMaxCapacity", str(UNLIMITED)))
    except ValueError:
        raise FakeError(400, "ArgumentException", "lastMessageId and X-ScaleSetMaxCapacity must be numbers") from None
    message = await ctx.state.next_message(session, last, max(capacity, 0), ctx.poll_hold)
    if message is None:
        return web.Response(status=202)
    return _json(message)


async def _delete_message(request: web.Request) -> web.StreamResponse:
    """DELETE …/messages/{mid} → 204."""
    ctx, session = _queue_session(request)
    ctx.state.scale_set(session.scale_set_id).queue.delete(_int(request, "message_id"))
    return web.Response(status=204)


async def _acquire_jobs(request: web.Request) -> web.StreamResponse:
    """POST …/acquirejobs with an id array → 200 {count, value}."""
    ctx, session = _queue_session(request)
    body = await _body(request)
    if not isinstance(body, list) or not all(isinstance(x, int) for x in body):
        raise FakeError(400, "ArgumentException", "a JSON array of request ids is required")
    acquired = ctx.state.acquire_jobs(session.scale_set_id, body)
    return _json({"count": len(acquired), "value": acquired})


def build_app(ctx: FakeContext) -> web.Application:
    """Return the aiohttp application with every route; ``ctx.base_url`` is filled in later."""
    app = web.Application(middlewares=[_faults_and_errors])
    app[_CTX] = ctx
    routes = app.router
    for prefix, tag in (("", ""), ("/api/v3", ".v3")):
        routes.add_post(
            f"{prefix}/app/installations/{{installation_id}}/access_tokens", _access_tokens, name=f"access_tokens{tag}"
        )
        for scope, path in (
            ("orgs", "/orgs/{org}"),
            ("repos", "/repos/{owner}/{repo}"),
            ("enterprises", "/enterprises/{enterprise}"),
        ):
            routes.add_post(
                f"{prefix}{path}/actions/runners/registration-token",
                _registration_token,
                name=f"registration_token.{scope}{tag}",
            )
        routes.add_post(f"{prefix}/actions/runner-registration", _runner_registration, name=f"runner_registration{tag}")
    routes.add_get(f"{TENANT_PATH}/_apis/runtime/runnergroups/", _runner_groups, name="get_runner_groups")
    routes.add_get(f"{TENANT_PATH}/_apis/runtime/runnergroups", _runner_groups, name="get_runner_groups.noslash")
    routes.add_get(_SETS, _list_scale_sets, name="list_scale_sets")
    routes.add_post(_SETS, _create_scale_set, name="create_scale_set")
    routes.add_get(f"{_SETS}/{{scale_set_id}}", _get_scale_set, name="get_scale_set")
    routes.add_patch(f"{_SETS}/{{scale_set_id}}", _update_scale_set, name="update_scale_set")
    routes.add_delete(f"{_SETS}/{{scale_set_id}}", _delete_scale_set, name="delete_scale_set")
    routes.add_post(f"{_SETS}/{{scale_set_id}}/generatejitconfig", _generate_jit_config, name="generate_jit_config")
    routes.add_post(f"{_SETS}/{{scale_set_id}}/sessions", _create_session, name="create_session")
    routes.add_patch(f"{_SETS}/{{scale_set_id}}/sessions/{{session_id}}", _refresh_session, name="refresh_session")
    routes.add_delete(f"{_SETS}/{{scale_set_id}}/sessions/{{session_id}}", _delete_session, name="delete_session")
    routes.add_get(f"{_SETS}/{{scale_set_id}}/messages", _get_message, name="get_message")
    routes.add_delete(f"{_SETS}/{{scale_set_id}}/messages/{{message_id}}", _delete_message, name="delete_message")
    routes.add_post(f"{_SETS}/{{scale_set_id}}/acquirejobs", _acquire_jobs, name="acquire_jobs")
    routes.add_get(_AGENTS, _list_runners, name="list_runners")
    routes.add_get(f"{_AGENTS}/{{runner_id}}", _get_runner, name="get_runner")
    routes.add_delete(f"{_AGENTS}/{{runner_id}}", _remove_runner, name="remove_runner")
    add_control_routes(app, ctx)
    return app
