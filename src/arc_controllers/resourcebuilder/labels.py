"""Label and annotation merging for every built object, and the labels derived from a config URL.

Every helper returns a new map and never changes or aliases its inputs (#4689).

Ports: controllers/actions.github.com/resourcebuilder.go (filterAndMergeLabels,
mergeAnnotations, applyGitHubURLLabels, trimLabelValue)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping

from arc_controllers import constants
from arc_controllers.actions.config import parse_github_config_url

__all__ = ["apply_github_url_labels", "filter_and_merge_labels", "merge_annotations", "trim_label_value"]


def filter_and_merge_labels(
    base: Mapping[str, str] | None, overwrite: Mapping[str, str] | None, excluded: Iterable[str] = ()
) -> dict[str, str] | None:
    """``base`` then ``overwrite`` on top, leaving out keys that start with an excluded prefix.

    Returns None when both are None (Go's nil map), else a new dict.

    Ports: ResourceBuilder.filterAndMergeLabels
    """
    if base is None and overwrite is None:
        return None
    prefixes = tuple(excluded)
    merged = {k: v for k, v in (base or {}).items() if not (prefixes and k.startswith(prefixes))}
    merged.update({k: v for k, v in (overwrite or {}).items() if not (prefixes and k.startswith(prefixes))})
    return merged


def merge_annotations(base: Mapping[str, str] | None, overwrite: Mapping[str, str] | None) -> dict[str, str] | None:
    """``base`` then ``overwrite`` on top (overwrite wins); None when both are None.

    Ports: ResourceBuilder.mergeAnnotations
    """
    if base is None and overwrite is None:
        return None
    return {**(base or {}), **(overwrite or {})}


def trim_label_value(value: str) -> str:
    """A label value: over 63 characters → the first 58 plus ``-trim``; else stripped of ``-_.`` at both ends.

    Ports: trimLabelValue
    """
    if len(value) > constants.LABEL_VALUE_MAX_LENGTH:
        return value[: constants.LABEL_VALUE_TRIM_KEEP] + constants.LABEL_VALUE_TRIM_SUFFIX
    return value.strip("-_.")


def apply_github_url_labels(config_url: str, labels: MutableMapping[str, str]) -> None:
    """Set the enterprise, organization and repository labels that ``config_url`` names (only non-empty ones).

    Raises:
        ValueError: ``config_url`` is not a GitHub config URL.

    Ports: applyGitHubURLLabels
    """
    try:
        config = parse_github_config_url(config_url)
    except ValueError as err:
        raise ValueError(f"failed to apply GitHub URL labels: failed to parse github config from url: {err}") from err
    if config.enterprise:
        labels[constants.LABEL_KEY_GITHUB_ENTERPRISE] = trim_label_value(config.enterprise)
    if config.organization:
        labels[constants.LABEL_KEY_GITHUB_ORGANIZATION] = trim_label_value(config.organization)
    if config.repository:
        labels[constants.LABEL_KEY_GITHUB_REPOSITORY] = trim_label_value(config.repository)
