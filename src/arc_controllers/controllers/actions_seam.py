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
        """Register a runner just in time. Raises a ``RunnerExistsError`` when the name is taken."""
        ...

    async def get_runner_by_name(self, name: str, /) -> RunnerReference | None:
        """The registered runner of that name, or None."""
        ...

    async def remove_runner(self, runner_id: int, /) -> None:
        """Unregister. Raises ``JobStillRunningError`` while it runs a job, ``RunnerNotFoundError`` when gone."""
        ...


ActionsClientFactory = Callable[[Any], Awaitable[RunnerActionsClient]]
"""Returns the Actions client for an object carrying ``spec.githubConfigUrl``/``githubConfigSecret``.

Ports: SecretResolver.GetActionsService
"""


def _named(err: BaseException, *names: str) -> bool:
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
