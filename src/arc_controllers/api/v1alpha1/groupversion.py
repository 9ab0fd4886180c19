"""The API group and version of ARC's scale-set kinds, and printer-column descriptions.

Ports: apis/actions.github.com/v1alpha1/groupversion_info.go
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from reconcilekit.client import GroupVersionKind

__all__ = ["GROUP", "GROUP_VERSION", "VERSION", "GroupVersion", "PrinterColumn"]


@dataclass(frozen=True, slots=True)
class GroupVersion:
    """An API group and version.

    Ports: schema.GroupVersion
    """

    group: str
    version: str

    @property
    def api_version(self) -> str:
        """``group/version`` as objects carry it in ``apiVersion``."""
        return f"{self.group}/{self.version}"

    def with_kind(self, kind: str) -> GroupVersionKind:
        """This group and version with ``kind``."""
        return GroupVersionKind(self.group, self.version, kind)


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One ``kubectl get`` column (``+kubebuilder:printcolumn``).

    Python only: the CRD generator reads these from each kind's ``PRINTER_COLUMNS``.
    """

    name: str
    type: Literal["integer", "number", "string", "boolean", "date"]
    json_path: str


GROUP: Final = "actions.github.com"
VERSION: Final = "v1alpha1"
GROUP_VERSION: Final = GroupVersion(GROUP, VERSION)
