"""A fake GitHub Actions service on loopback: GitHub's token endpoints, the
Actions service, its message queue, and controls for tests and demos.

``async with FakeActionsService() as svc:`` listens on ``127.0.0.1`` (a free
port) and gives `svc.url`, `svc.config_url()` and credentials
(`svc.pat`, `svc.app`). Tests queue jobs, let simulated runners take and
finish them, and inject faults through Python methods; the same controls
are served over HTTP under ``/_fake/``. ``arc-fake-actions --port N`` runs
it standalone.

Everything in this package is Python only (Go ARC has no such service: its tests fake the
client instead), so no function here repeats it; what the fake follows, and where it
answers differently from the reference notes, is in docs/porting-notes.md
("arc_controllers.actions.fake").
"""

from __future__ import annotations

import ipaddress
import ssl
from typing import Any

import structlog
from aiohttp import web

from arc_controllers.actions.auth import GitHubAppAuth, PersonalAccessToken
from arc_controllers.actions.fake.app import TENANT_PATH, FakeContext, build_app
from arc_controllers.actions.fake.control import Fault, FaultInjector
from arc_controllers.actions.fake.github import FakeGitHub
from arc_controllers.actions.fake.model import FakeError, FakeJob, FakeRunner
from arc_controllers.actions.fake.state import FakeState

__all__ = [
    "TENANT_PATH",
    "FakeActionsService",
    "FakeContext",
    "FakeError",
    "FakeGitHub",
    "FakeJob",
    "FakeRunner",
    "FakeState",
    "Fault",
    "FaultInjector",
    "build_app",
]

log = structlog.get_logger(__name__)


