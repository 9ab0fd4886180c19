"""Schema markers for the CRD generator, the Python spelling of kubebuilder's ``+kubebuilder:`` comments.

They sit in a field's ``Annotated[...]`` metadata. Pydantic ignores them when
validating (the API server enforces the schema; a controller must still decode
whatever is stored), and `crdgen` reads them when writing ``config/crd``.

Python only: Go carries these as comment markers that controller-gen parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["REQUIRED", "CrdRequired", "Embedded", "Format", "Minimum"]


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
class CrdRequired:
    """The field is listed in its object's ``required`` (``+required``, or a Go field without omitempty)."""


REQUIRED: Final = CrdRequired()
