"""Fault injection and the control API of the fake Actions service.

A `Fault` matches one endpoint (a route name such as ``get_message``, or
``*``) and fires a number of times: answer with a status (5xx, 429 with
``Retry-After``, 401, 409 with an exception body…), add latency, drop the
connection without an answer, or answer 200 with an empty body. Every
request is counted per endpoint, every firing per fault, so tests can
assert attempts.

The HTTP control API lives under ``/_fake/``, apart from the service's
paths; each route calls the same Python methods tests use.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from arc_controllers.actions.fake.model import FakeError

if TYPE_CHECKING:
    from arc_controllers.actions.fake.app import FakeContext

__all__ = ["FAULT_KINDS", "Fault", "FaultInjector", "add_control_routes"]

FAULT_KINDS = frozenset({"status", "latency", "drop", "empty_body"})
"""What a fault can do."""


@dataclass(kw_only=True)
class Fault:
    """One injected fault."""

    id: int
    endpoint: str
    """Route name it applies to, or ``*`` for every service route."""
    kind: str
    """One of `FAULT_KINDS`."""
    times: int | None = 1
    """Firings left; ``None`` for every matching request until removed."""
    status: int = 500
    """For ``status``: the HTTP status to answer with."""
    type_name: str = ""
    """For ``status``: an Actions exception ``typeName`` for the body, if any."""
    message: str = "injected fault"
    retry_after: str = ""
    """For ``status``: the ``Retry-After`` header, if any."""
    delay: float = 0.0
    """For ``latency``: seconds to wait before handling the request."""
    fired: int = 0
    """How many times it fired."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "endpoint": self.endpoint,
            "kind": self.kind,
            "times": self.times,
            "status": self.status,
            "typeName": self.type_name,
            "message": self.message,
            "retryAfter": self.retry_after,
            "delay": self.delay,
            "fired": self.fired,
        }


