"""The cache's options and how per-kind settings inherit from the defaults.

Precedence for every setting: ``by_object[gvk]`` → the ``default_*`` value. ``None`` in a
`ByObject` field means "inherit".

Ports: sigs.k8s.io/controller-runtime/pkg/cache/cache.go (Options, ByObject, defaultOpts)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from reconcilekit.cache._internal.backoff import BackoffSettings
from reconcilekit.cache._internal.reflector import DEFAULT_READ_IDLE_TIMEOUT
from reconcilekit.cache._internal.shared_informer import Transform, strip_managed_fields
from reconcilekit.client.interfaces import GroupVersionKind

__all__ = ["CLUSTER_SCOPED_KINDS", "DEFAULT_SYNC_PERIOD", "ByObject", "Options", "ResolvedOptions", "resolve"]

DEFAULT_SYNC_PERIOD = 10 * 3600.0
"""Seconds between resyncs of cached objects to handlers (10 h, jittered ×[0.9, 1.1) per informer)."""

CLUSTER_SCOPED_KINDS = frozenset(
    {
        GroupVersionKind("", "v1", "Namespace"),
        GroupVersionKind("", "v1", "Node"),
        GroupVersionKind("", "v1", "PersistentVolume"),
        GroupVersionKind("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        GroupVersionKind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        GroupVersionKind("storage.k8s.io", "v1", "StorageClass"),
        GroupVersionKind("scheduling.k8s.io", "v1", "PriorityClass"),
        GroupVersionKind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
        GroupVersionKind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
    }
)
"""Built-in kinds that live outside namespaces; add your own with ``Options.cluster_scoped``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ByObject:
    """Settings for one kind; ``None`` inherits the cache default.

    Attributes:
        namespaces: cache only these namespaces; ``[]`` means all namespaces. Must be
            unset for cluster-scoped kinds.
        labels: label selector applied server-side (objects outside it are invisible).
        fields: field selector applied server-side.
        transform: applied to each incoming object before it is cached.
        unsafe_disable_deep_copy: reads return the cached objects themselves.
        enable_watch_bookmarks: ask the server for BOOKMARK events.
        sync_period: seconds between resyncs.

    Ports: cache.ByObject
    """

    namespaces: Sequence[str] | None = None
    labels: Mapping[str, str] | str | None = None
    fields: Mapping[str, str] | str | None = None
    transform: Transform | None = None
    unsafe_disable_deep_copy: bool | None = None
    enable_watch_bookmarks: bool | None = None
    sync_period: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """Options of the informer cache. Defaults are controller-runtime's.

    Attributes:
        default_namespaces: namespaces to cache; ``None`` means all.
        default_labels: label selector for every kind (server-side).
        default_fields: field selector for every kind (server-side).
        default_transform: applied to every incoming object; drops ``managedFields`` by
            default (they are often half an object's bytes). ``None`` keeps objects whole.
        default_unsafe_disable_deep_copy: reads return the cached objects themselves, which
            the caller must then never change (copy first). Saves a copy per read.
        default_enable_watch_bookmarks: ask the server for BOOKMARK events.
        sync_period: seconds between resyncs (10 h), jittered once per informer.
        by_object: per-kind settings.
        reader_fail_on_missing_informer: reads of a kind with no informer fail with
            `ResourceNotCachedError` instead of starting one.
        cluster_scoped: kinds that live outside namespaces (beyond `CLUSTER_SCOPED_KINDS`).
        page_size: LIST page size (500).
        min_watch_timeout: seconds; watches time out server-side after [this, 2 × this).
        watch_read_idle_timeout: seconds a watch may receive nothing (no event, no bookmark)
            before it is dropped and re-opened from the last resourceVersion (default 120 s,
            twice kube-apiserver's ~60 s bookmark interval); ``None`` turns the deadline off.
            Also sets the default threshold of `InformerCache.staleness_checker` (twice this).
            Python only (issue 16): a half-open connection otherwise goes unnoticed until
            the watch's ``timeoutSeconds`` (up to 10 minutes).
        backoff: the reflectors' retry delays (Python only: tests shorten them).
        freeze_listed_objects: during each informer's first LIST (the initial sync), after
            each page is decoded and once the store takes the complete list, move every
            object the garbage collector tracks into its permanent generation (`gc.freeze`),
            so that full collections stop traversing the cache.
            Python only: a cache of thousands of objects is hundreds of thousands of dicts
            and lists; the initial LIST grows the heap in steps that each trigger a full
            collection over everything decoded so far (8 full collections, 0.75 s of CPU, for
            5,000 pods and 5,000 custom resources). Cached objects are acyclic JSON, so
            reference counting still frees them when replaced or deleted. What a freeze
            keeps for good is every object alive at that moment that is, or later becomes,
            part of a reference cycle: a few per page at start-up, before any reconcile runs
            (an informer started later, by a first read of a new kind, freezes during its
            first LIST too, beside running reconciles); relists (after a 410) never freeze.
            Process-wide: leave it off in a process that creates cyclic garbage before its
            caches sync or relies on the cyclic collector for other data. Off by default.

    Ports: cache.Options
    """

    default_namespaces: Sequence[str] | None = None
    default_labels: Mapping[str, str] | str | None = None
    default_fields: Mapping[str, str] | str | None = None
    default_transform: Transform | None = strip_managed_fields
    default_unsafe_disable_deep_copy: bool = False
    default_enable_watch_bookmarks: bool = True
    sync_period: float = DEFAULT_SYNC_PERIOD
    by_object: Mapping[GroupVersionKind, ByObject] = field(default_factory=dict)
    reader_fail_on_missing_informer: bool = False
    cluster_scoped: frozenset[GroupVersionKind] = frozenset()
    page_size: int = 500
    min_watch_timeout: float = 300.0
    watch_read_idle_timeout: float | None = DEFAULT_READ_IDLE_TIMEOUT
    backoff: BackoffSettings | None = None
    freeze_listed_objects: bool = False

    def __post_init__(self) -> None:
        if self.watch_read_idle_timeout is not None and self.watch_read_idle_timeout <= 0:
            raise ValueError("watch_read_idle_timeout must be positive seconds or None")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedOptions:
    """One kind's effective settings. Python only: the outcome of the precedence rules."""

    namespaces: tuple[str, ...]
    """``("",)`` for all namespaces (and for cluster-scoped kinds)."""
    cluster_scoped: bool
    labels: Mapping[str, str] | str | None
    fields: Mapping[str, str] | str | None
    transform: Transform | None
    unsafe_disable_deep_copy: bool
    enable_watch_bookmarks: bool
    sync_period: float


