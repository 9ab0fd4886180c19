"""EphemeralRunner JIT registration: registering the runner with the Actions service, reading its identity back.

Ports: controllers/actions.github.com/ephemeralrunner_controller.go (createRunnerJitConfig,
retryableError, fatalError, the runner ID parse of Reconcile)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import objects
from arc_controllers.controllers.actions_seam import ActionsClientFactory, is_runner_exists
from arc_controllers.controllers.ephemeralrunner.resources import secret_value
from arc_controllers.resourcebuilder.runner import JitRunnerConfig
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.errors import NotFoundError

__all__ = ["FatalError", "JitRegistration", "RetryableError"]

log = structlog.get_logger("EphemeralRunner")  # Go's logr name for this reconciler


class RetryableError(Exception):
    """JIT registration should be tried again shortly. Ports: retryableError"""


class FatalError(Exception):
    """The runner can never register; delete it. Ports: fatalError"""


def _work_folder(runner: Object) -> str:
    """Python only: the ``workingDir`` of the last ``runner`` container that sets one, "" when none does."""
    work_folder = ""
    for container in objects.spec(objects.spec(runner)).get("containers") or []:
        if container.get("name") == constants.EPHEMERAL_RUNNER_CONTAINER_NAME and container.get("workingDir"):
            work_folder = container["workingDir"]
    return work_folder


@dataclass(frozen=True, kw_only=True)
class JitRegistration:
    """Registers runners just in time through ``actions`` and reads their identity from the JIT secret."""

    client: Client
    actions: ActionsClientFactory

    async def create_runner_jit_config(self, runner: Object) -> JitRunnerConfig:
        """Register the runner just in time; an existing registration of the same name is removed first.

        Raises:
            RetryableError: the name was taken and is being freed.
            FatalError: the name belongs to another scale set.

        Ports: EphemeralRunnerReconciler.createRunnerJitConfig
        """
        actions = await self.actions(runner)
        scale_set_id = int(objects.spec(runner).get("runnerScaleSetId") or 0)
        name = objects.name(runner)
        try:
            return await actions.generate_jit_runner_config(
                name=name, work_folder=_work_folder(runner), scale_set_id=scale_set_id
            )
        except Exception as err:
            if not is_runner_exists(err):
                raise RuntimeError(f"failed to generate JIT config for EphemeralRunner {name}") from err
        existing = await actions.get_runner_by_name(name)
        if existing is None:
            raise RetryableError("runner exists but was not found by name")
        if existing.runner_scale_set_id != scale_set_id:
            raise FatalError(f"runner name {name} is registered to scale set {existing.runner_scale_set_id}")
        await actions.remove_runner(existing.id)
        raise RetryableError("removed a stale registration of the same name")

    async def runner_identity(self, secret: Object) -> tuple[int, str] | None:
        """``(runnerId, runnerName)`` from the JIT secret; a corrupt secret is deleted (None).

        Ports: EphemeralRunnerReconciler.Reconcile, the runner ID parse
        """
        try:
            rid = int(secret_value(secret, "runnerId"))
        except ValueError:
            log.warning("corrupt JIT secret, deleting it", secret=objects.name(secret))
            with contextlib.suppress(NotFoundError):
                await self.client.delete(secret)
            return None
        return rid, secret_value(secret, "runnerName")