class FakeActionsService:
    """The fake service, its state and its controls."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        poll_hold: float = 1.0,
        admin_token_ttl: float = 3600.0,
        queue_token_ttl: float = 3600.0,
        organization: str = "my-org",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """Configure; nothing listens until `start`.

        Args:
            host: A loopback address; anything else is refused.
            port: TCP port; ``0`` picks a free one.
            poll_hold: Seconds a get-message call waits before answering 202
                (the real service holds about 50 s).
            admin_token_ttl: Seconds an admin JWT lives (the client renews it
                60 s before expiry, so ≤ 60 means a renewal on every call).
            queue_token_ttl: Seconds a message-queue token lives.
            organization: Organization of `config_url`.
            ssl_context: Serve HTTPS with this server context (tests of the
                client's extra root CA); plain HTTP when ``None``.

        Raises:
            ValueError: ``host`` is not a loopback address.
        """
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the fake Actions service listens on loopback only, not {host!r}")
        self._host = host
        self._port = port
        self.organization = organization
        self._ssl = ssl_context
        self.github = FakeGitHub(admin_token_ttl=admin_token_ttl)
        """GitHub side: credentials and issued tokens."""
        self.state = FakeState(queue_token_ttl=queue_token_ttl)
        """Actions side: scale sets, runners, sessions, jobs, queues."""
        self.faults = FaultInjector()
        """Injected faults and request counters."""
        self._ctx = FakeContext(
            state=self.state, github=self.github, faults=self.faults, poll_hold=poll_hold, organization=organization
        )
        self._runner: web.AppRunner | None = None

    # -- lifetime ------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen; `url` is valid afterwards."""
        runner = web.AppRunner(build_app(self._ctx), access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port, ssl_context=self._ssl)
        await site.start()
        self._runner = runner
        sockets = runner.addresses
        port = sockets[0][1] if sockets else self._port
        scheme = "https" if self._ssl is not None else "http"
        self._ctx.base_url = f"{scheme}://{self._host}:{port}"
        log.info("fake actions service listening", url=self._ctx.base_url)

    async def stop(self) -> None:
        """Answer pending long polls with 202 and stop listening."""
        self.state.closing = True
        self.state.wake_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeActionsService:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- where and who ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if not self._ctx.base_url:
            raise RuntimeError("the fake Actions service is not started")
        return self._ctx.base_url

    def config_url(self, *, repository: str = "", enterprise: str = "") -> str:
        """The config URL for the organization, one of its repositories, or an enterprise."""
        if enterprise:
            return f"{self.url}/enterprises/{enterprise}"
        if repository:
            return f"{self.url}/{self.organization}/{repository}"
        return f"{self.url}/{self.organization}"

    @property
    def pat(self) -> PersonalAccessToken:
        """A personal access token the fake accepts."""
        return PersonalAccessToken(self.github.pat)

    @property
    def app(self) -> GitHubAppAuth:
        """GitHub App credentials the fake accepts (the private key is the fake's own)."""
        return GitHubAppAuth(
            client_id=str(self.github.app_id),
            installation_id=self.github.installation_id,
            private_key=self.github.private_key_pem,
        )

    def issued_secrets(self) -> list[str]:
        """Every secret in play: PAT, private key, issued tokens, queue tokens, JIT secrets."""
        return [
            *self.github.issued_secrets(),
            *(s.queue_token for s in self.state.sessions.values()),
            *(r.jit_secret for r in self.state.runners.values()),
        ]

    # -- jobs and runners ----------------------------------------------------------------------

    def queue_job(self, *, labels: list[str], **spec: Any) -> FakeJob:
        """Queue a workflow job; it is offered to the first scale set whose labels cover ``labels``.

        Args:
            labels: The job's ``runs-on`` labels.
            spec: Optional wire fields: ``repositoryName``, ``ownerName``,
                ``jobWorkflowRef``, ``jobDisplayName``, ``eventName``.
        """
        return self.state.queue_job({"labels": labels, **spec})

    def register_runner(self, encoded_jit_config: str) -> FakeRunner:
        """A simulated runner starts with its JIT config and comes online.

        Raises:
            FakeError: the JIT config is not one the service minted.
        """
        return self.state.register_runner(encoded_jit_config)

    def take_job(self, runner_id: int) -> FakeJob | None:
        """An online idle runner takes the oldest job assigned to its scale set (``JobStarted``)."""
        return self.state.take_job(runner_id)

    def complete_job(self, request_id: int, result: str = "succeeded") -> FakeJob:
        """Finish a job (``JobCompleted``); its runner's registration goes away."""
        return self.state.complete_job(request_id, result)

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        """The statistics the service would send for the scale set now."""
        return self.state.statistics(scale_set_id)

    # -- faults ------------------------------------------------------------------------------

    def inject_status(
        self,
        endpoint: str,
        status: int,
        *,
        times: int | None = 1,
        retry_after: str = "",
        type_name: str = "",
        message: str = "injected fault",
    ) -> Fault:
        """Answer ``endpoint`` with ``status`` (5xx, 429, 401, 409…) the next ``times`` times."""
        return self.faults.add(
            endpoint,
            "status",
            times=times,
            status=status,
            retry_after=retry_after,
            type_name=type_name,
            message=message,
        )

    def inject_latency(self, endpoint: str, seconds: float, *, times: int | None = 1) -> Fault:
        """Hold ``endpoint``'s requests ``seconds`` before handling them."""
        return self.faults.add(endpoint, "latency", times=times, delay=seconds)

    def inject_drop(self, endpoint: str, *, times: int | None = 1) -> Fault:
        """Close the connection of ``endpoint``'s requests without an answer."""
        return self.faults.add(endpoint, "drop", times=times)

    def inject_empty_body(self, endpoint: str = "get_message", *, times: int | None = 1) -> Fault:
        """Answer 200 with an empty body (the get-message quirk of issue #4285)."""
        return self.faults.add(endpoint, "empty_body", times=times)

    def inject_session_conflict(self, *, times: int | None = 1) -> Fault:
        """Answer session creation with 409 ``RunnerScaleSetSessionConflictException``."""
        return self.inject_status(
            "create_session",
            409,
            times=times,
            type_name="GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionConflictException",
            message="The runner scale set already has an active session.",
        )

    def expire_queue_tokens(self) -> int:
        """Make every message-queue token expire now (next queue call: 401)."""
        return self.state.expire_queue_tokens()

    def expire_session(self, scale_set_id: int) -> bool:
        """Drop the scale set's message session, as the service expires an orphaned one."""
        return self.state.expire_session(scale_set_id)

    def delete_scale_set(self, scale_set_id: int) -> None:
        """Remove the scale set as an admin does on GitHub (or as the service loses one).

        Its session, runners and job assignments go with it; its routes answer 404
        ``RunnerScaleSetNotFoundException`` from then on, the message queue included.

        Raises:
            FakeError: 404, there is no such scale set.
        """
        self.state.delete_scale_set(scale_set_id)

    def expire_admin_tokens(self) -> int:
        """Revoke every admin token issued so far (next Actions call: 401)."""
        return self.github.expire_admin_tokens()

    def requests(self, endpoint: str) -> int:
        """How many requests ``endpoint`` (a route name) has received."""
        return self.faults.requests[endpoint]
