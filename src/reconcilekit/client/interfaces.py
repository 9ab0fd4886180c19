"""The client's roles as Protocols, and the small value types they speak in.

Objects are plain JSON objects (``dict[str, Any]``) exactly as the API server sends
them, for any kind, so nothing is lost on a round trip and decoding stays cheap.
Typed access (pydantic models) sits on top of these roles; see `reconcilekit.client.typed`.

Every write decodes the server's answer back into the object it was given (its
``metadata.resourceVersion``, defaults and status as stored), as controller-runtime
does, and also returns it.

Ports: sigs.k8s.io/controller-runtime/pkg/client (interfaces.go, object.go, patch.go)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "Client",
    "GroupVersionKind",
    "GroupVersionResource",
    "Object",
    "ObjectKey",
    "ObjectList",
    "Patch",
    "Reader",
    "StatusClient",
    "SubResourceClient",
    "SubResourceClientConstructor",
    "WatchEvent",
    "WatchEventType",
    "WithWatch",
    "Writer",
    "object_key_from_object",
]

Object = dict[str, Any]
"""A Kubernetes object as decoded JSON: ``apiVersion``, ``kind``, ``metadata``, ..."""


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    """A kind in a group and version; ``group`` is "" for the core group.

    Ports: schema.GroupVersionKind
    """

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        """``group/version``, or just ``version`` for the core group ("v1")."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GroupVersionKind:
        """Split an ``apiVersion`` string ("apps/v1", "v1") and pair it with ``kind``."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> GroupVersionKind:
        """The kind of a JSON object, from its ``apiVersion`` and ``kind``.

        Raises:
            ValueError: the object lacks ``apiVersion`` or ``kind``.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            raise ValueError("object has no apiVersion and kind")
        return cls.from_api_version(api_version, kind)

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    """A resource (the URL plural) in a group and version. Ports: schema.GroupVersionResource"""

    group: str
    version: str
    resource: str


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """Names one object: ``namespace`` is "" for cluster-scoped kinds. Ports: types.NamespacedName"""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def object_key_from_object(obj: Mapping[str, Any]) -> ObjectKey:
    """The `ObjectKey` of a JSON object. Ports: client.ObjectKeyFromObject"""
    meta = obj.get("metadata") or {}
    return ObjectKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))


@dataclass(slots=True)
class ObjectList:
    """One page (or the whole) of a list answer.

    Attributes:
        items: the objects, each with ``apiVersion`` and ``kind`` filled in.
        resource_version: the list's ``metadata.resourceVersion`` (a watch starts here).
        continue_token: ``metadata.continue`` when more pages remain, else ``None``.

    Ports: the list types' ListMeta
    """

    items: list[Object] = field(default_factory=list)
    resource_version: str = ""
    continue_token: str | None = None


WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One event of a watch stream. For ``ERROR`` the object is the server's ``Status``.

    Ports: watch.Event
    """

    type: WatchEventType
    object: Object


class Patch(Protocol):
    """A patch: its content type and the exact bytes sent for an object.

    Ports: client.Patch
    """

    @property
    def type(self) -> str:
        """The Content-Type, e.g. ``application/merge-patch+json``."""
        ...

    def data(self, obj: Mapping[str, Any], /) -> bytes:
        """The request body for patching ``obj`` (the modified object)."""
        ...


class Reader(Protocol):
    """Reads objects, from an informer cache or from the API server.

    Ports: client.Reader
    """

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        """Return the object of kind ``gvk`` named by ``key``.

        A cache-backed reader returns a deep copy, which the caller may change.

        Raises:
            NotFoundError: no such object (or a cache's selectors hide it).
            NoKindMatchError: discovery knows no such kind.
        """
        ...

    async def list(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ObjectList:
        """Return the objects of kind ``gvk`` that match every selector.

        Args:
            gvk: the kind of the items (``kind`` without the ``List`` suffix).
            namespace: only this namespace; ``None`` means all namespaces.
            labels: a label selector, as a mapping of equalities or as selector text.
            fields: a field selector, likewise. A cache serves only indexed fields.
            limit: at most this many items in this page (API server reads only).
            continue_token: resume a limited list where the previous page stopped.

        Ports: client.Reader.List with InNamespace, MatchingLabels, MatchingFields,
        Limit and Continue
        """
        ...


class Writer(Protocol):
    """Writes objects; every method goes to the API server.

    Ports: client.Writer
    """

    async def create(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        """POST ``obj``; the stored object is written back into ``obj`` and returned.

        Raises:
            AlreadyExistsError: the name is taken.
            InvalidError: validation failed.
        """
        ...

    async def update(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        """PUT the whole ``obj`` (which must carry ``metadata.resourceVersion`` for custom kinds).

        Raises:
            ConflictError: the resourceVersion is stale.
        """
        ...

    async def patch(
        self,
        obj: Object,
        patch: Patch,
        /,
        *,
        dry_run: bool = False,
        field_owner: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """PATCH ``obj`` with ``patch.data(obj)`` sent as ``patch.type``.

        Raises:
            ConflictError: the patch carries a stale resourceVersion (optimistic lock).
        """
        ...

    async def delete(
        self,
        obj: Object,
        /,
        *,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Object | None:
        """DELETE ``obj`` (by its key) with a DeleteOptions body.

        Args:
            preconditions: ``{"uid": ..., "resourceVersion": ...}``, either or both.

        Returns:
            The server's answer when it is the object (its finalizers or grace period hold
            it: ``metadata.deletionTimestamp`` is set), else None. None is always allowed:
            a caller must not rely on the answer, and an implementation returning None
            (the older contract) still conforms.

        Raises:
            NotFoundError: already gone.
            ConflictError: a precondition failed.
        """
        ...

    async def delete_all_of(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        propagation_policy: Literal["Orphan", "Background", "Foreground"] | None = None,
    ) -> None:
        """DELETE the collection of ``gvk`` objects matching the selectors. Ports: client.Writer.DeleteAllOf"""
        ...


class SubResourceClient(Protocol):
    """Reads and writes one subresource ("status", "scale", "eviction", ...) of objects.

    Ports: client.SubResourceClient
    """

    async def get(self, obj: Object, /) -> Object:
        """GET the subresource of ``obj``."""
        ...

    async def create(self, obj: Object, body: Object, /, *, dry_run: bool = False) -> Object:
        """POST ``body`` to the subresource of ``obj`` (e.g. an Eviction)."""
        ...

    async def update(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        """PUT ``obj`` to its subresource; written back into ``obj`` and returned."""
        ...

    async def patch(
        self,
        obj: Object,
        patch: Patch,
        /,
        *,
        dry_run: bool = False,
        field_owner: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """PATCH the subresource of ``obj``; written back into ``obj`` and returned."""
        ...


class StatusClient(Protocol):
    """Ports: client.StatusClient"""

    def status(self) -> SubResourceClient:
        """The "status" subresource client."""
        ...


class SubResourceClientConstructor(Protocol):
    """Ports: client.SubResourceClientConstructor"""

    def sub_resource(self, name: str, /) -> SubResourceClient:
        """A client for the subresource ``name``."""
        ...


class Client(Reader, Writer, StatusClient, SubResourceClientConstructor, Protocol):
    """Reads, writes, and writes subresources: what a reconciler is given.

    Ports: client.Client
    """


@runtime_checkable
class WithWatch(Client, Protocol):
    """A client that can also watch: what informers list and watch through.

    Ports: client.WithWatch
    """

    def watch(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = True,
        read_idle_timeout: float | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Stream events of ``gvk`` objects from ``resource_version`` on.

        The iterator ends when the server closes the watch (after ``timeout_seconds``).
        An expired ``resource_version`` arrives as an ``ERROR`` event whose object is a
        410 ``Status``, or as a raised `GoneError`, and the stream ends. With
        ``read_idle_timeout`` (seconds) a stream that receives nothing for that long fails
        (a half-open connection); implementations that cannot go silent may ignore it.
        """
        ...
