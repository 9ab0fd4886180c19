"""The four scale-set-mode reconcilers and their wiring onto a manager.

`setup_controllers` installs the field indexers and registers the AutoscalingRunnerSet,
AutoscalingListener, EphemeralRunnerSet and EphemeralRunner controllers with ARC's
watches and event filters.

Ports: controllers/actions.github.com SetupIndexers and the four SetupWithManager
methods, as main.go calls them in scale-set mode
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import (
    AUTOSCALING_LISTENER,
    EPHEMERAL_RUNNER_SET,
    SERVICE_ACCOUNT,
    Kind,
)
from arc_controllers.controllers.actions_seam import SecretActionsClientFactory
from arc_controllers.controllers.autoscalinglistener import AutoscalingListenerReconciler
from arc_controllers.controllers.autoscalingrunnerset import (
    AUTOSCALING_RUNNER_SET_OWNER_KEY,
    AutoscalingRunnerSetReconciler,
    listener_scale_set_index,
)
from arc_controllers.controllers.completions import JobCompletions
from arc_controllers.controllers.deletions import DeletionsRequested
from arc_controllers.controllers.ephemeralrunner import EphemeralRunnerReconciler
from arc_controllers.controllers.ephemeralrunnerset import EphemeralRunnerSetReconciler
from arc_controllers.controllers.indexers import RESOURCE_OWNER_KEY, controller_owner_index, setup_runner_indexers
from arc_controllers.controllers.newrunners import NewRunners
from arc_controllers.resourcebuilder.listener import ListenerBuildOptions
from arc_controllers.resourcebuilder.runner import RunnerBuildOptions
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.manager import Manager

ALL_CONTROLLERS = ("autoscalingrunnerset", "autoscalinglistener", "ephemeralrunnerset", "ephemeralrunner")

__all__ = ["ALL_CONTROLLERS", "Controllers", "ControllersOptions", "setup_controllers", "setup_indexers"]


@dataclass(frozen=True, kw_only=True)
class ControllersOptions:
    """Everything the four controllers take from flags and environment.

    Ports: the reconciler fields main.go fills, and actionsgithubcom.Options (options.go)
    """

    controller_namespace: str
    """Where listeners live (env ``CONTROLLER_MANAGER_POD_NAMESPACE``)."""

    listener_image: str
    """The listener pods' image (env ``CONTROLLER_MANAGER_CONTAINER_IMAGE``)."""

    listener_image_pull_secrets: tuple[str, ...] = ()
    """Flag ``--auto-scaler-image-pull-secrets``."""

    listener_metrics_addr: str = "0"
    """Flag ``--listener-metrics-addr``; ``"0"`` disables listener metrics."""

    listener_metrics_endpoint: str = "/metrics"
    """Flag ``--listener-metrics-endpoint``."""

    publish_metrics: bool = False
    """The EphemeralRunner reconciler publishes the runner phase gauges (main.go: ``--metrics-addr`` is not "0")."""

    exclude_label_propagation_prefixes: tuple[str, ...] = ()
    """Flag ``--exclude-label-propagation-prefix`` (repeatable)."""

    build_version: str = "dev"
    """The version gate's build version and the runners' user agent."""

    listener_log_level: str = constants.DEFAULT_LISTENER_LOG_LEVEL
    listener_log_format: str = constants.DEFAULT_LISTENER_LOG_FORMAT
    listener_entrypoint: str = constants.DEFAULT_LISTENER_ENTRYPOINT

    autoscaling_runner_set_concurrency: int = constants.DEFAULT_MAX_CONCURRENT_RECONCILES_AUTOSCALING_RUNNER_SET
    autoscaling_listener_concurrency: int = constants.DEFAULT_MAX_CONCURRENT_RECONCILES_AUTOSCALING_LISTENER
    ephemeral_runner_set_concurrency: int = constants.DEFAULT_MAX_CONCURRENT_RECONCILES_EPHEMERAL_RUNNER_SET
    ephemeral_runner_concurrency: int = constants.DEFAULT_MAX_CONCURRENT_RECONCILES_EPHEMERAL_RUNNER

    failed_runner_recycle_age: float = constants.EPHEMERAL_RUNNER_FAILED_RECYCLE_AGE
    """Seconds after its creation a Failed EphemeralRunner is deleted for its set to replace it.

    Beyond: ARC #3014: flag ``--failed-runner-recycle-age`` (ours); see the README's Failed-runner policy.
    """

    skip_name_validation: bool = False
    """Tests run several managers in one process; controller names would clash."""

    enabled: tuple[str, ...] = ALL_CONTROLLERS
    """Python only: which controllers to register (upstream's suites run one at a time)."""


@dataclass(kw_only=True)
class Controllers:
    """Python only: what `setup_controllers` registered, for tests and for closing the Actions clients."""

    autoscaling_runner_set: AutoscalingRunnerSetReconciler
    autoscaling_listener: AutoscalingListenerReconciler
    runner_set: EphemeralRunnerSetReconciler | None
    runner: EphemeralRunnerReconciler | None
    actions: SecretActionsClientFactory
    extra: dict[str, Any] = field(default_factory=dict)

    async def aclose(self) -> None:
        """Close the Actions clients.

        Python only: close the Actions clients.
        """
        await self.actions.aclose()


