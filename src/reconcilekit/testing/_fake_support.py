"""What `FakeClient` is built from: a merge patch, field selectors, the subresource client.

Python only: controller-runtime's fake client gets these from apimachinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from reconcilekit._internal.selectors import field_value
from reconcilekit.client.interfaces import GroupVersionKind, Object, Patch, object_key_from_object
from reconcilekit.errors import NotFoundError

if TYPE_CHECKING:
    from reconcilekit.testing.fake_client import FakeClient

__all__ = ["SubResource", "field_terms", "fields_match", "merge_patch", "now"]


def now() -> str:
    """The time now as the API server writes timestamps (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch. Python only."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def field_terms(selector: Mapping[str, str] | str | None) -> list[tuple[str, str, bool]]:
    """``(path, value, negated)`` terms of a field selector."""
    if selector is None:
        return []
    if isinstance(selector, Mapping):
        return [(k, v, False) for k, v in selector.items()]
    terms = []
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        if "!=" in term:
            f, _, v = term.partition("!=")
            terms.append((f.strip(), v.strip(), True))
        else:
            f, _, v = term.partition("==") if "==" in term else term.partition("=")
            terms.append((f.strip(), v.strip(), False))
    return terms


def fields_match(obj: Object, terms: list[tuple[str, str, bool]]) -> bool:
    """Whether ``obj`` satisfies every term of `field_terms`."""
    for path, value, negated in terms:
        have = field_value(obj, path) or ""
        if (have == value) == negated:
            return False
    return True


class SubResource:
    """The ``status`` (or another) subresource of a `FakeClient`."""

    def __init__(self, client: FakeClient, name: str) -> None:
        self._client = client
        self._name = name

    async def get(self, obj: Object, /) -> Object:
        return await self._client.get(GroupVersionKind.of(obj), object_key_from_object(obj))

    async def create(self, obj: Object, body: Object, /, *, dry_run: bool = False) -> Object:
        raise NotFoundError(404, "NotFound", f"the fake client has no {self._name} subresource to create")

    async def update(self, obj: Object, /, *, dry_run: bool = False, field_owner: str | None = None) -> Object:
        return await self._client._update(obj, subresource=self._name, dry_run=dry_run)

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
        return await self._client._patch(obj, patch, subresource=self._name, dry_run=dry_run)
