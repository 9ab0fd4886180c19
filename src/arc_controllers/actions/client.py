"""The Actions service client: scale sets, runner groups, JIT configs and runners.

One `ActionsClient` per config URL and credential. It exchanges the
credential for an Actions admin token on demand (`AdminTokenSource`), sends
every request through go-retryablehttp's retry policy, and turns refusals
into the typed errors of `arc_controllers.actions.errors`. Public calls are
serialised, one at a time per client, as in Go. Message sessions live in
`arc_controllers.actions.session`.

Ports: github.com/actions/scaleset client.go
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog

from arc_controllers.actions._aiohttp import AiohttpTransport
from arc_controllers.actions._retry import RetryPolicy, send_with_retries
from arc_controllers.actions._urls import actions_service_url
from arc_controllers.actions.auth import AdminTokenSource, Credentials, PersonalAccessToken
from arc_controllers.actions.config import GitHubConfig, parse_github_config_url
from arc_controllers.actions.errors import ActionsError, error_from_response
from arc_controllers.actions.proxy import ProxyConfig
from arc_controllers.actions.redact import SecretSet
from arc_controllers.actions.session import MessageSessionClient, SessionRecovery
from arc_controllers.actions.systeminfo import SystemInfo, user_agent
from arc_controllers.actions.transport import HttpRequest, HttpResponse, Transport
from arc_controllers.actions.types import (
    Label,
    RunnerGroup,
    RunnerReference,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerConfig,
    RunnerScaleSetJitRunnerSetting,
    decode_wire,
)

__all__ = ["RUNNER_ENDPOINT", "SCALE_SET_ENDPOINT", "ActionsClient", "new_client"]

log = structlog.get_logger(__name__)

RUNNER_ENDPOINT = "_apis/distributedtask/pools/0/agents"
"""Path of the runner (agent) collection."""

SCALE_SET_ENDPOINT = "_apis/runtime/runnerscalesets"
"""Path of the scale set collection."""

_M = TypeVar("_M")
Sleep = Callable[[float], Awaitable[None]]


class ActionsClient:
    """Calls GitHub and the Actions service for one config URL and credential.

    Use as ``async with new_client(...) as client:`` or call `aclose`.

    Ports: scaleset.Client
    """

    def __init__(
        self,
        *,
        config: GitHubConfig,
        credentials: Credentials,
        system_info: SystemInfo,
        transport: Transport,
        retry: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
        proxy_set: bool = False,
        root_ca_set: bool = False,
    ) -> None:
        """Prefer `new_client`, which parses the URL and builds the transport.

        Args:
            config: The parsed config URL.
            credentials: App or PAT.
            system_info: Becomes the User-Agent.
            transport: Sends each attempt; a `MockTransport` in unit tests.
            retry: Retry budget, waits and per-attempt timeout.
            sleep: Awaited between retries.
            clock: Unix seconds, for token expiry and the App JWT.
            proxy_set: Whether a proxy is configured (for `debug_info`).
            root_ca_set: Whether an extra root CA is configured (for `debug_info`).
        """
        self.config = config
        """The parsed config URL."""
        self._transport = transport
        self._retry = retry
        self._sleep = sleep
        self._clock = clock
        self._system_info = system_info
        self._user_agent = user_agent(system_info)
        self._debug = {"has_proxy": proxy_set, "has_root_ca": root_ca_set}
        secret = credentials.token if isinstance(credentials, PersonalAccessToken) else credentials.private_key
        self.secrets = SecretSet([secret])
        """Every secret this client has seen, for redaction."""
        self.tokens = AdminTokenSource(
            config=config,
            credentials=credentials,
            send=self._send_github,
            user_agent=lambda: self._user_agent,
            secrets=self.secrets,
            clock=clock,
        )
        """The admin-token exchange."""

    # -- plumbing ---------------------------------------------------------------

    @property
    def system_info(self) -> SystemInfo:
        """Ports: Client.SystemInfo"""
        return self._system_info

    @property
    def user_agent(self) -> str:
        """The User-Agent sent with every request.

        Python only: read access for the session client.
        """
        return self._user_agent

    def set_system_info(self, info: SystemInfo) -> None:
        """Replace the system info, and so the User-Agent.

        Ports: Client.SetSystemInfo
        """
        self._system_info = info
        self._user_agent = user_agent(info)

    def debug_info(self) -> str:
        """Return JSON with ``has_proxy``, ``has_root_ca`` and the User-Agent; no secrets.

        Ports: Client.DebugInfo
        """
        return json.dumps({**self._debug, "system_info": self._user_agent}, separators=(",", ":"))

    async def _send_github(self, request: HttpRequest, admin_connection: bool) -> tuple[HttpResponse, int]:
        """Ports: commonClient.do, with the admin-connection call's own retry policy"""
        return await self.send(
            request,
            extra_retry_statuses=(401, 403) if admin_connection else (),
            return_last_response=admin_connection,
        )

    async def send(
        self,
        request: HttpRequest,
        *,
        retry: RetryPolicy | None = None,
        extra_retry_statuses: tuple[int, ...] = (),
        return_last_response: bool = False,
    ) -> tuple[HttpResponse, int]:
        """Send with retries; return the answer and the number of attempts.

        Python only: the one door to the transport (sendRequest in Go).
        """
        return await send_with_retries(
            self._transport,
            request,
            policy=retry or self._retry,
            sleep=self._sleep,
            redact=self.secrets.redact,
            extra_retry_statuses=extra_retry_statuses,
            return_last_response=return_last_response,
            clock=self._clock,
        )

    async def actions_request(self, method: str, path: str, body: bytes | None = None) -> HttpRequest:
        """Build an Actions-service request, renewing the admin token first if needed.

        Concurrent calls share one admin token; only its renewal is serialised.

        Ports: Client.newActionsServiceRequest
        """
        connection = await self.tokens.ensure()
        return HttpRequest(
            method=method,
            url=actions_service_url(connection.actions_service_url, path),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {connection.admin_token}",
                "User-Agent": self._user_agent,
            },
            body=body,
        )

    def error(self, request: HttpRequest, response: HttpResponse, cause: str, attempts: int = 1) -> ActionsError:
        """Return the typed, redacted error for an unexpected answer.

        Python only: newRequestResponseError bound to this client's secrets.
        """
        if response.status == 401 and "Bearer" in request.header("Authorization"):
            # Differs: Go keeps using a refused admin token until it nears expiry.
            self.tokens.invalidate()
        return error_from_response(request, response, cause, redact=self.secrets.redact, attempts=attempts)

    def decode(self, request: HttpRequest, response: HttpResponse, model: type[_M], what: str) -> _M:
        """Decode the answer as ``model``.

        Raises:
            ActionsError: the body is not a valid ``model``.

        Python only: the json.Decode branches of every Go call.
        """
        try:
            return decode_wire(model, response.body)
        except ValueError as err:
            raise ActionsError(
                self.secrets.redact(
                    f'request {request.method} {request.url} failed(status="{response.status_line}"): '
                    f"failed to decode {what}: {err}"
                ),
                status=response.status,
            ) from None

    async def _call(self, method: str, path: str, expected: int, body: Any = None) -> tuple[HttpRequest, HttpResponse]:
        """Python only: one Actions-service call that must answer ``expected``."""
        raw = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        request = await self.actions_request(method, path, raw)
        response, attempts = await self.send(request)
        if response.status != expected:
            raise self.error(request, response, f"unexpected status code: {response.status}", attempts)
        return request, response

    # -- scale sets --------------------------------------------------------------

    async def get_runner_scale_set(self, runner_group_id: int, name: str) -> RunnerScaleSet | None:
        """Return the scale set ``name`` in runner group ``runner_group_id``, or ``None``.

        Raises:
            ActionsError: the call failed or more than one set has that name.

        Ports: Client.GetRunnerScaleSet
        """
        path = f"/{SCALE_SET_ENDPOINT}?runnerGroupId={runner_group_id}&name={name}"
        request, response = await self._call("GET", path, 200)
        found = self.decode(request, response, _ScaleSetList, "runner scale set list")
        if found.count == 0:
            return None
        if found.count > 1:
            raise ActionsError(f"request GET {request.url} failed: multiple runner scale sets found with name {name!r}")
        return found.value[0]

    async def get_runner_scale_set_by_id(self, runner_scale_set_id: int) -> RunnerScaleSet:
        """Return the scale set with this id.

        Raises:
            ActionsNotFoundError: no such scale set (404).
            ActionsError: any other failure.

        Ports: Client.GetRunnerScaleSetByID
        """
        request, response = await self._call("GET", f"/{SCALE_SET_ENDPOINT}/{runner_scale_set_id}", 200)
        return self.decode(request, response, RunnerScaleSet, "runner scale set")

    async def get_runner_group_by_name(self, runner_group: str) -> RunnerGroup:
        """Return the runner group with this name.

        Raises:
            ActionsError: the call failed, or no group or more than one has that name.

        Ports: Client.GetRunnerGroupByName
        """
        request, response = await self._call("GET", f"/_apis/runtime/runnergroups/?groupName={runner_group}", 200)
        found = self.decode(request, response, _RunnerGroupList, "runner group list")
        if found.count == 1:
            return found.value[0]
        problem = "no runner group found" if found.count == 0 else "multiple runner group found"
        raise ActionsError(
            f'request GET {request.url} failed(status="{response.status_line}"): {problem} with name {runner_group!r}',
            status=response.status,
        )

    async def create_runner_scale_set(self, scale_set: RunnerScaleSet) -> RunnerScaleSet:
        """Create a scale set; names are unique within a runner group.

        A set without labels gets one label, its name; every label without a
        type gets ``System``. ``scale_set`` itself is left unchanged.

        Raises:
            ValueError: neither a name nor a label.
            ActionsError: the service refused.

        Ports: Client.CreateRunnerScaleSet
        Differs: Go fills the labels into the caller's struct; this works on a copy.
        """
        wanted = copy.deepcopy(scale_set)
        if not wanted.labels:
            if not wanted.name:
                raise ValueError("validating runner scale set: runner scale set must have a name or at least one label")
            wanted.labels = [Label(type="System", name=wanted.name)]
        _default_label_types(wanted)
        request, response = await self._call("POST", SCALE_SET_ENDPOINT, 200, wanted.to_wire())
        return self.decode(request, response, RunnerScaleSet, "created runner scale set")

    async def update_runner_scale_set(self, runner_scale_set_id: int, scale_set: RunnerScaleSet) -> RunnerScaleSet:
        """Change a scale set: send only the fields to change (e.g. ``runner_group_id`` or ``name``).

        Ports: Client.UpdateRunnerScaleSet
        """
        wanted = copy.deepcopy(scale_set)
        _default_label_types(wanted)
        path = f"{SCALE_SET_ENDPOINT}/{runner_scale_set_id}"
        request, response = await self._call("PATCH", path, 200, wanted.to_wire())
        return self.decode(request, response, RunnerScaleSet, "updated runner scale set")

    async def delete_runner_scale_set(self, runner_scale_set_id: int) -> None:
        """Delete a scale set (204).

        Raises:
            ActionsNotFoundError: it was already gone.

        Ports: Client.DeleteRunnerScaleSet
        """
        await self._call("DELETE", f"/{SCALE_SET_ENDPOINT}/{runner_scale_set_id}", 204)

    # -- runners -----------------------------------------------------------------

    async def generate_jit_runner_config(
        self, setting: RunnerScaleSetJitRunnerSetting, scale_set_id: int
    ) -> RunnerScaleSetJitRunnerConfig:
        """Register a runner and return its just-in-time config (a secret).

        Raises:
            RunnerExistsError: a runner with that name is registered already.

        Ports: Client.GenerateJitRunnerConfig
        """
        path = f"/{SCALE_SET_ENDPOINT}/{scale_set_id}/generatejitconfig"
        request, response = await self._call("POST", path, 200, setting.to_wire())
        config = self.decode(request, response, RunnerScaleSetJitRunnerConfig, "runner JIT config")
        self.secrets.add(config.encoded_jit_config)
        return config

    async def get_runner(self, runner_id: int) -> RunnerReference:
        """Return the runner with this id.

        Raises:
            ActionsNotFoundError, RunnerNotFoundError: no such runner.

        Ports: Client.GetRunner
        """
        request, response = await self._call("GET", f"/{RUNNER_ENDPOINT}/{runner_id}", 200)
        return self.decode(request, response, RunnerReference, "runner reference")

    async def get_runner_by_name(self, runner_name: str) -> RunnerReference | None:
        """Return the runner with this name, or ``None``.

        Raises:
            ActionsError: the call failed or more than one runner has that name.

        Ports: Client.GetRunnerByName
        """
        request, response = await self._call("GET", f"/{RUNNER_ENDPOINT}?agentName={runner_name}", 200)
        found = self.decode(request, response, _RunnerList, "runner reference list")
        if found.count == 0:
            return None
        if found.count > 1:
            raise ActionsError(f"multiple runners found with name {runner_name!r}")
        return found.value[0]

    async def remove_runner(self, runner_id: int) -> None:
        """Unregister a runner (204).

        Raises:
            JobStillRunningError: it is executing a job.
            RunnerNotFoundError: no such runner.

        Ports: Client.RemoveRunner
        """
        await self._call("DELETE", f"/{RUNNER_ENDPOINT}/{runner_id}", 204)

    # -- sessions and lifetime ---------------------------------------------------

    async def message_session_client(
        self,
        runner_scale_set_id: int,
        owner: str,
        *,
        retry: RetryPolicy | None = None,
        recovery: SessionRecovery | None = None,
    ) -> MessageSessionClient:
        """Open a message session for the scale set and return its client.

        Args:
            runner_scale_set_id: The scale set to listen for.
            owner: Session owner name (the listener's hostname).
            retry: Retry policy for the session's calls; this client's when ``None``.
            recovery: Recover in place from a 409 on create, a 404 on refresh and a
                200 poll answer without a message; ``None`` fails on each (upstream).

        Raises:
            SessionConflictError: the scale set already has a live session (after the
                recovery's retries, when given).
            ActionsError: any other failure.

        Ports: Client.MessageSessionClient
        """
        return await MessageSessionClient.open(self, runner_scale_set_id, owner, retry=retry, recovery=recovery)

    async def aclose(self) -> None:
        """Close the transport, if it can be closed.

        Python only: aiohttp sessions must be closed.
        """
        close = getattr(self._transport, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> ActionsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ActionsClient(config_url={self.config.config_url!r})"


@dataclass(kw_only=True)
class _ScaleSetList:
    """Ports: scaleset runnerScaleSetsResponse"""

    count: int = 0
    value: list[RunnerScaleSet] = field(default_factory=list)


@dataclass(kw_only=True)
class _RunnerGroupList:
    """Ports: scaleset RunnerGroupList"""

    count: int = 0
    value: list[RunnerGroup] = field(default_factory=list)


@dataclass(kw_only=True)
class _RunnerList:
    """Ports: scaleset RunnerReferenceList"""

    count: int = 0
    value: list[RunnerReference] = field(default_factory=list)


def _default_label_types(scale_set: RunnerScaleSet) -> None:
    """Ports: applyDefaultLabelTypes"""
    for label in scale_set.labels:
        if not label.type:
            label.type = "System"


def new_client(
    config_url: str,
    credentials: Credentials,
    *,
    system_info: SystemInfo,
    retry: RetryPolicy | None = None,
    proxy: ProxyConfig | None = None,
    root_ca: str = "",
    transport: Transport | None = None,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.time,
) -> ActionsClient:
    """Build a client for ``config_url`` with App or PAT credentials.

    Args:
        config_url: Enterprise, organization or repository URL.
        credentials: `GitHubAppAuth` or `PersonalAccessToken`.
        system_info: Becomes the User-Agent.
        retry: Defaults to 4 retries, 1 s to 30 s waits, 300 s per attempt.
        proxy: Proxy rule; read from the environment now, once, when ``None``.
        root_ca: PEM certificates trusted besides the system roots.
        transport: Replaces the aiohttp transport (tests).
        sleep: Awaited between retries.
        clock: Unix seconds, for token expiry and the App JWT (tests move it).

    Raises:
        InvalidGitHubConfigURLError: the URL names no scope.
        ValueError: ``root_ca`` holds no parsable certificate.

    Ports: NewClientWithGitHubApp and NewClientWithPersonalAccessToken
    """
    config = parse_github_config_url(config_url)
    if root_ca:
        from cryptography import x509  # only here: a process without a root CA never loads it (issue 20)

        try:
            x509.load_pem_x509_certificates(root_ca.encode())
        except ValueError:
            raise ValueError("failed to parse root certificate") from None
    if proxy is None:
        proxy = ProxyConfig.from_environment()
    return ActionsClient(
        config=config,
        credentials=credentials,
        system_info=system_info,
        transport=transport or AiohttpTransport(proxy=proxy, root_ca=root_ca),
        retry=retry or RetryPolicy(),
        sleep=sleep,
        clock=clock,
        proxy_set=proxy.is_set,
        root_ca_set=bool(root_ca),
    )