def resolve(options: Options, gvk: GroupVersionKind) -> ResolvedOptions:
    """Apply the precedence rules for ``gvk``.

    Raises:
        ValueError: ``by_object`` names namespaces for a cluster-scoped kind.

    Ports: cache.go defaultOpts and newCache's per-namespace split
    """
    by = options.by_object.get(gvk, ByObject())
    cluster_scoped = gvk in CLUSTER_SCOPED_KINDS or gvk in options.cluster_scoped
    if cluster_scoped and by.namespaces:
        raise ValueError(f"type {gvk} is not namespaced, but its ByObject.namespaces is set")
    namespaces = by.namespaces if by.namespaces is not None else options.default_namespaces
    resolved_ns: tuple[str, ...] = ("",) if cluster_scoped or not namespaces else tuple(dict.fromkeys(namespaces))
    return ResolvedOptions(
        namespaces=resolved_ns,
        cluster_scoped=cluster_scoped,
        labels=by.labels if by.labels is not None else options.default_labels,
        fields=by.fields if by.fields is not None else options.default_fields,
        transform=by.transform if by.transform is not None else options.default_transform,
        unsafe_disable_deep_copy=(
            by.unsafe_disable_deep_copy
            if by.unsafe_disable_deep_copy is not None
            else options.default_unsafe_disable_deep_copy
        ),
        enable_watch_bookmarks=(
            by.enable_watch_bookmarks
            if by.enable_watch_bookmarks is not None
            else options.default_enable_watch_bookmarks
        ),
        sync_period=by.sync_period if by.sync_period is not None else options.sync_period,
    )
