"""reconcilekit: controller-runtime's design for asyncio on kubernetes-asyncio.

Packages mirror controller-runtime's: `client`, `cache`, `workqueue`, `controller`,
`handler`, `predicate`, `manager`, `leaderelection`, `controllerutil`, `retry`,
`envtest`, `metrics`, and `testing` for fault injection.

This module is the front door: the names most operators need, importable from the top::

    import reconcilekit as rk

    class Reconciler:
        def __init__(self, client: rk.Client) -> None:
            self.client = client

        async def reconcile(self, request: rk.Request, /) -> rk.Result:
            try:
                cm = await self.client.get(CONFIGMAP, request.key)
            except rk.NotFoundError:
                return rk.Result()
            ...

    async def main() -> None:
        manager = rk.new_manager(await rk.load_rest_config(), rk.Options())
        rk.controller_managed_by(manager).for_(CONFIGMAP).complete(Reconciler(manager.get_client()))
        await rk.run_until_signalled(manager)

Each name is the object of the public module listed in ``_EXPORTS``; everything else,
and anything ambiguous at the top (``handler.Funcs`` and ``predicate.Funcs``, the
``Options`` of `controller` and `cache`), is imported from its module. Names load on
first use, so ``import reconcilekit`` (and every ``import reconcilekit.x``) stays cheap.

Ports: sigs.k8s.io/controller-runtime (alias.go)
"""

TYPE_CHECKING = False  # typing's, without importing typing (~20 ms cold); mypy reads it as True
if TYPE_CHECKING:
    from reconcilekit.builder import Builder, controller_managed_by
    from reconcilekit.client import (
        Client,
        GroupVersionKind,
        Object,
        ObjectKey,
        Patch,
        Reader,
        merge_from,
        merge_from_with_optimistic_lock,
        new_client,
    )
    from reconcilekit.config import ConfigError, RestConfig, load_rest_config
    from reconcilekit.controllerutil import (
        OperationResult,
        add_finalizer,
        contains_finalizer,
        create_or_patch,
        create_or_update,
        remove_finalizer,
        set_controller_reference,
        set_owner_reference,
    )
    from reconcilekit.errors import (
        AlreadyExistsError,
        APIStatusError,
        ConflictError,
        NotFoundError,
        TerminalError,
        ignore_already_exists,
        ignore_not_found,
        is_already_exists,
        is_conflict,
        is_not_found,
    )
    from reconcilekit.handler import (
        EnqueueRequestForObject,
        EventHandler,
        enqueue_request_for_owner,
        enqueue_requests_from_map_func,
    )
    from reconcilekit.healthz import ping
    from reconcilekit.manager import Manager, Options, Runnable, new_manager, run_until_signalled, setup_signal_handler
    from reconcilekit.predicate import (
        AnnotationChangedPredicate,
        GenerationChangedPredicate,
        LabelChangedPredicate,
        Predicate,
        ResourceVersionChangedPredicate,
    )
    from reconcilekit.reconcile import Reconciler, Request, Result
    from reconcilekit.retry import DEFAULT_RETRY, retry_on_conflict

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "reconcilekit.reconcile": ("Reconciler", "Request", "Result"),
    "reconcilekit.builder": ("Builder", "controller_managed_by"),
    "reconcilekit.manager": (
        "Manager",
        "Options",
        "Runnable",
        "new_manager",
        "run_until_signalled",
        "setup_signal_handler",
    ),
    "reconcilekit.config": ("ConfigError", "RestConfig", "load_rest_config"),
    "reconcilekit.client": (
        "Client",
        "GroupVersionKind",
        "Object",
        "ObjectKey",
        "Patch",
        "Reader",
        "merge_from",
        "merge_from_with_optimistic_lock",
        "new_client",
    ),
    "reconcilekit.retry": ("DEFAULT_RETRY", "retry_on_conflict"),
    "reconcilekit.controllerutil": (
        "OperationResult",
        "add_finalizer",
        "contains_finalizer",
        "create_or_patch",
        "create_or_update",
        "remove_finalizer",
        "set_controller_reference",
        "set_owner_reference",
    ),
    "reconcilekit.errors": (
        "APIStatusError",
        "AlreadyExistsError",
        "ConflictError",
        "NotFoundError",
        "TerminalError",
        "ignore_already_exists",
        "ignore_not_found",
        "is_already_exists",
        "is_conflict",
        "is_not_found",
    ),
    "reconcilekit.predicate": (
        "AnnotationChangedPredicate",
        "GenerationChangedPredicate",
        "LabelChangedPredicate",
        "Predicate",
        "ResourceVersionChangedPredicate",
    ),
    "reconcilekit.handler": (
        "EnqueueRequestForObject",
        "EventHandler",
        "enqueue_request_for_owner",
        "enqueue_requests_from_map_func",
    ),
    "reconcilekit.healthz": ("ping",),
}
"""Python only: the public module each top-level name is taken from."""

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "DEFAULT_RETRY",
    "APIStatusError",
    "AlreadyExistsError",
    "AnnotationChangedPredicate",
    "Builder",
    "Client",
    "ConfigError",
    "ConflictError",
    "EnqueueRequestForObject",
    "EventHandler",
    "GenerationChangedPredicate",
    "GroupVersionKind",
    "LabelChangedPredicate",
    "Manager",
    "NotFoundError",
    "Object",
    "ObjectKey",
    "OperationResult",
    "Options",
    "Patch",
    "Predicate",
    "Reader",
    "Reconciler",
    "Request",
    "ResourceVersionChangedPredicate",
    "RestConfig",
    "Result",
    "Runnable",
    "TerminalError",
    "add_finalizer",
    "contains_finalizer",
    "controller_managed_by",
    "create_or_patch",
    "create_or_update",
    "enqueue_request_for_owner",
    "enqueue_requests_from_map_func",
    "ignore_already_exists",
    "ignore_not_found",
    "is_already_exists",
    "is_conflict",
    "is_not_found",
    "load_rest_config",
    "merge_from",
    "merge_from_with_optimistic_lock",
    "new_client",
    "new_manager",
    "ping",
    "remove_finalizer",
    "retry_on_conflict",
    "run_until_signalled",
    "set_controller_reference",
    "set_owner_reference",
    "setup_signal_handler",
]


def __getattr__(name: str) -> object:
    """Python only: load a front-door name from its module on first use (PEP 562)."""
    import importlib  # here, not at the top: importlib's package costs an import of its own

    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Python only: the module's own names and the front door's, loaded or not."""
    return sorted({*globals(), *__all__})
