"""Write ``config/crd/*.yaml``, one CustomResourceDefinition per kind, from the models.

Usage: ``python -m arc_controllers.api.v1alpha1.crdgen [--out DIR] [--check]`` (or ``make crds``).
``--check`` writes nothing and exits 1 when a file would change.

What goes into a CRD, in controller-gen's terms:

* names, scope (Namespaced), the ``status`` subresource and printer columns from
  the kind's ``GVK``, ``PLURAL``, ``SINGULAR`` and ``PRINTER_COLUMNS``;
* one property per model field under its JSON name, typed from the annotation
  (``str`` string, ``int`` integer, ``float`` number, ``bool`` boolean,
  ``list`` array, ``dict[str, X]`` map, a model an object), with the markers
  of `_markers` (required, minimum, format) and the field's docstring as its
  description (the type's docstring when the field has none);
* embedded Kubernetes types from ``data/k8s_schemas.json`` (`k8sschema`);
* then upstream's own edit of controller-gen's output: `ATOMIC_CLAIMS`.

Output is deterministic: keys sorted, block style, no timestamps.

Python only: controller-gen does this for Go types.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Final, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from arc_controllers.api.v1alpha1 import KINDS
from arc_controllers.api.v1alpha1._markers import CrdRequired, Embedded, Format, ListMap, Minimum, XValidation
from arc_controllers.api.v1alpha1.groupversion import PrinterColumn
from arc_controllers.api.v1alpha1.k8sschema import embedded_schema, load_embedded_schemas

__all__ = ["ATOMIC_CLAIMS", "crd_file_name", "generate", "main", "render", "schema_for_model", "split_annotated"]

_API_VERSION_DESCRIPTION: Final = (
    "APIVersion defines the versioned schema of this representation of an object.\n"
    "Servers should convert recognized schemas to the latest internal value, and\n"
    "may reject unrecognized values.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DESCRIPTION: Final = (
    "Kind is a string value representing the REST resource this object represents.\n"
    "Servers may infer this from the endpoint the client submits requests to.\n"
    "Cannot be updated.\n"
    "In CamelCase.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_SCALARS: Final[dict[Any, str]] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ROOT_FIELDS: Final = ("api_version", "kind", "metadata", "spec", "status")

_POD: Final = ("initContainers[]", "containers[]", "ephemeralContainers[]")
ATOMIC_CLAIMS: Final[dict[str, tuple[str, ...]]] = {
    "AutoscalingRunnerSet": (
        ".spec.template.spec.resources.claims",
        *(f".spec.template.spec.{c}.resources.claims" for c in _POD),
    ),
    "EphemeralRunnerSet": tuple(f".spec.ephemeralRunnerSpec.spec.{c}.resources.claims" for c in _POD),
    "EphemeralRunner": tuple(f".spec.spec.{c}.resources.claims" for c in _POD),
}
"""Per kind, the ``resources.claims`` lists whose ``x-kubernetes-list-type: map`` (keyed
by name) upstream deletes after controller-gen ran, leaving atomic lists; every other
``claims`` keeps the map. The paths are the entries of upstream's list that reach a
field (some of its entries name paths that do not exist, and hit nothing); a path
that stops resolving here is an error, not a silent no-op.