async def setup_indexers(mgr: Manager) -> None:
    """All of ARC's field indexers: ``.metadata.controller`` and ``.spec.autoscalingRunnerSet``.

    Ports: SetupIndexers
    """
    await setup_runner_indexers(mgr)
    cache = mgr.get_cache()
    await cache.index_field(SERVICE_ACCOUNT, RESOURCE_OWNER_KEY, controller_owner_index([Kind.AUTOSCALING_LISTENER]))
    await cache.index_field(
        EPHEMERAL_RUNNER_SET, RESOURCE_OWNER_KEY, controller_owner_index([Kind.AUTOSCALING_RUNNER_SET])
    )
    await cache.index_field(AUTOSCALING_LISTENER, AUTOSCALING_RUNNER_SET_OWNER_KEY, listener_scale_set_index)


def _controller_options(concurrency: int, options: ControllersOptions) -> ControllerOptions:
    """Python only: controller options with at least one worker."""
    return ControllerOptions(
        max_concurrent_reconciles=max(concurrency, 1), skip_name_validation=options.skip_name_validation
    )


def _setup_runner_reconcilers(
    mgr: Manager, options: ControllersOptions, actions: SecretActionsClientFactory, build_options: RunnerBuildOptions
) -> tuple[EphemeralRunnerSetReconciler | None, EphemeralRunnerReconciler | None]:
    """Python only: construct the enabled runner reconcilers and call their ``setup_with_manager``.

    Both share one record of the runner DELETEs this process sent, one of the jobs its
    runners completed and one of the runners it created (`DeletionsRequested`,
    `JobCompletions`, `NewRunners`).
    """
    runner_set = runner = None
    deletions, completions, new_runners = DeletionsRequested(), JobCompletions(), NewRunners()
    if "ephemeralrunnerset" in options.enabled:
        runner_set = EphemeralRunnerSetReconciler(
            client=mgr.get_client(),
            api_reader=mgr.get_api_reader(),
            actions=actions,
            build_options=build_options,
            deletions=deletions,
            completions=completions,
            new_runners=new_runners,
        )
        runner_set.setup_with_manager(
            mgr, options=_controller_options(options.ephemeral_runner_set_concurrency, options)
        )
    if "ephemeralrunner" in options.enabled:
        runner = EphemeralRunnerReconciler(
            client=mgr.get_client(),
            actions=actions,
            unregistration_queue=None,
            build_options=build_options,
            publish_metrics=options.publish_metrics,
            failed_recycle_age=options.failed_runner_recycle_age,
            deletions=deletions,
            completions=completions,
            new_runners=new_runners,
        )
        runner.setup_with_manager(mgr, options=_controller_options(options.ephemeral_runner_concurrency, options))
    return runner_set, runner


async def setup_controllers(mgr: Manager, options: ControllersOptions) -> Controllers:
    """Install the indexers and register the four controllers on ``mgr``.

    Secrets and config maps must be read uncached (``uncached=[Secret, ConfigMap]`` in
    the manager options): ARC's charts grant no list/watch on them.

    Ports: SetupIndexers and AutoscalingRunnerSetReconciler, AutoscalingListenerReconciler,
    EphemeralRunnerSetReconciler, EphemeralRunnerReconciler SetupWithManager
    """
    actions = SecretActionsClientFactory(mgr.get_api_reader(), version=options.build_version)
    build_options = RunnerBuildOptions(
        exclude_label_propagation_prefixes=options.exclude_label_propagation_prefixes,
        build_version=options.build_version,
    )
    listener_options = ListenerBuildOptions(
        exclude_label_propagation_prefixes=options.exclude_label_propagation_prefixes,
        log_level=options.listener_log_level,
        log_format=options.listener_log_format,
        entrypoint=options.listener_entrypoint,
    )
    await setup_indexers(mgr)

    ars = AutoscalingRunnerSetReconciler(
        client=mgr.get_client(),
        actions=actions.scale_set_client,
        controller_namespace=options.controller_namespace,
        default_listener_image=options.listener_image,
        default_listener_image_pull_secrets=options.listener_image_pull_secrets,
        build_options=build_options,
        listener_options=listener_options,
        recorder=mgr.get_event_recorder_for("autoscalingrunnerset"),
    )
    if "autoscalingrunnerset" in options.enabled:
        ars.setup_with_manager(mgr, options=_controller_options(options.autoscaling_runner_set_concurrency, options))

    listener = AutoscalingListenerReconciler(
        client=mgr.get_client(),
        app_config=actions.app_config,
        actions=actions.scale_set_client,
        listener_metrics_addr=options.listener_metrics_addr,
        listener_metrics_endpoint=options.listener_metrics_endpoint,
        listener_options=listener_options,
        recorder=mgr.get_event_recorder_for("autoscalinglistener"),
    )
    if "autoscalinglistener" in options.enabled:
        listener.setup_with_manager(mgr, options=_controller_options(options.autoscaling_listener_concurrency, options))

    runner_set, runner = _setup_runner_reconcilers(mgr, options, actions, build_options)
    return Controllers(
        autoscaling_runner_set=ars,
        autoscaling_listener=listener,
        runner_set=runner_set,
        runner=runner,
        actions=actions,
    )
