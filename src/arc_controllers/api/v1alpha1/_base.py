"""The base of every model in this package: JSON names as aliases, docstrings as descriptions.

Python only: Go gets the same from struct tags and controller-gen.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ArcModel"]


class ArcModel(BaseModel):
    """A JSON object of ARC's API: lowerCamel JSON names, every field optional, unknown fields kept.

    Invariants:
        * ``model_validate(d).to_json_dict() == d`` for any object the API
          server stores: absent fields stay absent (``None``), fields we do
          not know are kept (``extra="allow"``), and embedded Kubernetes types
          are plain JSON.
        * Validation never rejects a stored object for a value the CRD allows:
          limits (``Minimum``) are the API server's job, not ours.
        * Python attribute names are snake_case; the JSON names are aliases,
          and both are accepted on input.

    Mind: because unknown fields are kept, a misspelt keyword
    (``EphemeralRunnerSetSpec(replica=3)``) becomes an extra field, not an error.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        use_attribute_docstrings=True,
        extra="allow",
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The object as JSON: API names, absent fields left out.

        Python only: ``model_dump(by_alias=True, exclude_none=True, mode="json")``.
        """
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def from_json_dict(cls, data: Any) -> Self:
        """Decode a JSON object (as the API server sends it).

        Raises:
            pydantic.ValidationError: a field has a JSON type the schema does not allow.

        Python only: ``model_validate``.
        """
        return cls.model_validate(data)
