"""Label and field selectors: parse the text form, match objects in memory.

Label selector grammar (as kubectl and the API server accept it): comma-separated
requirements ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``.
Field selectors in a cache are exact matches only: ``f=v`` or ``f==v``, ANDed.

Ports: k8s.io/apimachinery/pkg/labels (selector.go) and pkg/fields (selector.go), the parts a
cache needs
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "LabelSelector",
    "Requirement",
    "field_value",
    "label_selector_text",
    "parse_exact_fields",
    "parse_label_selector",
]

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_SET_RE = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*")
_EQ_RE = re.compile(r"^\s*(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s,()]*)\s*")
_EXISTS_RE = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=(),]+)\s*")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a label selector. Ports: labels.Requirement"""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when ``labels`` satisfy this term. Ports: Requirement.Matches"""
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values  # "!=", "notin"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """ANDed requirements; the empty selector matches everything. Ports: labels.Selector"""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """True when the object's ``metadata.labels`` satisfy every requirement."""
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        """True for the match-everything selector."""
        return not self.requirements


def parse_label_selector(selector: Mapping[str, str] | str | None) -> LabelSelector:
    """Parse a label selector given as equalities or as text.

    Raises:
        ValueError: the text is not a valid selector.

    Ports: labels.Parse and labels.SelectorFromSet
    """
    if selector is None:
        return LabelSelector()
    if isinstance(selector, Mapping):
        return LabelSelector(tuple(Requirement(k, "=", frozenset({v})) for k, v in sorted(selector.items())))
    text = selector.strip()
    requirements: list[Requirement] = []
    while text:
        if m := _SET_RE.match(text):
            values = frozenset(v.strip() for v in m["values"].split(",") if v.strip())
            requirements.append(Requirement(m["key"], "in" if m["op"] == "in" else "notin", values))
        elif m := _EQ_RE.match(text):
            op: Operator = "!=" if m["op"] == "!=" else "="
            requirements.append(Requirement(m["key"], op, frozenset({m["value"]})))
        elif m := _EXISTS_RE.match(text):
            requirements.append(Requirement(m["key"], "!" if m["neg"] else "exists"))
        else:
            raise ValueError(f"invalid label selector: {selector!r}")
        text = text[m.end() :]
        if text.startswith(","):
            text = text[1:]
        elif text:
            raise ValueError(f"invalid label selector: {selector!r}")
    return LabelSelector(tuple(requirements))


def label_selector_text(selector: Mapping[str, str] | str | None) -> str | None:
    """The text form of a selector (``None`` stays ``None``)."""
    if selector is None or isinstance(selector, str):
        return selector
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def parse_exact_fields(selector: Mapping[str, str] | str | None) -> list[tuple[str, str]]:
    """The ``(field, value)`` terms of an exact-match field selector.

    Raises:
        ValueError: the selector uses ``!=`` or is malformed ("non-exact field matches are
            not supported by the cache").

    Ports: controller-runtime cache_reader.go requiresExactMatch
    """
    if selector is None:
        return []
    if isinstance(selector, Mapping):
        return sorted((str(k), str(v)) for k, v in selector.items())
    terms: list[tuple[str, str]] = []
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        if "!=" in term:
            raise ValueError(f"non-exact field matches are not supported by the cache: {term!r}")
        field, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if not sep or not field.strip():
            raise ValueError(f"invalid field selector: {selector!r}")
        terms.append((field.strip(), value.strip()))
    return terms


def field_value(obj: Mapping[str, Any], path: str) -> str | None:
    """The value at a dotted path (``metadata.name``, ``spec.nodeName``) as text, or ``None``.

    Python only: what the API server's field-label conversion does for the common fields.
    """
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if node is None:
        return None
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)
