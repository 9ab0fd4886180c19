"""Kubernetes types' schemas for our CRDs, cut from the kube-apiserver's OpenAPI v3 document.

`inline_schemas` turns the server's schemas (``components.schemas`` of
``/openapi/v3/api/v1``) into the self-contained form controller-gen writes into a
CRD: every ``$ref`` inlined, quantities and int-or-strings as
``anyOf: [integer, string]`` with ``x-kubernetes-int-or-string``, times as
``date-time`` strings, the pod template's ObjectMeta cut to the five fields
controller-gen embeds (``generateEmbeddedObjectMeta``), and only the schema keys a
CRD may carry (the ``x-kubernetes-list-*`` and ``map-type`` markers stay; patch
strategies, enums and object-typed defaults go).

Where the two generators read the same Go markers differently, the conversion
follows controller-gen: ``required`` lists sorted, no default where the Go marker
is ``+default=ref(Constant)`` (`UNEVALUATED_DEFAULTS`), and ``map-type: atomic``
on the types that embed an atomic struct inline (`INLINED_ATOMIC`).

Descriptions of Kubernetes' own fields are dropped to keep ``data/`` and the
CRDs small; our fields keep theirs.

`load_embedded_schemas` reads the saved result (``data/k8s_schemas.json``) for
the CRD generator. ``hack/snapshot_k8s_schemas.py`` writes that file from a
running envtest kube-apiserver.

Python only: controller-gen reads Go types; we read the API server's own schema.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

__all__ = [
    "DATA_FILE",
    "EMBEDDED_OBJECT_META",
    "INLINED_ATOMIC",
    "ROOTS",
    "UNEVALUATED_DEFAULTS",
    "embedded_schema",
    "inline_schemas",
    "load_embedded_schemas",
]

DATA_FILE: Final = "k8s_schemas.json"
"""File name under ``arc_controllers/api/v1alpha1/data``."""

_CORE: Final = "io.k8s.api.core.v1."
ROOTS: Final = {
    "PodTemplateSpec": _CORE + "PodTemplateSpec",
    "ConfigMapKeySelector": _CORE + "ConfigMapKeySelector",
    "LocalObjectReference": _CORE + "LocalObjectReference",
}
"""The schemas our CRDs embed, by the name `_markers.Embedded` uses, and their OpenAPI names.

``PodSpec`` and ``EmbeddedObjectMeta`` are not stored separately: they are the
``spec`` and ``metadata`` of ``PodTemplateSpec`` (see `embedded_schema`)."""

_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_TIMES: Final = frozenset(
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}
)
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The pattern controller-gen puts on a quantity."""

_KEEP: Final = frozenset(
    {
        "type",
        "format",
        "properties",
        "items",
        "additionalProperties",
        "required",
        "default",
        "pattern",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "nullable",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
    }
)

UNEVALUATED_DEFAULTS: Final = frozenset(
    {
        (_CORE + "AzureDiskVolumeSource", "cachingMode"),
        (_CORE + "AzureDiskVolumeSource", "kind"),
    }
)
"""(type, field) pairs whose Go default is a ``+default=ref(Constant)`` marker.

openapi-gen evaluates the constant and publishes it as ``default``; controller-gen
skips ``ref(...)`` markers (it does not evaluate Go constants), so upstream's CRDs
have no default there, and an API server serving ours would add one to objects Go
ARC wrote (``cachingMode: ReadWrite``, ``kind: Shared``)."""

INLINED_ATOMIC: Final = frozenset(
    {
        _CORE + "ConfigMapEnvSource",
        _CORE + "SecretEnvSource",
        _CORE + "ConfigMapVolumeSource",
        _CORE + "ConfigMapProjection",
        _CORE + "SecretProjection",
    }
)
"""Types that embed ``LocalObjectReference`` (``+structType=atomic``) with ``json:",inline"``.

controller-gen flattens the embedded struct into them, its ``x-kubernetes-map-type:
atomic`` included; openapi-gen lists only the embedded fields, so the API server's
document carries no map type for them. Types with a marker of their own
(``ConfigMapKeySelector``, ``SecretKeySelector``) need no entry."""

