"""Typed access: pydantic models on top of the JSON client, losing no field the model does not know.

A model names its kind with a ``GVK`` class attribute (a `GroupVersionKind`), or with defaults
on its ``api_version``/``kind`` fields. Models should use ``extra="allow"``: fields the model
does not declare then ride along in the model and go back to the server unchanged. Objects are
dumped with ``by_alias=True``, ``exclude_none=True`` and ``mode="json"``, the same rule the patch
helpers use for both sides of a diff.

Python only: controller-runtime's typed client decodes into Go structs through the scheme.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from reconcilekit.client.client import RestClient
from reconcilekit.client.interfaces import GroupVersionKind, Object, ObjectKey, Patch
from reconcilekit.client.options import PropagationPolicy
from reconcilekit.client.patch import to_json_tree

__all__ = ["TypedClient", "TypedList", "TypedWatchEvent", "from_object", "gvk_for", "to_object"]

_M = TypeVar("_M", bound=BaseModel)


def gvk_for(model: type[BaseModel]) -> GroupVersionKind:
    """The kind a model class stands for: its ``GVK`` attribute, else its apiVersion/kind defaults.

    Raises:
        TypeError: the class names no kind.
    """
    gvk = getattr(model, "GVK", None)
    if isinstance(gvk, GroupVersionKind):
        return gvk
    fields = model.model_fields
    api_version = next((f.default for n, f in fields.items() if n in ("api_version", "apiVersion")), None)
    kind = fields["kind"].default if "kind" in fields else None
    if isinstance(api_version, str) and api_version and isinstance(kind, str) and kind:
        return GroupVersionKind.from_api_version(api_version, kind)
    raise TypeError(f"{model.__name__} names no kind: give it a GVK class attribute")


def to_object(model: BaseModel) -> Object:
    """The model as a JSON object with ``apiVersion`` and ``kind`` set."""
    obj: Object = to_json_tree(model)
    gvk = gvk_for(type(model))
    obj.setdefault("apiVersion", gvk.api_version)
    obj.setdefault("kind", gvk.kind)
    return obj


def from_object(model: type[_M], obj: Mapping[str, Any]) -> _M:
    """Validate a JSON object into ``model``.

    Raises:
        pydantic.ValidationError: the object does not fit the model.
    """
    return model.model_validate(obj)


def _write_back(model: _M, obj: Object) -> _M:
    fresh = type(model).model_validate(obj)
    for name in type(model).model_fields:
        object.__setattr__(model, name, getattr(fresh, name))
    if model.__pydantic_extra__ is not None:
        model.__pydantic_extra__.clear()
        model.__pydantic_extra__.update(fresh.__pydantic_extra__ or {})
    object.__setattr__(model, "__pydantic_fields_set__", set(fresh.model_fields_set))
    return model


@dataclass(slots=True)
class TypedList(Generic[_M]):
    """One page of typed objects. Python only: the typed face of `ObjectList`."""

    items: list[_M]
    resource_version: str
    continue_token: str | None


@dataclass(frozen=True, slots=True)
class TypedWatchEvent(Generic[_M]):
    """A watch event with its object validated (``BOOKMARK`` objects may not validate: then raw)."""

    type: str
    object: _M | Object


class TypedClient:
    """Reads and writes pydantic models through a `RestClient`; writes refresh the model in place.

    Python only: typed access without a runtime scheme.
    """

    def __init__(self, client: RestClient) -> None:
        self.client = client
        """The JSON client underneath."""

    async def get(self, model: type[_M], key: ObjectKey, /) -> _M:
        """GET the ``model`` object named by ``key``. Raises NotFoundError like `RestClient.get`."""
        return model.model_validate(await self.client.get(gvk_for(model), key))

    async def list(
        self,
        model: type[_M],
        /,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str] | str | None = None,
        fields: Mapping[str, str] | str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> TypedList[_M]:
        """LIST ``model`` objects (one page when ``limit`` is given)."""
        page = await self.client.list(
            gvk_for(model),
            namespace=namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=continue_token,
        )
        return TypedList([model.model_validate(i) for i in page.items], page.resource_version, page.continue_token)

    async def watch(
        self,
        model: type[_M],
        /,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        read_idle_timeout: float | None = None,
    ) -> AsyncIterator[TypedWatchEvent[_M]]:
        """Watch ``model`` objects; see `RestClient.watch`."""
        async for event in self.client.watch(
            gvk_for(model),
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            read_idle_timeout=read_idle_timeout,
        ):
            obj: _M | Object = event.object if event.type == "BOOKMARK" else model.model_validate(event.object)
            yield TypedWatchEvent(event.type, obj)

    async def create(self, model: _M, /, *, dry_run: bool | None = None, field_owner: str | None = None) -> _M:
        """POST ``model``; it is refreshed from the server's answer and returned."""
        return _write_back(model, await self.client.create(to_object(model), dry_run=dry_run, field_owner=field_owner))

    async def update(self, model: _M, /, *, dry_run: bool | None = None, field_owner: str | None = None) -> _M:
        """PUT ``model`` whole; it is refreshed from the server's answer and returned."""
        return _write_back(model, await self.client.update(to_object(model), dry_run=dry_run, field_owner=field_owner))

    async def patch(
        self,
        model: _M,
        patch: Patch,
        /,
        *,
        dry_run: bool | None = None,
        field_owner: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
    ) -> _M:
        """PATCH ``model`` (or its ``subresource``) with ``patch``; refreshed in place and returned.

        Build ``patch`` from the model before changing it: ``merge_from(model)`` takes the snapshot.
        """
        obj = to_object(model)
        if subresource is None:
            out = await self.client.patch(obj, patch, dry_run=dry_run, field_owner=field_owner, force=force)
        else:
            out = await self.client.sub_resource(subresource).patch(
                obj, patch, dry_run=dry_run, field_owner=field_owner, force=force
            )
        return _write_back(model, out)

    async def update_status(self, model: _M, /, *, dry_run: bool | None = None) -> _M:
        """PUT ``model`` to its status subresource; refreshed in place and returned."""
        return _write_back(model, await self.client.status().update(to_object(model), dry_run=dry_run))

    async def delete(
        self,
        model: BaseModel,
        /,
        *,
        dry_run: bool | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> None:
        """DELETE ``model`` by its key."""
        await self.client.delete(
            to_object(model),
            dry_run=dry_run,
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
        )

    async def delete_all_of(
        self, model: type[BaseModel], /, *, namespace: str | None = None, labels: Mapping[str, str] | str | None = None
    ) -> None:
        """DELETE every ``model`` object matching ``labels`` in ``namespace``."""
        await self.client.delete_all_of(gvk_for(model), namespace=namespace, labels=labels)
