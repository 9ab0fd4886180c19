"""The Actions service calls the controllers make, as Protocols sized to them.

Python only: the runner controllers depend on `RunnerActionsClient` and the
AutoscalingRunnerSet reconciler on `ScaleSetActionsClient` rather than on the
Actions client itself, so they can be tested with a fake and wired to
`arc_controllers.actions` (or its fake service) by `cmd`. Both are typed with
`arc_controllers.actions.types`; what they raise are the classes of
`arc_controllers.actions.errors`, caught by class (``except RunnerNotFoundError``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import structlog

from arc_controllers.actions import (
    ActionsClient,
    ActionsNotFoundError,
    Credentials,
    GitHubAppAuth,
    JobStillRunningError,
    PersonalAccessToken,
    ProxyConfig,
    RunnerExistsError,
    RunnerGroup,
    RunnerNotFoundError,
    RunnerScaleSet,
    RunnerScaleSetJitRunnerSetting,
    SystemInfo,
    new_client,
)
from arc_controllers.api.v1alpha1 import SECRET
from arc_controllers.api.v1alpha1.appconfig import AppConfig
from arc_controllers.controllers.actions_options import ClientConfigError, ObjectReader, resolve_client_options
from arc_controllers.resourcebuilder.runner import JitRunnerConfig
from reconcilekit.client.interfaces import Object, ObjectKey

__all__ = [
    "ActionsClientFactory",
    "ClientBuilder",
    "ClientConfigError",
    "RunnerActionsClient",
    "RunnerReference",
    "ScaleSetActionsClient",
    "ScaleSetLookup",
    "ScaleSetLookupFactory",
    "is_actions_not_found",
    "is_job_still_running",
    "is_runner_exists",
    "is_runner_not_found",
]

log = structlog.get_logger(__name__)



@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerReference:
    """A registered runner as the service reports it. Ports: scaleset.RunnerReference"""

    id: int
    name: str
    runner_scale_set_id: int


class RunnerActionsClient(Protocol):
    """**Protocol:** the runner calls of the Actions client. Ports: multiclient.Client (subset)"""

    async def generate_jit_runner_config(self, *, name: str, work_folder: str, scale_set_id: int) -> JitRunnerConfig:
        """Python only: register a runner just in time. Raises `RunnerExistsError` when the name is taken."""
        ...

    async def get_runner_by_name(self, name: str, /) -> RunnerReference | None:
        """Python only: the registered runner of that name, or None."""
        ...

    async def remove_runner(self, runner_id: int, /) -> None:
        """Python only: unregister.

        Raises `JobStillRunningError` while it runs a job, `RunnerNotFoundError` (or a plain
        `ActionsNotFoundError`) when gone.
        """
        ...


class ScaleSetActionsClient(Protocol):
    """**Protocol:** the scale set calls of the Actions client (`ActionsClient` has them).

    Ports: multiclient.Client (the subset the AutoscalingRunnerSet reconciler calls)
    """

    @property
    def system_info(self) -> SystemInfo:
        """The client's system info (user agent). Ports: scaleset.Client.SystemInfo"""
        ...

    def set_system_info(self, info: SystemInfo, /) -> None:
        """Replace the client's system info. Ports: scaleset.Client.SetSystemInfo"""
        ...

    async def get_runner_group_by_name(self, runner_group: str, /) -> RunnerGroup:
        """The runner group; raises `ActionsError` when there is none or several.

        Ports: multiclient.Client.GetRunnerGroupByName
        """
        ...

    async def get_runner_scale_set(self, runner_group_id: int, name: str, /) -> RunnerScaleSet | None:
        """The scale set of that name in the group, or None. Ports: multiclient.Client.GetRunnerScaleSet"""
        ...

    async def get_runner_scale_set_by_id(self, runner_scale_set_id: int, /) -> RunnerScaleSet:
        """The scale set; raises `ActionsNotFoundError` when it is gone.

        Ports: multiclient.Client.GetRunnerScaleSetByID
        """
        ...

    async def create_runner_scale_set(self, scale_set: RunnerScaleSet, /) -> RunnerScaleSet:
        """Register a scale set. Ports: multiclient.Client.CreateRunnerScaleSet"""
        ...

    async def update_runner_scale_set(self, runner_scale_set_id: int, scale_set: RunnerScaleSet, /) -> RunnerScaleSet:
        """Change a scale set's name or runner group. Ports: multiclient.Client.UpdateRunnerScaleSet"""
        ...

    async def delete_runner_scale_set(self, runner_scale_set_id: int, /) -> None:
        """Remove a scale set; raises `ActionsNotFoundError` when it is gone.

        Ports: multiclient.Client.DeleteRunnerScaleSet
        """
        ...


