"""The Actions service calls the runner controllers make, as a Protocol sized to them.

Python only: the runner controllers depend on this seam rather than on the Actions
client itself, so they can be tested with a fake and wired to `arc_controllers.actions`
(or its fake service) by `cmd`. The four error kinds they branch on are recognised by
class name, the names of the ActionsError tree (style-anchors §4.5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from arc_controllers.resourcebuilder.runner import JitRunnerConfig

__all__ = [
    "ActionsClientFactory",
    "RunnerActionsClient",
    "RunnerReference",
    "is_actions_not_found",
    "is_job_still_running",
    "is_runner_exists",
    "is_runner_not_found",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerReference:
    """A registered runner as the service reports it. Ports: scaleset.RunnerReference"""

    id: int
    name: str
    runner_scale_set_id: int


class RunnerActionsClient(Protocol):
    """**Protocol:** the runner calls of the Actions client. Ports: multiclient.Client (subset)"""

    async def generate_jit_runner_config(self, *, name: str, work_folder: str, scale_set_id: int) -> JitRunnerConfig:
        """Python only: register a runner just in time. Raises a ``RunnerExistsError`` when the name is taken."""
        ...

    async def get_runner_by_name(self, name: str, /) -> RunnerReference | None:
        """Python only: the registered runner of that name, or None."""
        ...

    async def remove_runner(self, runner_id: int, /) -> None:
        """Python only: unregister.

        Raises ``JobStillRunningError`` while it runs a job, ``RunnerNotFoundError`` when gone.
        """
        ...


ActionsClientFactory = Callable[[Any], Awaitable[RunnerActionsClient]]
"""Returns the Actions client for an object carrying ``spec.githubConfigUrl``/``githubConfigSecret``.

Ports: SecretResolver.GetActionsService
"""


def _named(err: BaseException, *names: str) -> bool:
    """Python only: whether ``err``'s class or a base class has one of ``names``."""
    return any(cls.__name__ in names for cls in type(err).__mro__)


def is_runner_not_found(err: BaseException) -> bool:
    """Python only: a ``RunnerNotFoundError`` or a plain 404 ``ActionsNotFoundError``."""
    return _named(err, "RunnerNotFoundError", "ActionsNotFoundError")


def is_actions_not_found(err: BaseException) -> bool:
    """Python only: an HTTP 404 from the Actions service."""
    return _named(err, "ActionsNotFoundError")


def is_job_still_running(err: BaseException) -> bool:
    """Python only: the service refused to remove a runner that executes a job."""
    return _named(err, "JobStillRunningError")


def is_runner_exists(err: BaseException) -> bool:
    """Python only: JIT registration for a name that is already registered."""
    return _named(err, "RunnerExistsError")


class ScaleSetRunnerClient:
    """Adapts `arc_controllers.actions.ActionsClient` to `RunnerActionsClient`.

    Python only: maps the wire models onto the seam's plain values.
    """

    def __init__(self, client: Any) -> None:
        """Python only: see the class docstring."""
        self._client = client

    async def generate_jit_runner_config(self, *, name: str, work_folder: str, scale_set_id: int) -> JitRunnerConfig:
        """Python only: see `RunnerActionsClient.generate_jit_runner_config`."""
        from arc_controllers.actions import RunnerScaleSetJitRunnerSetting

        config = await self._client.generate_jit_runner_config(
            RunnerScaleSetJitRunnerSetting(name=name, work_folder=work_folder), scale_set_id
        )
        runner = config.runner
        if runner is None:
            raise ValueError(f"the Actions service returned a JIT config without a runner for {name}")
        return JitRunnerConfig(
            encoded_jit_config=config.encoded_jit_config,
            runner_id=int(runner.id),
            runner_name=str(runner.name),
            runner_scale_set_id=int(runner.runner_scale_set_id or scale_set_id),
        )

    async def get_runner_by_name(self, name: str, /) -> RunnerReference | None:
        """Python only: see `RunnerActionsClient.get_runner_by_name`."""
        found = await self._client.get_runner_by_name(name)
        if found is None:
            return None
        return RunnerReference(
            id=int(found.id), name=str(found.name), runner_scale_set_id=int(found.runner_scale_set_id)
        )

    async def remove_runner(self, runner_id: int, /) -> None:
        """Python only: see `RunnerActionsClient.remove_runner`."""
        await self._client.remove_runner(runner_id)


