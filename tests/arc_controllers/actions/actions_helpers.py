"""Helpers for the Actions client unit tests: a MockTransport that answers the token exchange."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable

import jwt

from arc_controllers.actions import (
    ActionsClient,
    Credentials,
    HttpRequest,
    HttpResponse,
    MockTransport,
    PersonalAccessToken,
    ProxyConfig,
    RetryPolicy,
    SystemInfo,
    new_client,
)


def admin_jwt(*, expires_in: float = 600.0, now: float | None = None) -> str:
    """An admin token like the service's: only its exp claim matters to the client."""
    issued = time.time() if now is None else now
    return jwt.encode(
        {"iat": int(issued) - 600, "exp": int(issued + expires_in), "iss": "123"}, "k" * 32, algorithm="HS256"
    )


def json_response(status: int, body: object, **headers: str) -> HttpResponse:
    return HttpResponse(
        status=status, body=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers}
    )


def with_auth(
    inner: Callable[[HttpRequest], Awaitable[HttpResponse]], *, token: str | None = None
) -> Callable[[HttpRequest], Awaitable[HttpResponse]]:
    """Answer the two token endpoints by path suffix, pass everything else to ``inner``.

    Ports: actions/scaleset internal/testserver New (suffix matching, tenant URL ``…/tenant/123/``)
    """

    async def handle(request: HttpRequest) -> HttpResponse:
        if request.url.endswith("/runners/registration-token"):
            return json_response(201, {"token": "token"})
        if request.url.endswith("/actions/runner-registration"):
            return json_response(201, {"url": "https://pipelines.example/tenant/123/", "token": token or admin_jwt()})
        return await inner(request)

    return handle


def mock_client(
    handler: Callable[[HttpRequest], Awaitable[HttpResponse]],
    *,
    config_url: str = "https://github.com/my-org",
    credentials: Credentials | None = None,
    retry: RetryPolicy | None = None,
    sleeps: list[float] | None = None,
    clock: Callable[[], float] | None = None,
) -> tuple[ActionsClient, MockTransport]:
    """A client over a MockTransport; retry waits are recorded in ``sleeps`` instead of slept."""
    transport = MockTransport(handler)
    recorded = sleeps if sleeps is not None else []

    async def record(seconds: float) -> None:
        recorded.append(seconds)

    client = new_client(
        config_url,
        credentials or PersonalAccessToken("ghp_secretpat0123456789"),
        system_info=SystemInfo(system="actions-runner-controller", version="1.0", commit_sha="abc", subsystem="test"),
        retry=retry,
        proxy=ProxyConfig(),
        transport=transport,
        sleep=record,
        clock=clock or time.time,
    )
    return client, transport