class ScaleSetLookup(Protocol):
    """**Protocol:** the one call the AutoscalingListener reconciler makes after a listener death (ARC #4370)."""

    async def get_runner_scale_set_by_id(self, runner_scale_set_id: int, /) -> RunnerScaleSet:
        """The scale set; raises `ActionsNotFoundError` when it is gone.

        Ports: multiclient.Client.GetRunnerScaleSetByID
        """
        ...


ScaleSetLookupFactory = Callable[[Object], Awaitable[ScaleSetLookup]]
"""Returns the Actions client for an AutoscalingListener (its spec carries the scale set's URL,
secret, proxy and TLS; its secrets live in ``spec.autoscalingRunnerSetNamespace``).

Ports: SecretResolver.GetActionsService
"""


ActionsClientFactory = Callable[[Object], Awaitable[RunnerActionsClient]]
"""Returns the Actions client for an object carrying ``spec.githubConfigUrl``/``githubConfigSecret``
(and optionally ``spec.proxy``/``githubServerTLS``).

Ports: SecretResolver.GetActionsService
"""


class ClientBuilder(Protocol):
    """**Protocol:** builds an Actions client; `arc_controllers.actions.new_client` is one.

    Python only: the seam through which tests hand `SecretActionsClientFactory` a fake.
    """

    def __call__(
        self,
        config_url: str,
        credentials: Credentials,
        /,
        *,
        system_info: SystemInfo,
        proxy: ProxyConfig | None,
        root_ca: str,
    ) -> ActionsClient: ...


def is_runner_not_found(err: BaseException) -> bool:
    """Python only: a `RunnerNotFoundError` or a plain 404 `ActionsNotFoundError`.

    Prefer ``except (RunnerNotFoundError, ActionsNotFoundError)`` in new code.
    """
    return isinstance(err, RunnerNotFoundError | ActionsNotFoundError)


def is_actions_not_found(err: BaseException) -> bool:
    """Python only: an HTTP 404 from the Actions service (prefer ``except ActionsNotFoundError``)."""
    return isinstance(err, ActionsNotFoundError)


def is_job_still_running(err: BaseException) -> bool:
    """Python only: the service refused to remove a runner that executes a job (a `JobStillRunningError`)."""
    return isinstance(err, JobStillRunningError)


def is_runner_exists(err: BaseException) -> bool:
    """Python only: JIT registration for a name that is already registered (a `RunnerExistsError`)."""
    return isinstance(err, RunnerExistsError)


class ScaleSetRunnerClient:
    """Adapts `arc_controllers.actions.ActionsClient` to `RunnerActionsClient`.

    Python only: maps the wire models onto the seam's plain values.
    """

    def __init__(self, client: ActionsClient) -> None:
        """Python only: see the class docstring."""
        self._client = client

    async def generate_jit_runner_config(self, *, name: str, work_folder: str, scale_set_id: int) -> JitRunnerConfig:
        """Python only: see `RunnerActionsClient.generate_jit_runner_config`."""
        config = await self._client.generate_jit_runner_config(
            RunnerScaleSetJitRunnerSetting(name=name, work_folder=work_folder), scale_set_id
        )
        runner = config.runner
        if runner is None:
            raise ValueError(f"the Actions service returned a JIT config without a runner for {name}")
        return JitRunnerConfig(
            encoded_jit_config=config.encoded_jit_config,
            runner_id=runner.id,
            runner_name=runner.name,
            runner_scale_set_id=runner.runner_scale_set_id or scale_set_id,
        )

    async def get_runner_by_name(self, name: str, /) -> RunnerReference | None:
        """Python only: see `RunnerActionsClient.get_runner_by_name`."""
        found = await self._client.get_runner_by_name(name)
        if found is None:
            return None
        return RunnerReference(id=found.id, name=found.name, runner_scale_set_id=found.runner_scale_set_id)

    async def remove_runner(self, runner_id: int, /) -> None:
        """Python only: see `RunnerActionsClient.remove_runner`."""
        await self._client.remove_runner(runner_id)


@dataclass(slots=True)
class _CachedClient:
    """Python only: one built Actions client, when it was last confirmed, and its settings' digest."""

    confirmed_at: float
    fingerprint: str
    client: ActionsClient
    adapter: ScaleSetRunnerClient


