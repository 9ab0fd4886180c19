"""The builder: wire a reconciler to the kinds it watches and register it with a manager.

Example::

    controller_managed_by(mgr) \\
        .for_(EphemeralRunnerSet, predicates=[GenerationChangedPredicate()]) \\
        .owns(EphemeralRunner) \\
        .with_options(Options(max_concurrent_reconciles=4)) \\
        .complete(EphemeralRunnerSetReconciler(client))

Kinds are `GroupVersionKind` values, or model classes with a ``GVK`` class
variable (and optionally ``NAMESPACED: ClassVar[bool]``, default True).

Ports: sigs.k8s.io/controller-runtime/pkg/builder (controller.go, options.go)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind
from reconcilekit.controller.controller import Controller, new_controller
from reconcilekit.controller.options import Options
from reconcilekit.handler.enqueue import EnqueueRequestForObject
from reconcilekit.handler.enqueue_owner import enqueue_request_for_owner
from reconcilekit.handler.eventhandler import EventHandler
from reconcilekit.manager.interfaces import Manager
from reconcilekit.predicate import Predicate
from reconcilekit.reconcile import Reconciler
from reconcilekit.source.source import Source, kind

__all__ = ["Builder", "KindLike", "controller_managed_by"]

KindLike = GroupVersionKind | type[Any]
"""A `GroupVersionKind`, or a model class whose ``GVK`` class variable is one."""


def _gvk_of(kind_like: KindLike) -> GroupVersionKind:
    """Python only: the kind of a `KindLike`.

    Raises:
        TypeError: ``kind_like`` is neither a GroupVersionKind nor a class with a GVK.
    """
    if isinstance(kind_like, GroupVersionKind):
        return kind_like
    gvk = getattr(kind_like, "GVK", None)
    if isinstance(gvk, GroupVersionKind):
        return gvk
    raise TypeError(f"{kind_like!r} is neither a GroupVersionKind nor a class with a GVK class variable")


def _namespaced(kind_like: KindLike) -> bool:
    """Python only: whether a kind is namespaced; a model may say so in ``NAMESPACED``, else True."""
    return bool(getattr(kind_like, "NAMESPACED", True))


@dataclass(frozen=True, slots=True)
class _Watch:
    kind: KindLike
    handler: EventHandler | None
    predicates: tuple[Predicate, ...]
    match_every_owner: bool = False


class Builder:
    """Collects watches and options; `complete` builds the controller and adds it to the manager.

    Every method but `build` and `complete` returns the builder itself. Mistakes
    are reported by `build`, as controller-runtime does, with a `ValueError`.

    Ports: builder.TypedBuilder
    """

    def __init__(self, mgr: Manager) -> None:
        self._mgr = mgr
        self._for: _Watch | None = None
        self._owns: list[_Watch] = []
        self._watches: list[_Watch] = []
        self._raw_sources: list[Source] = []
        self._global_predicates: list[Predicate] = []
        self._options = Options()
        self._name = ""
        self._errors: list[str] = []
        self._built = False

    def for_(self, kind_like: KindLike, /, *, predicates: Sequence[Predicate] = ()) -> Builder:
        """Reconcile objects of this kind: each event enqueues the object's own request.

        Call it at most once (a second call fails the build).

        Ports: Builder.For (with WithPredicates)
        """
        if self._for is not None:
            self._errors.append(
                "for_() should only be called once, could not assign multiple objects for reconciliation"
            )
            return self
        _gvk_of(kind_like)
        self._for = _Watch(kind_like, None, tuple(predicates))
        return self

    def owns(
        self,
        kind_like: KindLike,
        /,
        *,
        predicates: Sequence[Predicate] = (),
        match_every_owner: bool = False,
    ) -> Builder:
        """Watch objects of this kind and enqueue their owner of the `for_` kind.

        Args:
            predicates: Filters for this watch, after `with_event_filter`'s.
            match_every_owner: Enqueue every owner of the `for_` kind, not just the
                controller reference.

        Ports: Builder.Owns (with WithPredicates and MatchEveryOwner)
        """
        _gvk_of(kind_like)
        self._owns.append(_Watch(kind_like, None, tuple(predicates), match_every_owner))
        return self

    def watches(
        self, kind_like: KindLike, handler: EventHandler, /, *, predicates: Sequence[Predicate] = ()
    ) -> Builder:
        """Watch objects of this kind and map their events with ``handler``.

        Ports: Builder.Watches (with WithPredicates)
        """
        _gvk_of(kind_like)
        self._watches.append(_Watch(kind_like, handler, tuple(predicates)))
        return self

    def watches_raw_source(self, source: Source, /) -> Builder:
        """Add a source as it is; `with_event_filter` does not apply to it. Ports: Builder.WatchesRawSource"""
        self._raw_sources.append(source)
        return self

    def with_event_filter(self, predicate: Predicate, /) -> Builder:
        """Run ``predicate`` first on every `for_`, `owns` and `watches` event. Ports: Builder.WithEventFilter"""
        self._global_predicates.append(predicate)
        return self

    def with_options(self, options: Options, /) -> Builder:
        """Use these controller options. Ports: Builder.WithOptions"""
        self._options = options
        return self

    def named(self, name: str, /) -> Builder:
        """Name the controller (default: the `for_` kind, lower-cased). Ports: Builder.Named"""
        self._name = name
        return self

    def build(self, reconciler: Reconciler, /) -> Controller:
        """Build the controller, register it with the manager (``mgr.add``) and return it.

        Raises:
            ValueError: ``for_`` twice, ``owns`` without ``for_``, no watches at
                all, neither ``for_`` nor ``named``, no reconciler, a second build,
                or a controller name in use.
            TypeError: a kind that is neither a GroupVersionKind nor a model with a GVK.

        Ports: Builder.Build
        """
        if self._built:
            raise ValueError("this builder has made its controller already: a builder takes one reconciler")
        if reconciler is None:
            raise ValueError("must provide a non-nil Reconciler")
        if self._mgr is None:
            raise ValueError("must provide a non-nil Manager")
        if self._errors:
            raise ValueError("; ".join(self._errors))
        if self._owns and self._for is None:
            raise ValueError("owns() can only be used together with for_()")
        if self._for is None and not self._owns and not self._watches and not self._raw_sources:
            raise ValueError(
                "there are no watches configured, controller will never get triggered. "
                "Use for_(), owns(), watches() or watches_raw_source() to set them up"
            )
        name = self._controller_name()
        options = self._options
        if self._for is not None:
            gvk = _gvk_of(self._for.kind)
            log_values = {"controller_group": gvk.group, "controller_kind": gvk.kind, **(options.log_values or {})}
            options = dataclasses.replace(options, log_values=log_values)
        controller = new_controller(name, reconciler, options)
        for source in self._sources(options):
            controller.watch(source)
        self._built = True
        self._mgr.add(controller)
        return controller

    def complete(self, reconciler: Reconciler, /) -> None:
        """`build`, keeping nothing. Ports: Builder.Complete"""
        self.build(reconciler)

    def _controller_name(self) -> str:
        """Ports: Builder.getControllerName"""
        if self._name:
            return self._name
        if self._for is None:
            raise ValueError("one of for_() or named() must be called")
        return _gvk_of(self._for.kind).kind.lower()

    def _sources(self, options: Options) -> list[Source]:
        """One Kind source per watch, predicates = event filters then the watch's own.

        Ports: Builder.doWatch
        """
        cache = self._mgr.get_cache()
        first = tuple(self._global_predicates)
        sources: list[Source] = []
        if self._for is not None:
            sources.append(
                kind(
                    cache,
                    _gvk_of(self._for.kind),
                    EnqueueRequestForObject(),
                    *first,
                    *self._for.predicates,
                    clock=options.clock,
                )
            )
            owner = _gvk_of(self._for.kind)
            owner_namespaced = _namespaced(self._for.kind)
            for owned in self._owns:
                handler = enqueue_request_for_owner(
                    owner, only_controller=not owned.match_every_owner, namespaced=owner_namespaced
                )
                sources.append(
                    kind(cache, _gvk_of(owned.kind), handler, *first, *owned.predicates, clock=options.clock)
                )
        for watch in self._watches:
            assert watch.handler is not None
            sources.append(
                kind(cache, _gvk_of(watch.kind), watch.handler, *first, *watch.predicates, clock=options.clock)
            )
        sources.extend(self._raw_sources)
        return sources


def controller_managed_by(mgr: Manager, /) -> Builder:
    """Start building a controller that ``mgr`` will run. Ports: builder.ControllerManagedBy"""
    return Builder(mgr)