_STRING_MAP: Final = {"additionalProperties": {"type": "string"}, "type": "object"}
EMBEDDED_OBJECT_META: Final = {
    "properties": {
        "annotations": _STRING_MAP,
        "finalizers": {"items": {"type": "string"}, "type": "array"},
        "labels": _STRING_MAP,
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
    "type": "object",
}
"""The ObjectMeta controller-gen embeds in a pod template (``crd:generateEmbeddedObjectMeta=true``)."""


def _int_or_string(*, quantity: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    if quantity:
        out["pattern"] = QUANTITY_PATTERN
    return out


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def inline_schemas(schemas: Mapping[str, Any], roots: Mapping[str, str] = ROOTS) -> dict[str, Any]:
    """Inline the closure of each root into one self-contained, CRD-ready schema.

    Args:
        schemas: ``components.schemas`` of the API server's ``/openapi/v3/api/v1``
            document: OpenAPI name -> schema, with ``$ref`` and ``allOf`` wrappers.
        roots: our name -> OpenAPI name of each schema to produce.

    Returns:
        our name -> schema with no ``$ref`` left, keys as controller-gen writes them.

    Raises:
        KeyError: a root or a referenced schema is missing from ``schemas``.
        ValueError: the types refer to themselves (a CRD schema cannot express that).
    """

    def resolve(name: str, seen: tuple[str, ...]) -> dict[str, Any]:
        if name == _QUANTITY:
            return _int_or_string(quantity=True)
        if name == _INT_OR_STRING:
            return _int_or_string(quantity=False)
        if name in _TIMES:
            return {"format": "date-time", "type": "string"}
        if name == _OBJECT_META:
            return copy.deepcopy(EMBEDDED_OBJECT_META)
        if name in seen:
            raise ValueError(f"recursive schema: {' -> '.join((*seen, name))}")
        out = convert(schemas[name], (*seen, name), keep_default=False)
        for type_name, prop in UNEVALUATED_DEFAULTS:
            if type_name == name and prop in out.get("properties", {}):
                out["properties"][prop].pop("default", None)
        if name in INLINED_ATOMIC:
            out["x-kubernetes-map-type"] = "atomic"
        return out

    def convert(node: Mapping[str, Any], seen: tuple[str, ...], *, keep_default: bool) -> dict[str, Any]:
        # keep_default: openapi-gen also writes the zero value as default on required
        # fields, list items and map values; controller-gen writes only +default markers,
        # which sit on optional fields. Keeping defaults of optional fields alone matches it.
        if "$ref" in node:
            return resolve(_ref_name(node["$ref"]), seen)
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
            out = resolve(_ref_name(all_of[0]["$ref"]), seen)
            default = node.get("default")
            if keep_default and default is not None and not isinstance(default, (dict, list)):
                out["default"] = default
            return out
        out = {}
        required = frozenset(node.get("required") or ())
        for key, value in node.items():
            if key not in _KEEP:
                continue
            if key == "properties":
                out[key] = {prop: convert(sub, seen, keep_default=prop not in required) for prop, sub in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = convert(value, seen, keep_default=False)
            elif key == "default":
                if keep_default and not isinstance(value, (dict, list)):
                    out[key] = value
            elif key == "required":
                out[key] = sorted(value)  # openapi-gen keeps Go field order; controller-gen sorts
            else:
                out[key] = copy.deepcopy(value)
        if "properties" in out and "type" not in out:
            out["type"] = "object"
        return out

    return {ours: resolve(openapi_name, ()) for ours, openapi_name in roots.items()}


@cache
def _load() -> dict[str, Any]:
    text = resources.files("arc_controllers.api.v1alpha1").joinpath("data", DATA_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def load_embedded_schemas() -> dict[str, Any]:
    """The saved file: ``{"kubernetesVersion": ..., "schemas": {our name: schema}}``, a fresh copy.

    Raises:
        FileNotFoundError: ``data/k8s_schemas.json`` has not been written yet.
    """
    return copy.deepcopy(_load())


def embedded_schema(name: str) -> dict[str, Any]:
    """The saved schema called ``name`` in `_markers.Embedded` (a fresh copy).

    ``X[]`` is an array of ``X``; ``PodSpec`` and ``EmbeddedObjectMeta`` come out
    of ``PodTemplateSpec``.

    Raises:
        KeyError: no such schema.
        FileNotFoundError: ``data/k8s_schemas.json`` has not been written yet.
    """
    if name.endswith("[]"):
        return {"items": embedded_schema(name[:-2]), "type": "array"}
    schemas = _load()["schemas"]
    if name == "PodSpec":
        return copy.deepcopy(schemas["PodTemplateSpec"]["properties"]["spec"])
    if name == "EmbeddedObjectMeta":
        return copy.deepcopy(schemas["PodTemplateSpec"]["properties"]["metadata"])
    return copy.deepcopy(schemas[name])
