"""The AutoscalingListener reconciler: Go's decision order on one screen, and its wiring onto a manager.

Ports: controllers/actions.github.com/autoscalinglistener_controller.go (AutoscalingListenerReconciler,
its Reconcile and SetupWithManager)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import (
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    POD,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
    AutoscalingListenerPhase,
    objects,
)
from arc_controllers.controllers.actions_seam import ScaleSetLookupFactory
from arc_controllers.controllers.autoscalinglistener.cleanup import ListenerCleanup
from arc_controllers.controllers.autoscalinglistener.pod import ListenerPod
from arc_controllers.controllers.autoscalinglistener.ready import report_ready
from arc_controllers.controllers.autoscalinglistener.resources import ListenerResources
from arc_controllers.controllers.autoscalinglistener.secrets import AppConfigResolver, ListenerSecrets
from arc_controllers.controllers.conditions import ReadyConditions
from arc_controllers.controllers.patching import LazyCopy
from arc_controllers.controllers.predicates import (
    listener_pod_predicate,
    listener_service_account_predicate,
    own_conditions_predicate,
)
from arc_controllers.resourcebuilder.listener import (
    ListenerBuildOptions,
    ListenerMetricsServerConfig,
    new_scale_set_listener_role,
    new_scale_set_listener_role_binding,
    new_scale_set_listener_service_account,
)
from reconcilekit.builder import controller_managed_by
from reconcilekit.client.interfaces import Client, Object, ObjectKey
from reconcilekit.controller.options import Options as ControllerOptions
from reconcilekit.controllerutil import add_finalizer, contains_finalizer, remove_finalizer
from reconcilekit.errors import NotFoundError
from reconcilekit.handler import enqueue_requests_from_map_func
from reconcilekit.manager import Manager
from reconcilekit.predicate import ResourceVersionChangedPredicate
from reconcilekit.reconcile import Request, Result
from reconcilekit.recorder import EventRecorder

__all__ = ["AutoscalingListenerReconciler", "rbac_to_listener"]

log = structlog.get_logger("AutoscalingListener")  # Go's logr name for this reconciler


def rbac_to_listener(obj: Object) -> list[Request]:
    """Python only: map a Role/RoleBinding event to its listener by the ``auto-scaling-listener-*`` labels."""
    labels = objects.labels(obj)
    namespace = labels.get(constants.LABEL_KEY_LISTENER_NAMESPACE)
    name = labels.get(constants.LABEL_KEY_LISTENER_NAME)
    return [Request(namespace, name)] if namespace and name else []


@dataclass(kw_only=True)
class AutoscalingListenerReconciler:
    """Ports: AutoscalingListenerReconciler

    The parts (`resources`, `cleanup`, `secrets`, `pod`) are built from the fields below
    and take what they need explicitly.
    """

    client: Client
    """Reads from the informer cache (secrets and config maps uncached), writes to the API server."""

    app_config: AppConfigResolver
    """Reads a scale set's GitHub credentials for the listener's config."""

    actions: ScaleSetLookupFactory | None = None
    """Returns a listener's Actions client, to look its scale set up once per listener death; None: no
    lookup. Beyond: ARC #4370"""

    listener_metrics_addr: str = "0"
    """``host:port`` the listener serves metrics on; ``"0"`` turns them off. Ports: ListenerMetricsAddr"""

    listener_metrics_endpoint: str = "/metrics"
    """Ports: ListenerMetricsEndpoint"""

    listener_options: ListenerBuildOptions = field(default_factory=ListenerBuildOptions)
    """Label exclusions, log level and format, entrypoint."""

    recorder: EventRecorder | None = None
    """Warning Events when the listener's Ready condition turns False; None records none.
    Beyond: ARC #4337: Go ARC records no Events."""

    resources: ListenerResources = field(init=False, repr=False)
    conditions: ReadyConditions = field(init=False, repr=False)
    cleanup: ListenerCleanup = field(init=False, repr=False)
    secrets: ListenerSecrets = field(init=False, repr=False)
    pod: ListenerPod = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Python only: build the parts from the fields."""
        self.resources = ListenerResources(client=self.client, options=self.listener_options)
        self.conditions = ReadyConditions(client=self.client, recorder=self.recorder)
        self.cleanup = ListenerCleanup(resources=self.resources)
        self.secrets = ListenerSecrets(resources=self.resources, app_config=self.app_config)
        self.pod = ListenerPod(resources=self.resources, actions=self.actions)

    async def reconcile(self, request: Request, /) -> Result:
        """Ports: AutoscalingListenerReconciler.Reconcile

        Go's guards in Go's order; every branch returns what its method decides. The two
        secrets are written in passing: they are not watched.
        """
        try:
            listener = await self.client.get(AUTOSCALING_LISTENER, request.key)
        except NotFoundError:
            return Result()
        if objects.is_deleting(listener):
            return await self._finalize(listener)
        if not contains_finalizer(listener, constants.AUTOSCALING_LISTENER_FINALIZER_NAME):
            return await self._add_finalizer(listener)
        spec = objects.spec(listener)
        ars_namespace = spec.get("autoscalingRunnerSetNamespace", "")
        try:
            ars = await self.client.get(
                AUTOSCALING_RUNNER_SET, ObjectKey(ars_namespace, spec.get("autoscalingRunnerSetName", ""))
            )
        except NotFoundError:
            return await self._delete_orphan(listener)
        if spec.get("phase") == AutoscalingListenerPhase.STOPPED:
            return await self._stop(listener)
        try:
            result = await self._reconcile_children(listener, ars)
        except Exception as err:  # Beyond: ARC #4337: the cause goes on the object, the retry goes on
            await self.conditions.fail(listener, err, action="reconcile")
            raise
        await report_ready(self.conditions, self.resources, listener)
        return result

    async def _reconcile_children(self, listener: Object, ars: Object) -> Result:
        """The ServiceAccount, Role, RoleBinding, secrets and pod, one step per pass.

        Ports: AutoscalingListenerReconciler.Reconcile, from the ServiceAccount block on
        """
        spec, name, options = objects.spec(listener), objects.name(listener), self.listener_options
        ars_namespace = spec.get("autoscalingRunnerSetNamespace", "")
        desired_account = new_scale_set_listener_service_account(listener, options=options)
        account = await self.resources.get(SERVICE_ACCOUNT, objects.namespace(listener), name)
        if account is None:
            return await self.resources.create(desired_account)
        if self.resources.metadata_differs(account, desired_account):
            return await self.resources.update_metadata(account, desired_account)
        desired_role = new_scale_set_listener_role(listener, options=options)
        role = await self.resources.get(ROLE, ars_namespace, name)
        if role is None:
            return await self.resources.create(desired_role)
        if self.resources.role_drifted(role, desired_role):
            return await self.resources.update_role(role, desired_role)
        desired_binding = new_scale_set_listener_role_binding(listener, role, account, options=options)
        binding = await self.resources.get(ROLE_BINDING, ars_namespace, name)
        if binding is None:
            return await self.resources.create(desired_binding)
        if self.resources.metadata_differs(binding, desired_binding):
            return await self.resources.update_metadata(binding, desired_binding)

        if spec.get("proxy") is not None:
            await self.secrets.reconcile_proxy_secret(listener)
        metrics = self._metrics_config()
        config_secret = await self.secrets.reconcile_config_secret(listener, ars, metrics)
        return await self.pod.reconcile_pod(listener, config_secret, account, metrics)

    def setup_with_manager(self, mgr: Manager, *, options: ControllerOptions | None = None) -> None:
        """``For(AutoscalingListener).Owns(Pod, ServiceAccount).Watches(Role, RoleBinding)``, named.

        Roles and RoleBindings live in the scale set's namespace, out of an owner reference's
        reach; their ``auto-scaling-listener-*`` labels map them back.

        Args:
            options: workers and name validation (the controller defaults when None).

        Ports: AutoscalingListenerReconciler.SetupWithManager
        """
        (
            controller_managed_by(mgr)
            .for_(AUTOSCALING_LISTENER, predicates=[own_conditions_predicate(AUTOSCALING_LISTENER.kind)])
            .owns(POD, predicates=[listener_pod_predicate()])
            .owns(SERVICE_ACCOUNT, predicates=[listener_service_account_predicate()])
            .watches(ROLE, enqueue_requests_from_map_func(rbac_to_listener))
            .watches(ROLE_BINDING, enqueue_requests_from_map_func(rbac_to_listener))
            .with_event_filter(ResourceVersionChangedPredicate())
            .with_options(options or ControllerOptions())
            .named("autoscalinglistener")
            .complete(self)
        )

    async def _add_finalizer(self, listener: Object) -> Result:
        """Ports: AutoscalingListenerReconciler.Reconcile, the "add finalizer" branch"""
        lazy = LazyCopy(listener)
        add_finalizer(lazy.mutate(), constants.AUTOSCALING_LISTENER_FINALIZER_NAME)
        await self.client.patch(listener, lazy.merge_from())
        log.info("added finalizer", autoscalinglistener=objects.name(listener))
        return Result()

    async def _finalize(self, listener: Object) -> Result:
        """Remove everything the listener runs on, then drop the finalizer.

        Ports: AutoscalingListenerReconciler.Reconcile, the deletion branch
        """
        if not contains_finalizer(listener, constants.AUTOSCALING_LISTENER_FINALIZER_NAME):
            return Result()
        done, delay = await self.cleanup.cleanup_resources(listener)
        if not done:
            return Result(requeue_after=delay)
        lazy = LazyCopy(listener)
        remove_finalizer(lazy.mutate(), constants.AUTOSCALING_LISTENER_FINALIZER_NAME)
        try:
            await self.client.patch(listener, lazy.merge_from())
        except NotFoundError:
            pass
        log.info("removed finalizer", autoscalinglistener=objects.name(listener))
        self.pod.registration.forget(listener)
        return Result()

    async def _delete_orphan(self, listener: Object) -> Result:
        """The scale set is gone: delete this listener.

        Ports: AutoscalingListenerReconciler.Reconcile, the missing-AutoscalingRunnerSet branch
        """
        log.info("autoscaling runner set is gone; deleting the listener", autoscalinglistener=objects.name(listener))
        try:
            await self.client.delete(listener)
        except NotFoundError:
            pass
        return Result()

    async def _stop(self, listener: Object) -> Result:
        """A stopped listener keeps its object and finalizer but runs nothing.

        Ports: AutoscalingListenerReconciler.Reconcile, the Stopped branch
        """
        done, delay = await self.cleanup.cleanup_resources(listener)
        if not done:
            return Result(requeue_after=delay)
        return Result()

    def _metrics_config(self) -> ListenerMetricsServerConfig | None:
        """Ports: AutoscalingListenerReconciler.Reconcile, the metrics-config block"""
        if self.listener_metrics_addr == "0":
            return None
        return ListenerMetricsServerConfig(addr=self.listener_metrics_addr, endpoint=self.listener_metrics_endpoint)