Ports: Makefile manifests-gen-crds-fix (the actions.github.com CRDs)"""


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return inspect.cleandoc(doc).split("\n\n", 1)[0].strip()


def split_annotated(tp: Any) -> tuple[Any, list[Any]]:
    """Strip ``Annotated`` and ``| None``; return the bare type and all metadata found on the way."""
    metadata: list[Any] = []
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            base, *extra = get_args(tp)
            metadata.extend(extra)
            tp = base
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                raise TypeError(f"unsupported union {tp!r}: only X | None maps to a CRD schema")
            tp = args[0]
        else:
            return tp, metadata


def _schema_for_type(tp: Any, metadata: list[Any]) -> dict[str, Any]:
    tp, more = split_annotated(tp)
    metadata = [*metadata, *more]
    embedded = next((m for m in metadata if isinstance(m, Embedded)), None)
    if embedded is not None:
        schema = embedded_schema(embedded.name)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        schema = schema_for_model(tp)
    elif tp in _SCALARS:
        schema = {"type": _SCALARS[tp]}
    elif get_origin(tp) is list:
        (item,) = get_args(tp)
        schema = {"items": _schema_for_type(item, []), "type": "array"}
    elif get_origin(tp) is dict:
        key, value = get_args(tp)
        if key is not str:
            raise TypeError(f"map keys must be str, got {key!r}")
        schema = {"additionalProperties": _schema_for_type(value, []), "type": "object"}
    else:
        raise TypeError(f"no CRD schema for {tp!r}; mark embedded Kubernetes types with Embedded(...)")
    for marker in metadata:
        if isinstance(marker, Minimum):
            schema["minimum"] = marker.value
        elif isinstance(marker, Format):
            schema["format"] = marker.value
        elif isinstance(marker, ListMap):
            schema["x-kubernetes-list-type"] = "map"
            schema["x-kubernetes-list-map-keys"] = list(marker.keys)
    return schema


def _field_schema(info: FieldInfo) -> dict[str, Any]:
    schema = _schema_for_type(info.annotation, list(info.metadata))
    bare, _ = split_annotated(info.annotation)
    description = (info.description or "").strip()
    if not description and isinstance(bare, type) and issubclass(bare, BaseModel):
        description = _first_paragraph(bare.__doc__)
    if description:
        schema["description"] = inspect.cleandoc(description)
    else:
        schema.pop("description", None)
    return schema


def _is_required(info: FieldInfo) -> bool:
    return any(isinstance(m, CrdRequired) for m in info.metadata)


def schema_for_model(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI v3 schema of one of our models (an object with a property per field).

    Raises:
        TypeError: a field's type has no CRD mapping.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        json_name = info.alias or name
        properties[json_name] = _field_schema(info)
        if _is_required(info):
            required.append(json_name)
    schema: dict[str, Any] = {"type": "object"}
    if properties:
        schema["properties"] = properties
    if required:
        schema["required"] = sorted(required)
    description = _first_paragraph(model.__doc__)
    if description:
        schema["description"] = description
    rules: tuple[XValidation, ...] = getattr(model, "X_VALIDATIONS", ())
    if rules:
        schema["x-kubernetes-validations"] = [{"message": r.message, "rule": r.rule} for r in rules]
    return schema


def _root_schema(kind: type[BaseModel]) -> dict[str, Any]:
    fields = kind.model_fields
    spec = _field_schema(fields["spec"])
    status = _field_schema(fields["status"])
    return {
        "description": _first_paragraph(kind.__doc__),
        "properties": {
            "apiVersion": {"description": _API_VERSION_DESCRIPTION, "type": "string"},
            "kind": {"description": _KIND_DESCRIPTION, "type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "type": "object",
    }


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.strip(".").split("."):
        name, items = (part[:-2], True) if part.endswith("[]") else (part, False)
        node = node["properties"][name]
        if items:
            node = node["items"]
    return node


def _make_claims_atomic(kind_name: str, schema: dict[str, Any]) -> None:
    for path in ATOMIC_CLAIMS.get(kind_name, ()):
        try:
            claims = _at(schema, path)
        except KeyError:
            raise TypeError(f"{kind_name}: ATOMIC_CLAIMS path {path} is not in the schema") from None
        claims.pop("x-kubernetes-list-type", None)
        claims.pop("x-kubernetes-list-map-keys", None)


def _printer_column(column: PrinterColumn) -> dict[str, Any]:
    return {"jsonPath": column.json_path, "name": column.name, "type": column.type}


def generate(kind: type[BaseModel]) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind, as a JSON object.

    Raises:
        TypeError: the kind lacks ``GVK``/``PLURAL``/``SINGULAR`` or a field type has no mapping.
    """
    unknown = set(kind.model_fields) - set(_ROOT_FIELDS)
    if unknown:
        raise TypeError(f"{kind.__name__} has top-level fields a CRD cannot carry: {sorted(unknown)}")
    gvk = getattr(kind, "GVK", None)
    plural, singular = getattr(kind, "PLURAL", None), getattr(kind, "SINGULAR", None)
    if gvk is None or plural is None or singular is None:
        raise TypeError(f"{kind.__name__} is not a kind: it needs GVK, PLURAL and SINGULAR")
    root = _root_schema(kind)
    _make_claims_atomic(gvk.kind, root)
    version: dict[str, Any] = {
        "name": gvk.version,
        "schema": {"openAPIV3Schema": root},
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
    }
    columns = getattr(kind, "PRINTER_COLUMNS", ())
    if columns:
        version["additionalPrinterColumns"] = [_printer_column(c) for c in columns]
    k8s_version = load_embedded_schemas()["kubernetesVersion"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "annotations": {"arc-controllers.github.com/kubernetes-schemas": k8s_version},
            "name": f"{plural}.{gvk.group}",
        },
        "spec": {
            "group": gvk.group,
            "names": {
                "kind": gvk.kind,
                "listKind": f"{gvk.kind}List",
                "plural": plural,
                "singular": singular,
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: 10x faster


class _Dumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """Block style, multi-line strings as ``|-`` literals (same text from libyaml and pure Python)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def render(crd: dict[str, Any]) -> str:
    """A CRD as YAML text, byte-for-byte stable for the same input."""
    text: str = yaml.dump(
        crd, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=4096, explicit_start=True
    )
    return text


def crd_file_name(kind: type[BaseModel]) -> str:
    """``<group>_<plural>.yaml``, as controller-gen names CRD files."""
    return f"{kind.GVK.group}_{kind.PLURAL}.yaml"  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) every CRD; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m arc_controllers.api.v1alpha1.crdgen", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("config/crd"), help="folder for the YAML files")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    args = parser.parse_args(argv)
    stale = []
    for kind in KINDS:
        path = args.out / crd_file_name(kind)
        text = render(generate(kind))
        current = path.read_text("utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    if stale:
        print("out of date (run make crds): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
