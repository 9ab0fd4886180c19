"""Schema markers for the CRD generator, the Python spelling of kubebuilder's ``+kubebuilder:`` comments.

They sit in a field's ``Annotated[...]`` metadata. Pydantic ignores them when
validating (the API server enforces the schema; a controller must still decode
whatever is stored), and `crdgen` reads them when writing ``config/crd``.

Python only: Go carries these as comment markers that controller-gen parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["REQUIRED", "CrdRequired", "Embedded", "Format", "ListMap", "Minimum", "XValidation"]


@dataclass(frozen=True, slots=True)
class Embedded:
    """The field holds a Kubernetes type; its schema is ``name`` in ``data/k8s_schemas.json``.

    Such fields are plain JSON (``dict[str, Any]``) so they round-trip unchanged,
    fields unknown to us included.
    """

    name: str


@dataclass(frozen=True, slots=True)
class Minimum:
    """``+kubebuilder:validation:Minimum`` (inclusive)."""

    value: int


@dataclass(frozen=True, slots=True)
class Format:
    """An OpenAPI ``format`` such as ``int64`` or ``date-time``."""

    value: str


@dataclass(frozen=True, slots=True)
class ListMap:
    """``+listType=map`` with ``+listMapKey``: a list merged by ``keys`` (one item per key)."""

    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class XValidation:
    """``+kubebuilder:validation:XValidation``: a CEL ``rule`` the API server checks at admission.

    Put on a model class as ``X_VALIDATIONS: ClassVar[tuple[XValidation, ...]]``; the rule sees
    the object as ``self`` and a refusal says ``message``.
    """

    rule: str
    message: str


@dataclass(frozen=True, slots=True)
class CrdRequired:
    """The field is listed in its object's ``required`` (``+required``, or a Go field without omitempty)."""


REQUIRED: Final = CrdRequired()
