"""Does the schema an API server serves for one of our kinds keep what our controllers write?

A CRD older than ours (Go ARC 0.14.x's, installed by ARC's chart, which Helm never
upgrades) lets every read through but silently prunes each field it lacks on write
(``spec.actionableRevision``, ``status.appliedActionableRevision``, ...), and refuses a
write that leaves out a field it requires (0.14.2's ``status.currentReplicas``).
`compare_served` names both kinds of gap for one kind, against our own CRD
(`crdgen.generate`): every field of ours must be served, and the served schema may
require only what ours requires.

Embedded Kubernetes types (pod templates, references) are compared only as present:
their inner fields come from the Kubernetes version the CRD was generated with, are
copied through from what users wrote, and are not what this check is about. A
served node with ``x-kubernetes-preserve-unknown-fields`` keeps everything below it.

Python only: Go ARC trusts the CRDs its chart installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from arc_controllers.api.v1alpha1 import GROUP, VERSION, ArcModel
from arc_controllers.api.v1alpha1._markers import Embedded
from arc_controllers.api.v1alpha1.crdgen import generate, split_annotated

__all__ = ["PRUNABLE", "SchemaGap", "compare_served", "embedded_paths", "served_schemas"]

PRUNABLE: frozenset[str] = frozenset({"status.conditions"})
"""Fields of ours a served schema may lack: the controllers see them pruned and stop writing them
(one info line), losing nothing the system runs on. Beyond: ARC #2633: conditions are our addition."""


@dataclass(frozen=True, slots=True)
class SchemaGap:
    """What a served schema does not keep, as dotted field paths (``status.failures{}``)."""

    kind: str
    missing: tuple[str, ...]
    """Fields of ours the served schema lacks (the API server prunes them on write)."""
    extra_required: tuple[str, ...]
    """Fields the served schema requires and ours does not (writes without them are refused)."""

    def describe(self) -> str:
        """``EphemeralRunnerSet lacks spec.x, status.y and requires status.z``."""
        parts = []
        if self.missing:
            parts.append("lacks " + ", ".join(self.missing))
        if self.extra_required:
            parts.append("requires " + ", ".join(self.extra_required))
        return f"{self.kind} " + " and ".join(parts)


def _walk_model(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        path = f"{prefix}.{info.alias or name}" if prefix else info.alias or name
        tp, metadata = split_annotated(info.annotation)
        if any(isinstance(m, Embedded) for m in (*info.metadata, *metadata)):
            yield path
            continue
        while get_origin(tp) in (list, dict):
            path += "[]" if get_origin(tp) is list else "{}"
            tp, _ = split_annotated(get_args(tp)[-1])
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            yield from _walk_model(tp, path)


def embedded_paths(kind: type[ArcModel]) -> frozenset[str]:
    """The paths of ``kind`` that hold an embedded Kubernetes type (``spec.template``, ...)."""
    fields = kind.model_fields
    out: set[str] = set()
    for root in ("spec", "status"):
        tp, _ = split_annotated(fields[root].annotation)
        out.update(_walk_model(tp, root))
    return frozenset(out)


def _compare(
    ours: Mapping[str, Any],
    served: Mapping[str, Any] | None,
    path: str,
    embedded: frozenset[str],
    missing: list[str],
    extra_required: list[str],
) -> None:
    if served is None:
        if path not in PRUNABLE:
            missing.append(path)
        return
    if served.get("x-kubernetes-preserve-unknown-fields") is True or path in embedded:
        return
    served_props = served.get("properties") or {}
    for name, sub in (ours.get("properties") or {}).items():
        _compare(sub, served_props.get(name), f"{path}.{name}", embedded, missing, extra_required)
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(ours.get(key), dict):
            served_sub = served.get(key)
            _compare(
                ours[key], served_sub if isinstance(served_sub, dict) else None, path + suffix, embedded,
                missing, extra_required,
            )  # fmt: skip
    ours_required = set(ours.get("required") or ())
    extra_required.extend(f"{path}.{name}" for name in served.get("required") or () if name not in ours_required)


def compare_served(kind: type[ArcModel], served: Mapping[str, Any] | None) -> SchemaGap | None:
    """What the API server's schema for ``kind`` drops or demands beyond ours; None when nothing.

    Args:
        kind: one of `KINDS`.
        served: the kind's schema from the server's OpenAPI v3 document
            (`served_schemas`), or None when the server serves no such kind.

    Only ``spec`` and ``status`` are compared (``metadata`` is the server's own).
    """
    gvk = kind.GVK  # type: ignore[attr-defined]
    ours = generate(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    if served is None:
        return SchemaGap(gvk.kind, ("(the whole kind: not served)",), ())
    embedded = embedded_paths(kind)
    missing: list[str] = []
    extra_required: list[str] = []
    served_props = served.get("properties") or {}
    for root in ("spec", "status"):
        _compare(ours["properties"][root], served_props.get(root), root, embedded, missing, extra_required)
    extra_required.extend(name for name in served.get("required") or () if name not in ("apiVersion", "kind"))
    if not missing and not extra_required:
        return None
    return SchemaGap(gvk.kind, tuple(missing), tuple(extra_required))


def served_schemas(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Kind -> schema of every ``actions.github.com/v1alpha1`` kind in an OpenAPI v3 document.

    Schemas are found by their ``x-kubernetes-group-version-kind`` extension, not by name.
    """
    out: dict[str, Mapping[str, Any]] = {}
    for schema in ((document.get("components") or {}).get("schemas") or {}).values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if gvk.get("group") == GROUP and gvk.get("version") == VERSION and gvk.get("kind"):
                out[gvk["kind"]] = schema
    return out