class SecretActionsClientFactory:
    """Builds (and keeps) one Actions client per config URL and config secret.

    Reads ``spec.githubConfigSecret`` from the object's namespace (``github_token``, or
    ``github_app_id``/``github_app_installation_id``/``github_app_private_key``) and keeps
    the client for ``ttl`` seconds, so a reconcile does not re-read the secret each time
    (Go's multiclient re-reads it on every call). ``pool_size`` clients are handed out in
    turn: each Actions client serialises its calls behind one lock (Go's ``Client.mu``),
    and JIT registrations of many runners should not wait for one another.

    Python only: a minimal stand-in for secretresolver + multiclient (spec §11.1) for the
    runner controllers; no vault, proxy or TLS config map.
    """

    def __init__(self, reader: Any, *, ttl: float = 60.0, version: str = "dev", pool_size: int = 1) -> None:
        """Python only: see the class docstring."""
        self._reader = reader
        self._ttl = ttl
        self._version = version
        self._pool_size = max(pool_size, 1)
        self._clients: dict[tuple[str, str, str], tuple[float, list[ScaleSetRunnerClient], list[Any]]] = {}
        self._turn = 0

    async def __call__(self, obj: Any) -> RunnerActionsClient:
        """Python only: the runner-call client for ``obj`` (the pool's clients in turn)."""
        adapters, _ = await self._entry(obj)
        self._turn += 1
        return adapters[self._turn % len(adapters)]

    async def scale_set_client(self, obj: Any) -> Any:
        """Python only: the full `arc_controllers.actions.ActionsClient` for ``obj`` (scale set calls).

        Always the pool's first client, whose system info then carries the scale set id.

        Ports: SecretResolver.GetActionsService, as the AutoscalingRunnerSet reconciler calls it
        """
        _, clients = await self._entry(obj)
        return clients[0]

    async def app_config(self, obj: Any) -> Any:
        """Python only: the `AppConfig` held by ``obj``'s config secret (read uncached each call).

        Raises:
            AppConfigError: the secret holds no valid credentials.
            NotFoundError: the secret is missing.

        Ports: SecretResolver.GetAppConfig (Kubernetes secrets only)
        """
        import base64

        from arc_controllers.api.v1alpha1.appconfig import AppConfig
        from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey

        namespace, secret_name, _ = self._key(obj)
        secret = await self._reader.get(GroupVersionKind("", "v1", "Secret"), ObjectKey(namespace, secret_name))
        data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
        return AppConfig.from_secret_data(data)

    @staticmethod
    def _key(obj: Any) -> tuple[str, str, str]:
        """Python only: (namespace of the config secret, its name, the config URL) for ``obj``.

        A listener's secret lives in its scale set's namespace.
        """
        spec = obj.get("spec") or {}
        if obj.get("kind") == "EphemeralRunnerSet":
            spec = spec.get("ephemeralRunnerSpec") or {}
        namespace = obj["metadata"]["namespace"]
        if obj.get("kind") == "AutoscalingListener":
            namespace = spec.get("autoscalingRunnerSetNamespace") or namespace
        return (namespace, str(spec.get("githubConfigSecret") or ""), str(spec.get("githubConfigUrl") or ""))

    async def _entry(self, obj: Any) -> tuple[list[ScaleSetRunnerClient], list[Any]]:
        """Python only: the pooled adapters and clients for ``obj``, built when missing or older than ``ttl``."""
        import base64
        import time

        from arc_controllers.actions import GitHubAppAuth, PersonalAccessToken, SystemInfo, new_client
        from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey

        key = self._key(obj)
        namespace = key[0]
        now = time.monotonic()
        cached = self._clients.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1], cached[2]
        secret = await self._reader.get(GroupVersionKind("", "v1", "Secret"), ObjectKey(namespace, key[1]))
        data = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
        credentials: Any
        if data.get("github_token"):
            credentials = PersonalAccessToken(data["github_token"])
        else:
            credentials = GitHubAppAuth(
                client_id=data["github_app_id"],
                installation_id=int(data["github_app_installation_id"]),
                private_key=data["github_app_private_key"],
            )
        clients = [
            new_client(
                key[2],
                credentials,
                system_info=SystemInfo(version=self._version, subsystem="gha-scale-set-controller"),
            )
            for _ in range(self._pool_size)
        ]
        adapters = [ScaleSetRunnerClient(client) for client in clients]
        if cached is not None:
            for old_client in cached[2]:
                await old_client.aclose()
        self._clients[key] = (now, adapters, clients)
        return adapters, clients

    async def aclose(self) -> None:
        """Python only: close every client."""
        for _, _, clients in self._clients.values():
            for client in clients:
                await client.aclose()
        self._clients.clear()