class _ClientKey(NamedTuple):
    """Python only: what picks a cached client; the proxy and TLS settings as canonical JSON ("" when unset)."""

    namespace: str
    secret_name: str
    config_url: str
    proxy: str
    tls: str


class SecretActionsClientFactory:
    """Builds (and keeps) one Actions client per namespace, config secret, config URL, proxy and TLS setting.

    Reads ``spec.githubConfigSecret`` from the object's namespace (``github_token``, or
    ``github_app_id``/``github_app_installation_id``/``github_app_private_key``), and
    what ``spec.proxy`` and ``spec.githubServerTLS`` point at (proxy credential secrets,
    the CA config map; see `resolve_client_options`), and keeps the client for ``ttl``
    seconds, so a reconcile does not re-read them each time (Go's multiclient re-reads
    them on every call). One client per key is enough: the Actions client serialises
    only its admin-token renewal, so JIT registrations of many runners run concurrently
    on it.

    Cache key: (namespace, secret name, config URL, ``spec.proxy``, ``spec.githubServerTLS``).
    Go's key counts only whether a proxy is set; here two objects with different proxy
    or TLS settings never share a client, and editing either setting builds a new
    client at once. An object without ``spec.proxy`` gets a client that follows the
    environment's ``HTTP(S)_PROXY``/``NO_PROXY``; one with ``spec.proxy`` ignores them.

    Concurrency: a per-key lock makes callers that arrive while the client is being
    built (cold cache or expired TTL) wait for that one build and share its client: one
    read of the secret, credential secrets and config map, and one client, per key,
    however many reconciles ask at once.

    Expiry: after ``ttl`` seconds the secret, the proxy credentials and the CA are read
    again. Unchanged values keep the same client; a rotated token, proxy password or CA
    builds a new client, and the old one is retired, not closed, since other tasks may
    still be mid-request on it. Retired clients are closed by `aclose` (one per change,
    so the list stays small).

    Args:
        reader: reads Secrets and ConfigMaps (``get(gvk, key)``), normally the manager's API reader.
        ttl: seconds a client is used before its secret, proxy credentials and CA are read again.
        version: the controller version sent in the Actions client's user agent.
        build_client: ``(config_url, credentials, *, system_info, proxy, root_ca) -> client``;
            defaults to `arc_controllers.actions.new_client` (tests pass a fake).

    Raises (from ``__call__``): whatever the reader raises (the config Secret is missing),
    ``KeyError``/``ValueError`` for a Secret without usable credentials, and
    `ClientConfigError` for a proxy or TLS setting that cannot be resolved. Only the
    reconcile of that object fails. No secret value, proxy URL or CA is logged.

    Python only: a stand-in for secretresolver.GetActionsService + multiclient for the runner
    controllers, reading Kubernetes secrets only: ``vaultConfig`` (Azure Key Vault and
    its proxy) is out of scope, and ``githubConfigSecret`` is read as a Secret even
    when an object sets it.
    """

    def __init__(
        self,
        reader: ObjectReader,
        *,
        ttl: float = 60.0,
        version: str = "dev",
        build_client: ClientBuilder = new_client,
    ) -> None:
        """Python only: see the class docstring."""
        self._reader = reader
        self._ttl = ttl
        self._version = version
        self._build_client = build_client
        self._clients: dict[_ClientKey, _CachedClient] = {}
        self._locks: dict[_ClientKey, asyncio.Lock] = {}
        self._retired: list[ActionsClient] = []

    async def __call__(self, obj: Object) -> RunnerActionsClient:
        """Python only: the runner-call client for ``obj`` (built at most once per key at a time)."""
        return (await self._entry(obj)).adapter

    async def scale_set_client(self, obj: Object) -> ActionsClient:
        """Python only: the full `arc_controllers.actions.ActionsClient` for ``obj`` (scale set calls).

        The same client the runner calls use, whose system info then carries the scale set id.

        Ports: SecretResolver.GetActionsService, as the AutoscalingRunnerSet reconciler calls it
        """
        return (await self._entry(obj)).client

    async def app_config(self, obj: Object) -> AppConfig:
        """Python only: the `AppConfig` held by ``obj``'s config secret (read uncached each call).

        Raises:
            AppConfigError: the secret holds no valid credentials.
            NotFoundError: the secret is missing.

        Ports: SecretResolver.GetAppConfig (Kubernetes secrets only)
        """
        key = self._key(obj)
        secret = await self._reader.get(SECRET, ObjectKey(key.namespace, key.secret_name))
        data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
        return AppConfig.from_secret_data(data)

    @staticmethod
    def _key(obj: Object) -> _ClientKey:
        """Python only: the cache key of ``obj``'s client.

        An EphemeralRunnerSet's settings sit under ``spec.ephemeralRunnerSpec``; a
        listener's secrets and config maps live in its scale set's namespace.
        """
        spec = obj.get("spec") or {}
        if obj.get("kind") == "EphemeralRunnerSet":
            spec = spec.get("ephemeralRunnerSpec") or {}
        namespace = obj["metadata"]["namespace"]
        if obj.get("kind") == "AutoscalingListener":
            namespace = spec.get("autoscalingRunnerSetNamespace") or namespace
        return _ClientKey(
            namespace=namespace,
            secret_name=str(spec.get("githubConfigSecret") or ""),
            config_url=str(spec.get("githubConfigUrl") or ""),
            proxy=_canonical(spec.get("proxy")),
            tls=_canonical(spec.get("githubServerTLS")),
        )

    async def _entry(self, obj: Object) -> _CachedClient:
        """Python only: the cached client for ``obj``; one build per key however many callers ask at once."""
        key = self._key(obj)
        cached = self._fresh(key)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._fresh(key)  # built (or confirmed) while this caller waited
            if cached is not None:
                return cached
            return await self._refresh(key)

    def _fresh(self, key: _ClientKey) -> _CachedClient | None:
        """Python only: the cached client for ``key`` if it is younger than the TTL."""
        cached = self._clients.get(key)
        if cached is not None and time.monotonic() - cached.confirmed_at < self._ttl:
            return cached
        return None

    async def _refresh(self, key: _ClientKey) -> _CachedClient:
        """Python only: read the secret, proxy credentials and CA; keep the client if none changed, else build one.

        Ports: SecretResolver.GetActionsService and multiclient.Scaleset.GetClientFor
        """
        secret = await self._reader.get(SECRET, ObjectKey(key.namespace, key.secret_name))
        raw = secret.get("data") or {}
        options = await resolve_client_options(
            self._reader,
            namespace=key.namespace,
            proxy=json.loads(key.proxy) if key.proxy else None,
            tls=json.loads(key.tls) if key.tls else None,
        )
        fingerprint = hashlib.sha256(
            json.dumps({"secret": raw, "options": options.digest()}, sort_keys=True).encode()
        ).hexdigest()
        now = time.monotonic()
        old = self._clients.get(key)
        if old is not None and old.fingerprint == fingerprint:
            old.confirmed_at = now
            return old
        data = {k: base64.b64decode(v).decode() for k, v in raw.items()}
        credentials: Credentials
        if data.get("github_token"):
            credentials = PersonalAccessToken(data["github_token"])
        else:
            credentials = GitHubAppAuth(
                client_id=data["github_app_id"],
                installation_id=int(data["github_app_installation_id"]),
                private_key=data["github_app_private_key"],
            )
        client = self._build_client(
            key.config_url,
            credentials,
            system_info=SystemInfo(version=self._version, subsystem="gha-scale-set-controller"),
            proxy=options.proxy,
            root_ca=options.root_ca,
        )
        entry = _CachedClient(
            confirmed_at=now, fingerprint=fingerprint, client=client, adapter=ScaleSetRunnerClient(client)
        )
        if old is not None:
            self._retired.append(old.client)  # may still carry requests: closed by aclose
        self._clients[key] = entry
        log.info(
            "built actions client",
            namespace=key.namespace,
            github_config_secret=key.secret_name,
            proxy=options.proxy is not None,
            root_ca=bool(options.root_ca),
            replaced=old is not None,
        )
        return entry

    async def aclose(self) -> None:
        """Python only: close every client this factory built, current and retired."""
        clients = [entry.client for entry in self._clients.values()] + self._retired
        self._clients.clear()
        self._retired.clear()
        self._locks.clear()
        first: BaseException | None = None
        for client in clients:
            try:
                await client.aclose()
            except Exception as err:  # close the rest, then report the first failure
                first = first or err
        if first is not None:
            raise first


def _canonical(value: object) -> str:
    """Python only: ``value`` as sorted compact JSON; "" for ``None`` (a setting left out)."""
    return "" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))
