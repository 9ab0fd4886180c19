"""What the runner builders take besides the objects.

Python only: its own module so the runner and runner-set builders share it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunnerBuildOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerBuildOptions:
    """What the runner builders take besides the objects.

    Ports: ResourceBuilder's fields ExcludeLabelPropagationPrefixes, and build.Version
    """

    exclude_label_propagation_prefixes: tuple[str, ...] = ()
    """Label keys starting with one of these are not copied from user metadata."""

    build_version: str = "dev"
    """Reported to the Actions service in the runner's user agent."""
