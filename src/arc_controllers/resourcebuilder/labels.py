"""The metadata helpers of every builder: label and annotation merging, config-URL labels, owner references, hashes.

Every helper returns a new map and never changes or aliases its inputs (#4689). The
builder families (runner, runnerset, listener) share these and import nothing of each other.

Ports: controllers/actions.github.com/resourcebuilder.go (filterAndMergeLabels,
mergeAnnotations, applyGitHubURLLabels, trimLabelValue, setControllerReference);
hash.FNVHashString
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from arc_controllers import constants
from arc_controllers.actions.config import parse_github_config_url
from arc_controllers.api.v1alpha1 import objects

__all__ = [
    "apply_github_url_labels",
    "controller_reference",
    "filter_and_merge_labels",
    "fnv_hash_string",
    "merge_annotations",
    "runner_scale_set_id",
    "trim_label_value",
]

_SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


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


def fnv_hash_string(value: str) -> str:
    """FNV-1a (32 bit) of ``value``'s UTF-8 bytes, printed in decimal and then safe-encoded.

    Safe encoding maps every character of the decimal string onto a consonant/digit
    alphabet, so the result is a valid label value of at most 10 characters.

    Ports: hash.FNVHashString (with k8s.io/apimachinery rand.SafeEncodeString)
    """
    h = 0x811C9DC5
    for byte in value.encode():
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHANUMS[ord(c) % len(_SAFE_ALPHANUMS)] for c in str(h))


def controller_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    """The controller owner reference to ``owner``, blocking its deletion until the dependent goes.

    Ports: controllerutil.SetControllerReference as ResourceBuilder.setControllerReference calls it
    """
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def runner_scale_set_id(autoscaling_runner_set: Mapping[str, Any]) -> int:
    """The ``runner-scale-set-id`` annotation as an int.

    Raises:
        ValueError: the annotation is missing or not a decimal integer (Go's strconv.Atoi error).

    Python only: the parse both builders start with.
    """
    annotations = objects.annotations(autoscaling_runner_set)
    raw = annotations.get(constants.ANNOTATION_KEY_RUNNER_SCALE_SET_ID, "")
    try:
        return int(raw, 10)
    except ValueError:
        raise ValueError(f'strconv.Atoi: parsing "{raw}": invalid syntax') from None
