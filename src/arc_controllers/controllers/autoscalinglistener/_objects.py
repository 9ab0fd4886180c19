"""Python only: the object reads the AutoscalingListener package shares (until one accessor module exists)."""

from __future__ import annotations

from typing import Any

from reconcilekit.client.interfaces import Object


def _meta(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["metadata"]``, created when missing."""
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


def _spec(obj: Object) -> dict[str, Any]:
    """Python only: ``obj["spec"]``, or an empty dict."""
    spec: dict[str, Any] = obj.get("spec") or {}
    return spec


def _deleting(obj: Object) -> bool:
    """Python only: whether ``metadata.deletionTimestamp`` is set."""
    return bool(_meta(obj).get("deletionTimestamp"))