class FaultInjector:
    """The active faults and the request counters."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.requests: Counter[str] = Counter()
        """Requests received per endpoint (route name)."""
        self.fired: Counter[str] = Counter()
        """Faults fired per endpoint."""
        self.answers: Counter[tuple[str, int]] = Counter()
        """Answers sent per (endpoint, HTTP status), injected ones included (an empty 200 counts as 200)."""
        self._ids = itertools.count(1)

    def add(
        self,
        endpoint: str,
        kind: str,
        *,
        times: int | None = 1,
        status: int = 500,
        type_name: str = "",
        message: str = "injected fault",
        retry_after: str = "",
        delay: float = 0.0,
    ) -> Fault:
        """Add a fault; return it (its ``fired`` counter grows as it fires).

        Raises:
            ValueError: unknown kind, or a count or delay below zero.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; want one of {sorted(FAULT_KINDS)}")
        if (times is not None and times < 0) or delay < 0:
            raise ValueError("times and delay must not be negative")
        fault = Fault(
            id=next(self._ids),
            endpoint=endpoint,
            kind=kind,
            times=times,
            status=status,
            type_name=type_name,
            message=message,
            retry_after=retry_after,
            delay=delay,
        )
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every fault; counters stay."""
        self.faults.clear()

    def take(self, endpoint: str) -> list[Fault]:
        """Count a request to ``endpoint`` and return the faults that fire for it (latency first)."""
        self.requests[endpoint] += 1
        firing: list[Fault] = []
        for fault in self.faults:
            if fault.endpoint not in (endpoint, "*") or fault.times == 0:
                continue
            if fault.kind != "latency" and any(f.kind != "latency" for f in firing):
                continue
            if fault.times is not None:
                fault.times -= 1
            fault.fired += 1
            self.fired[endpoint] += 1
            firing.append(fault)
        return sorted(firing, key=lambda f: f.kind != "latency")

    def to_json(self) -> dict[str, Any]:
        return {
            "faults": [f.to_json() for f in self.faults],
            "requests": dict(self.requests),
            "fired": dict(self.fired),
            "answers": {f"{endpoint} {status}": n for (endpoint, status), n in sorted(self.answers.items())},
        }


def _json(body: Any, status: int = 200) -> web.Response:
    """Answer with compact JSON."""
    return web.json_response(body, status=status)


async def _read(request: web.Request) -> dict[str, Any]:
    """Read the request body as a JSON object."""
    raw = await request.read()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise FakeError(400, "ArgumentException", "request body is not JSON") from None
    if not isinstance(body, dict):
        raise FakeError(400, "ArgumentException", "request body must be a JSON object")
    return body


def add_control_routes(app: web.Application, ctx: FakeContext) -> None:
    """Add the ``/_fake/`` routes, each a thin wrapper over a Python method.

    ``GET /_fake/credentials``, ``GET /_fake/state``, ``GET|POST /_fake/jobs``,
    ``POST /_fake/jobs/{id}/complete`` ``{"result"}``, ``POST /_fake/runners/register``
    ``{"encodedJITConfig"}``, ``POST /_fake/runners/{id}/take``, ``POST /_fake/runner-groups``
    ``{"name"}``, ``GET|POST|DELETE /_fake/faults``, ``POST /_fake/tokens/expire``
    ``{"kind": "queue"|"admin"}``, ``DELETE /_fake/sessions/{scale_set_id}``,
    ``DELETE /_fake/scale-sets/{scale_set_id}`` (as an admin removes a scale set on GitHub).
    """
    state, github, faults = ctx.state, ctx.github, ctx.faults

    async def credentials(request: web.Request) -> web.StreamResponse:
        return _json(
            {
                "configUrl": f"{ctx.base_url}/{ctx.organization}",
                "githubToken": github.pat,
                "githubAppId": str(github.app_id),
                "githubAppClientId": github.client_id,
                "githubAppInstallationId": github.installation_id,
                "githubAppPrivateKey": github.private_key_pem,
            }
        )

    async def show_state(request: web.Request) -> web.StreamResponse:
        return _json(
            {
                "scaleSets": [state.scale_set_json(ss) for ss in state.scale_sets.values()],
                "runners": [{**r.reference(), "online": r.online, "busy": r.busy} for r in state.runners.values()],
                "sessions": [
                    {"sessionId": s.session_id, "scaleSetId": s.scale_set_id, "ownerName": s.owner_name}
                    for s in state.sessions.values()
                ],
                "jobs": [j.summary() for j in state.jobs.values()],
            }
        )

    async def list_jobs(request: web.Request) -> web.StreamResponse:
        return _json([j.summary() for j in state.jobs.values()])

    async def queue_job(request: web.Request) -> web.StreamResponse:
        return _json(state.queue_job(await _read(request)).summary(), 201)

    async def complete_job(request: web.Request) -> web.StreamResponse:
        body = await _read(request)
        job = state.complete_job(int(request.match_info["request_id"]), str(body.get("result") or "succeeded"))
        return _json(job.summary())

    async def register_runner(request: web.Request) -> web.StreamResponse:
        body = await _read(request)
        runner = state.register_runner(str(body.get("encodedJITConfig") or ""))
        return _json(runner.reference())

    async def take_job(request: web.Request) -> web.StreamResponse:
        job = state.take_job(int(request.match_info["runner_id"]))
        return web.Response(status=204) if job is None else _json(job.summary())

    async def add_group(request: web.Request) -> web.StreamResponse:
        body = await _read(request)
        return _json(state.add_runner_group(str(body.get("name") or "")), 201)

    async def list_faults(request: web.Request) -> web.StreamResponse:
        return _json(faults.to_json())

    async def add_fault(request: web.Request) -> web.StreamResponse:
        body = await _read(request)
        try:
            fault = faults.add(
                str(body.get("endpoint") or "*"),
                str(body.get("kind") or "status"),
                times=body.get("times", 1),
                status=int(body.get("status", 500)),
                type_name=str(body.get("typeName") or ""),
                message=str(body.get("message") or "injected fault"),
                retry_after=str(body.get("retryAfter") or ""),
                delay=float(body.get("delay", 0.0)),
            )
        except (TypeError, ValueError) as err:
            raise FakeError(400, "ArgumentException", str(err)) from None
        return _json(fault.to_json(), 201)

    async def clear_faults(request: web.Request) -> web.StreamResponse:
        faults.clear()
        return web.Response(status=204)

    async def expire_tokens(request: web.Request) -> web.StreamResponse:
        kind = str((await _read(request)).get("kind") or "queue")
        if kind == "queue":
            return _json({"expired": state.expire_queue_tokens()})
        if kind == "admin":
            return _json({"expired": github.expire_admin_tokens()})
        raise FakeError(400, "ArgumentException", "kind must be queue or admin")

    async def expire_session(request: web.Request) -> web.StreamResponse:
        dropped = state.expire_session(int(request.match_info["scale_set_id"]))
        return web.Response(status=204 if dropped else 404)

    async def delete_scale_set(request: web.Request) -> web.StreamResponse:
        state.delete_scale_set(int(request.match_info["scale_set_id"]))
        return web.Response(status=204)

    router = app.router
    router.add_get("/_fake/credentials", credentials, name="control_credentials")
    router.add_get("/_fake/state", show_state, name="control_state")
    router.add_get("/_fake/jobs", list_jobs, name="control_list_jobs")
    router.add_post("/_fake/jobs", queue_job, name="control_queue_job")
    router.add_post("/_fake/jobs/{request_id:\\d+}/complete", complete_job, name="control_complete_job")
    router.add_post("/_fake/runners/register", register_runner, name="control_register_runner")
    router.add_post("/_fake/runners/{runner_id:\\d+}/take", take_job, name="control_take_job")
    router.add_post("/_fake/runner-groups", add_group, name="control_add_group")
    router.add_get("/_fake/faults", list_faults, name="control_list_faults")
    router.add_post("/_fake/faults", add_fault, name="control_add_fault")
    router.add_delete("/_fake/faults", clear_faults, name="control_clear_faults")
    router.add_post("/_fake/tokens/expire", expire_tokens, name="control_expire_tokens")
    router.add_delete("/_fake/sessions/{scale_set_id:\\d+}", expire_session, name="control_expire_session")
    router.add_delete("/_fake/scale-sets/{scale_set_id:\\d+}", delete_scale_set, name="control_delete_scale_set")
