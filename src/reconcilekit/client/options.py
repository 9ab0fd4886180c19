"""Request options shared by the client's verbs: selectors, field owners, DeleteOptions.

Ports: sigs.k8s.io/controller-runtime/pkg/client (options.go, fieldowner.go)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from reconcilekit._internal import json as _json

__all__ = ["MAX_FIELD_MANAGER", "PropagationPolicy", "check_field_owner", "delete_options", "selector_text"]

MAX_FIELD_MANAGER = 128
"""The longest field manager name the API server takes (characters)."""

PropagationPolicy = Literal["Orphan", "Background", "Foreground"]


def selector_text(selector: Mapping[str, str] | str | None) -> str | None:
    """A label or field selector as query text: ``{"a": "1", "b": "2"}`` → ``"a=1,b=2"`` (sorted).

    Ports: labels.SelectorFromSet(...).String(), fields.SelectorFromSet(...).String()
    """
    if selector is None or isinstance(selector, str):
        return selector or None
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or None


def check_field_owner(owner: str | None) -> None:
    """Raise ValueError unless ``owner`` is None or 1 to 128 printable characters."""
    if owner is not None and (len(owner) > MAX_FIELD_MANAGER or not owner.isprintable() or not owner):
        raise ValueError(f"field owner must be 1 to {MAX_FIELD_MANAGER} printable characters")


def delete_options(
    grace_period_seconds: int | None,
    propagation_policy: PropagationPolicy | None,
    preconditions: Mapping[str, str] | None,
    *,
    dry_run: bool,
) -> bytes:
    """The DeleteOptions body of a delete; dryRun goes here too, as the server then ignores the query."""
    body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if dry_run:
        body["dryRun"] = ["All"]
    if grace_period_seconds is not None:
        if grace_period_seconds < 0:
            raise ValueError("grace_period_seconds must not be negative")
        body["gracePeriodSeconds"] = grace_period_seconds
    if propagation_policy is not None:
        if propagation_policy not in ("Orphan", "Background", "Foreground"):
            raise ValueError(f"unknown propagation policy {propagation_policy!r}")
        body["propagationPolicy"] = propagation_policy
    if preconditions:
        unknown = set(preconditions) - {"uid", "resourceVersion"}
        if unknown:
            raise ValueError(f"unknown delete preconditions: {sorted(unknown)}")
        body["preconditions"] = dict(preconditions)
    return _json.dumps(body)
