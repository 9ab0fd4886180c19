"""`new_client()`: a client that reads and writes plain JSON objects straight to the API server.

Any kind works, resolved through discovery (`RESTMapper`). Every write decodes the server's
answer back into the object given and returns it. Reads always go to the server (quorum
reads), so the same client serves as the uncached API reader next to a cache.

Options layer as in controller-runtime: a client built with ``field_owner`` or ``dry_run``
applies them to every write, and a per-call keyword wins over the client's default.

Ports: sigs.k8s.io/controller-runtime/pkg/client (client.go, typed_client.go,
unstructured_client.go, watch.go, options.go, dryrun.go, fieldowner.go)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Self

import orjson

from reconcilekit._internal import json as _json
from reconcilekit.client._rest import RestTransport
from reconcilekit.client.apiutil import RESTMapper, RESTMapping, group_version_path
from reconcilekit.client.interfaces import (
    GroupVersionKind,
    Object,
    ObjectKey,
    ObjectList,
    Patch,
    WatchEvent,
    WithWatch,
    object_key_from_object,
)
from reconcilekit.client.metrics import RequestCounts, RequestKey, register_metrics
from reconcilekit.client.options import PropagationPolicy, check_field_owner, delete_options, selector_text
from reconcilekit.client.patch import APPLY_PATCH, ApplyPatch
from reconcilekit.client.subresource import SubResourceRestClient
from reconcilekit.config import RestConfig
from reconcilekit.errors import from_status

__all__ = ["DEFAULT_TIMEOUT", "RestClient", "SubResourceRestClient", "new_client", "selector_text"]

DEFAULT_TIMEOUT = 30.0
"""Seconds a request may take before it fails with TransportError (watches: see `RestClient.watch`)."""


def _replace(obj: Object, new: Object) -> Object:
    obj.clear()
    obj.update(new)
    return obj


def _deleted_object(raw: bytes) -> Object | None:
    """The object a DELETE answered with; None for a ``Status`` or an empty body."""
    if not raw:
        return None
    answer = _json.loads(raw)
    if not isinstance(answer, dict) or answer.get("kind") == "Status":
        return None
    return answer


class RestClient:
    """A `WithWatch` client over plain dicts, talking to one API server.

    Build it with `new_client`; close it with `close()` or ``async with``.

    Ports: client.client (client.New)
    """

    def __init__(
        self,
        transport: RestTransport,
        mapper: RESTMapper,
        *,
        field_owner: str | None = None,
        dry_run: bool = False,
        owns_transport: bool = True,
    ) -> None:
        check_field_owner(field_owner)
        self._transport = transport
        self._mapper = mapper
        self._owns_transport = owns_transport
        self.field_owner = field_owner
        """The field manager of every write that names none itself."""
        self.dry_run = dry_run
        """Whether every write is a dry run (validated and admitted, never stored)."""

    # -- life cycle -------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the HTTP session (a client from `with_options` leaves it to its parent).

        Python only: Go's clients need no closing.
        """
        if self._owns_transport:
            await self._transport.close()

    def with_options(self, *, field_owner: str | None = None, dry_run: bool | None = None) -> RestClient:
        """A client sharing this one's session, mapper and request counts, with other write defaults.

        ``None`` keeps this client's value. The parent still owns (and closes) the session.

        Ports: client.WithFieldOwner, client.NewDryRunClient
        """
        return RestClient(
            self._transport,
            self._mapper,
            field_owner=field_owner if field_owner is not None else self.field_owner,
            dry_run=dry_run if dry_run is not None else self.dry_run,
            owns_transport=False,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- introspection ----------------------------------------------------------------------

    @property
    def rest_mapper(self) -> RESTMapper:
        """The discovery-backed mapper. Ports: client.Client.RESTMapper"""
        return self._mapper

    @property
    def config(self) -> RestConfig:
        """The REST config the client was built from."""
        return self._transport.config

    @property
    def timeout(self) -> float:
        """Seconds each request may take."""
        return self._transport.timeout

    async def is_object_namespaced(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj``'s kind is namespaced. Ports: client.Client.IsObjectNamespaced"""
        return await self._mapper.is_namespaced(GroupVersionKind.of(obj))

    def request_counts(self) -> dict[RequestKey, int]:
        """Requests this client made, by (verb, resource, code), since it was built or reset.

        Python only: the in-process view of ``rest_client_requests_total``.
        """
        return self._transport.counts.snapshot()

    @property
    def counts(self) -> RequestCounts:
        """The live tally behind `request_counts` (``by_verb()``, ``total()``, ``reset()``)."""
        return self._transport.counts

    def reset_request_counts(self) -> dict[RequestKey, int]:
        """Zero the tally; return the counts before."""
        return self._transport.counts.reset()

    def api_reader(self) -> RestClient:
        """This client as the uncached reader: its reads always go to the server.

        Ports: cluster.Cluster.GetAPIReader
        """
        return self

    # -- paths -------------------------------------------------------------------------------

    @staticmethod
    def _path(mapping: RESTMapping, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        res = mapping.resource
        parts = [group_version_path(res.group, res.version)]
        if mapping.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(res.resource)
        if name is not None:
            if not name:
                raise ValueError(f"a {mapping.gvk.kind} needs metadata.name")
            parts.append(name)
        if sub:
            parts.append(sub)
        return "/".join(parts)

    async def _object_path(self, obj: Mapping[str, Any], sub: str | None = None) -> tuple[RESTMapping, str, str]:
        mapping = await self._mapper.rest_mapping(GroupVersionKind.of(obj))
        key = object_key_from_object(obj)
        if mapping.namespaced and not key.namespace:
            raise ValueError(f"the {mapping.gvk.kind} {key.name!r} is namespaced and needs metadata.namespace")
        resource = mapping.resource.resource + (f"/{sub}" if sub else "")
        return mapping, self._path(mapping, key.namespace, key.name, sub), resource

    def _write_query(
        self, dry_run: bool | None, field_owner: str | None, *, force: bool | None = None
    ) -> list[tuple[str, str]]:
        query: list[tuple[str, str]] = []
        if dry_run if dry_run is not None else self.dry_run:
            query.append(("dryRun", "All"))
        owner = field_owner if field_owner is not None else self.field_owner
        check_field_owner(owner)
        if owner:
            query.append(("fieldManager", owner))
        if force:
            query.append(("force", "true"))
        return query

    # -- reads -------------------------------------------------------------------------------

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> Object:
        """GET one object from the server (a quorum read).

        Raises:
            NotFoundError: no such object.
            NoKindMatchError: discovery knows no such kind.
            ValueError: ``key`` lacks a name, or a namespace for a namespaced kind.

        Ports: client.Reader.Get
        """
        mapping = await self._mapper.rest_mapping(gvk)
        if mapping.namespaced and not key.namespace:
            raise ValueError(f"the {gvk.kind} {key.name!r} is namespaced and needs a namespace")
        raw = await self._transport.request(
            "GET", self._path(mapping, key.namespace, key.name), verb="get", resource=mapping.resource.resource
        )
        obj: Object = _json.loads(raw)
        return obj

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
        resource_version: str | None = None,
    ) -> ObjectList:
        """LIST one page of ``gvk`` objects; each item gets ``apiVersion`` and ``kind`` filled in.

        Args:
            limit: page size; ``None`` asks for everything at once. Pass the returned
                ``continue_token`` back to get the next page (`list_all` does the loop).
            resource_version: ``"0"`` lets the server answer from its watch cache; ``None``
                asks for a quorum read.

        Raises:
            GoneError: the continue token expired (410 Expired); start again without it.

        Ports: client.Reader.List
        """
        mapping = await self._mapper.rest_mapping(gvk)
        query: list[tuple[str, str]] = []
        if (text := selector_text(labels)) is not None:
            query.append(("labelSelector", text))
        if (text := selector_text(fields)) is not None:
            query.append(("fieldSelector", text))
        if limit is not None:
            if limit <= 0:
                raise ValueError("limit must be positive")
            query.append(("limit", str(limit)))
        if continue_token:
            query.append(("continue", continue_token))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        raw = await self._transport.request(
            "GET", self._path(mapping, namespace), verb="list", resource=mapping.resource.resource, query=query
        )
        doc = _json.loads(raw)
        items: list[Object] = doc.get("items") or []
        api_version, kind = gvk.api_version, gvk.kind
        for item in items:
            item["apiVersion"] = api_version
            item["kind"] = kind
        meta = doc.get("metadata") or {}
        return ObjectList(items, str(meta.get("resourceVersion") or ""), meta.get("continue") or None)

    async def list_all(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        page_size: int = 500,
    ) -> ObjectList:
        """Every ``gvk`` object, fetched in pages of ``page_size``; the list's RV is the first page's.

        Raises:
            GoneError: a continue token expired mid-way (the caller may start again).

        Ports: client-go tools/pager.ListPager.List (without its fallback to a full list)
        """
        out = ObjectList()
        token: str | None = None
        while True:
            page = await self.list(
                gvk, namespace=namespace, labels=labels, fields=fields, limit=page_size, continue_token=token
            )
            out.items.extend(page.items)
            out.resource_version = out.resource_version or page.resource_version
            token = page.continue_token
            if not token:
                return out

    async def watch(
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
        """Stream events of ``gvk`` objects from ``resource_version`` on, until the server ends the watch.

        The server ends it after ``timeout_seconds``; the client then allows that plus its own
        request timeout. With ``timeout_seconds=None`` only connecting is bounded. Objects get
        ``apiVersion`` and ``kind`` when the server left them out (bookmarks).

        ``read_idle_timeout``: seconds the stream may go without a single byte (no event, no
        bookmark) before it fails with `TransportError` (aiohttp's ``sock_read``; it also
        bounds connecting and waiting for the answer's headers). Without it a half-open
        connection (a peer or NAT entry gone without a FIN) waits out ``timeout_seconds``.
        With bookmarks on, kube-apiserver sends one about every 60 s, so twice that is safe.

        Close the iterator early with ``aclose()`` (or ``contextlib.aclosing``).

        Raises:
            GoneError: an ``ERROR`` event with 410 (resourceVersion too old); start with a new list.
            APIStatusError: any other ``ERROR`` event, or the server refused the watch.
            TransportError: the connection failed or broke.

        Ports: client.WithWatch.Watch
        """
        mapping = await self._mapper.rest_mapping(gvk)
        query: list[tuple[str, str]] = [("watch", "true")]
        if (text := selector_text(labels)) is not None:
            query.append(("labelSelector", text))
        if (text := selector_text(fields)) is not None:
            query.append(("fieldSelector", text))
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if timeout_seconds is not None:
            if timeout_seconds <= 0:
                raise ValueError("timeout_seconds must be positive")
            query.append(("timeoutSeconds", str(timeout_seconds)))
        if allow_watch_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if read_idle_timeout is not None and read_idle_timeout <= 0:
            raise ValueError("read_idle_timeout must be positive")
        total = timeout_seconds + self.timeout if timeout_seconds is not None else None
        api_version, kind = gvk.api_version, gvk.kind
        async for line in self._transport.stream_lines(
            self._path(mapping, namespace),
            verb="watch",
            resource=mapping.resource.resource,
            query=query,
            seconds=total,
            idle=read_idle_timeout,
        ):
            try:
                event = _json.loads(line)
                etype, obj = event["type"], event["object"]
            except (orjson.JSONDecodeError, KeyError, TypeError) as err:
                raise ValueError(f"the watch of {gvk} sent a line that is not an event") from err
            if etype == "ERROR":
                raise from_status(int(obj.get("code") or 500), obj)
            obj.setdefault("apiVersion", api_version)
            obj.setdefault("kind", kind)
            yield WatchEvent(etype, obj)

    # -- writes ------------------------------------------------------------------------------

    async def create(self, obj: Object, /, *, dry_run: bool | None = None, field_owner: str | None = None) -> Object:
        """POST ``obj``; the stored object is written back into ``obj`` and returned.

        Raises:
            AlreadyExistsError: the name is taken.
            InvalidError: validation failed.

        Ports: client.Writer.Create
        """
        mapping = await self._mapper.rest_mapping(GroupVersionKind.of(obj))
        namespace = object_key_from_object(obj).namespace
        if mapping.namespaced and not namespace:
            raise ValueError(f"a {mapping.gvk.kind} is namespaced and needs metadata.namespace")
        raw = await self._transport.request(
            "POST",
            self._path(mapping, namespace),
            verb="create",
            resource=mapping.resource.resource,
            query=self._write_query(dry_run, field_owner),
            body=_json.dumps(obj),
            content_type="application/json",
        )
        return _replace(obj, _json.loads(raw))

    async def update(self, obj: Object, /, *, dry_run: bool | None = None, field_owner: str | None = None) -> Object:
        """PUT the whole ``obj``; written back into ``obj`` and returned.

        Custom kinds need ``metadata.resourceVersion`` (without: 422 Invalid). Fields missing
        from ``obj`` are removed on the server.

        Raises:
            ConflictError: the resourceVersion is stale.

        Ports: client.Writer.Update
        """
        return await self._put(obj, None, dry_run, field_owner)

    async def _put(self, obj: Object, sub: str | None, dry_run: bool | None, field_owner: str | None) -> Object:
        _, path, resource = await self._object_path(obj, sub)
        raw = await self._transport.request(
            "PUT",
            path,
            verb="update",
            resource=resource,
            query=self._write_query(dry_run, field_owner),
            body=_json.dumps(obj),
            content_type="application/json",
        )
        return _replace(obj, _json.loads(raw))

    async def patch(
        self,
        obj: Object,
        patch: Patch,
        /,
        *,
        dry_run: bool | None = None,
        field_owner: str | None = None,
        force: bool | None = None,
    ) -> Object:
        """PATCH ``obj`` with ``patch.data(obj)`` as ``patch.type``; written back into ``obj``.

        Args:
            force: apply patches only: take over other managers' fields. ``None`` uses the
                patch's own ``force`` (`ApplyPatch`), else sends none.

        Raises:
            ConflictError: the patch carries a stale resourceVersion, or an apply conflicts.
            ValueError: ``force`` on a patch that is not an apply, or an apply without a field owner.

        Ports: client.Writer.Patch
        """
        return await self._patch(obj, patch, None, dry_run, field_owner, force)

    async def _patch(
        self,
        obj: Object,
        patch: Patch,
        sub: str | None,
        dry_run: bool | None,
        field_owner: str | None,
        force: bool | None,
    ) -> Object:
        _, path, resource = await self._object_path(obj, sub)
        is_apply = patch.type == APPLY_PATCH
        if force is None and isinstance(patch, ApplyPatch):
            force = patch.force
        if force is not None and not is_apply:
            raise ValueError("force is only allowed on apply patches")
        if is_apply and not (field_owner or self.field_owner):
            raise ValueError("an apply patch needs a field owner")
        raw = await self._transport.request(
            "PATCH",
            path,
            verb="patch",
            resource=resource,
            query=self._write_query(dry_run, field_owner, force=force if is_apply else None),
            body=patch.data(obj),
            content_type=patch.type,
        )
        return _replace(obj, _json.loads(raw))

    async def apply(
        self, obj: Object, /, *, field_owner: str | None = None, force: bool = True, dry_run: bool | None = None
    ) -> Object:
        """Server-side apply ``obj`` (the fields the caller owns); the result is written back into ``obj``.

        Ports: client.Client.Apply with ForceOwnership
        """
        return await self.patch(obj, ApplyPatch(force=force), dry_run=dry_run, field_owner=field_owner)

    async def delete(
        self,
        obj: Object,
        /,
        *,
        dry_run: bool | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Object | None:
        """DELETE ``obj`` by its key, with a DeleteOptions body (dry run included).

        Args:
            preconditions: ``{"uid": ..., "resourceVersion": ...}``, either or both.

        Returns:
            The server's answer when it is the object: one whose finalizers or grace period
            hold it (``metadata.deletionTimestamp`` set), or its last state. None when the
            server answered with a ``Status``. ``obj`` itself is left as it was.

        Raises:
            NotFoundError: already gone.
            ConflictError: a precondition failed.

        Ports: client.Writer.Delete
        Differs: the answer is returned, not dropped (a finalizer can go on without waiting for the watch).
        """
        _, path, resource = await self._object_path(obj)
        dry = dry_run if dry_run is not None else self.dry_run
        raw = await self._transport.request(
            "DELETE",
            path,
            verb="delete",
            resource=resource,
            body=delete_options(grace_period_seconds, propagation_policy, preconditions, dry_run=dry),
            content_type="application/json",
        )
        return _deleted_object(raw)

    async def delete_all_of(
        self,
        gvk: GroupVersionKind,
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        dry_run: bool | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: PropagationPolicy | None = None,
    ) -> None:
        """DELETE the collection of ``gvk`` objects that match the selectors.

        Ports: client.Writer.DeleteAllOf
        """
        mapping = await self._mapper.rest_mapping(gvk)
        dry = dry_run if dry_run is not None else self.dry_run
        query: list[tuple[str, str]] = []
        if (text := selector_text(labels)) is not None:
            query.append(("labelSelector", text))
        if (text := selector_text(fields)) is not None:
            query.append(("fieldSelector", text))
        await self._transport.request(
            "DELETE",
            self._path(mapping, namespace),
            verb="deletecollection",
            resource=mapping.resource.resource,
            query=query,
            body=delete_options(grace_period_seconds, propagation_policy, None, dry_run=dry),
            content_type="application/json",
        )

    # -- subresources ------------------------------------------------------------------------

    def status(self) -> SubResourceRestClient:
        """The client of the "status" subresource. Ports: client.StatusClient.Status"""
        return SubResourceRestClient(self, "status")

    def sub_resource(self, name: str, /) -> SubResourceRestClient:
        """The client of the subresource ``name`` ("scale", "eviction", ...). Ports: client.SubResource"""
        if not name or "/" in name:
            raise ValueError(f"not a subresource name: {name!r}")
        return SubResourceRestClient(self, name)


def new_client(
    config: RestConfig,
    *,
    field_owner: str | None = None,
    dry_run: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    mapper: RESTMapper | None = None,
    register_prometheus: bool = True,
) -> RestClient:
    """A client over plain JSON objects for the server in ``config``.

    Args:
        config: where the server is and how to authenticate (`reconcilekit.config.load_rest_config`).
        field_owner: the field manager of every write that names none (≤ 128 printable characters).
        dry_run: make every write a dry run.
        timeout: seconds each request may take (watches: their ``timeout_seconds`` plus this).
        mapper: a REST mapper to share between clients; ``None`` builds one for this client.
        register_prometheus: expose ``rest_client_requests_total`` in prometheus_client's default
            registry (`reconcilekit.client.metrics.register_metrics` picks another).

    Raises:
        ValueError: a bad field owner or timeout.
        OSError, ssl.SSLError: the TLS files in ``config`` cannot be read.

    Ports: client.New
    """
    if register_prometheus:
        register_metrics()
    transport = RestTransport(config, timeout=timeout, counts=RequestCounts())

    async def fetch(path: str) -> bytes:
        return await transport.request("GET", path, verb="discovery", resource="")

    return RestClient(transport, mapper or RESTMapper(fetch), field_owner=field_owner, dry_run=dry_run)


def _conforms(c: RestClient) -> WithWatch:  # pragma: no cover - checked by mypy, never called
    """Python only: mypy proves RestClient satisfies WithWatch (CR's ``var _ WithWatch = &client{}``)."""
    return c
