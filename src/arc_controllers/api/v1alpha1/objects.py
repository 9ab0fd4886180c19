"""Plain accessors over JSON objects (dicts) as the API server and the informer cache hand them out.

The reconcilers work on raw dicts, never on the pydantic models (see the README section
"Objects: models and raw dicts"). These functions are the one spelling of the reads every
reconciler needs. The read accessors never change the object: an absent field reads as an
empty dict, list or string that is a fresh value, so writing into it is lost. To write, use
the ``mutable_*`` accessors, which create the field when it is missing.

The object key is `reconcilekit.client.object_key_from_object`, the finalizer helpers
are `reconcilekit.controllerutil`'s.

Python only: controller-runtime gets these from metav1.Object's getters.
"""

import base64
from collections.abc import Mapping
from typing import Any

__all__ = [
    "annotations",
    "controller_reference",
    "decoded_secret_data",
    "finalizers",
    "is_deleting",
    "labels",
    "meta",
    "mutable_meta",
    "mutable_status",
    "name",
    "namespace",
    "owner_references",
    "resource_version",
    "secret_data",
    "spec",
    "status",
    "uid",
]


def _field(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    value: dict[str, Any] = obj.get(key) or {}
    return value


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata``, or a fresh ``{}`` when absent (read only)."""
    return _field(obj, "metadata")


def spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``spec``, or a fresh ``{}`` when absent (read only)."""
    return _field(obj, "spec")


def status(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``status``, or a fresh ``{}`` when absent (read only)."""
    return _field(obj, "status")


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    """``metadata.labels``, or a fresh ``{}`` when absent (read only)."""
    found: dict[str, str] = meta(obj).get("labels") or {}
    return found


def annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    """``metadata.annotations``, or a fresh ``{}`` when absent (read only)."""
    found: dict[str, str] = meta(obj).get("annotations") or {}
    return found


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    """``metadata.finalizers``, or a fresh ``[]`` when absent (read only)."""
    found: list[str] = meta(obj).get("finalizers") or []
    return found


def owner_references(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``metadata.ownerReferences``, or a fresh ``[]`` when absent (read only)."""
    found: list[dict[str, Any]] = meta(obj).get("ownerReferences") or []
    return found


def controller_reference(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first owner reference with ``controller: true``, or None. Ports: metav1.GetControllerOf"""
    for ref in owner_references(obj):
        if ref.get("controller"):
            return ref
    return None


def name(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, "" when absent."""
    return str(meta(obj).get("name") or "")


def namespace(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace``, "" when absent (cluster-scoped)."""
    return str(meta(obj).get("namespace") or "")


def uid(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``, "" when absent (not yet created)."""
    return str(meta(obj).get("uid") or "")


def resource_version(obj: Mapping[str, Any]) -> str:
    """``metadata.resourceVersion``, "" when absent (not yet created)."""
    return str(meta(obj).get("resourceVersion") or "")


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set (the object waits for its finalizers)."""
    return bool(meta(obj).get("deletionTimestamp"))


def secret_data(secret: Mapping[str, Any]) -> dict[str, str]:
    """A Secret's ``data`` as stored (base64 values), or a fresh ``{}`` when absent (read only)."""
    found: dict[str, str] = _field(secret, "data")
    return found


def decoded_secret_data(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's ``data``, base64-decoded; ``{}`` when it has none."""
    return {key: base64.b64decode(value) for key, value in secret_data(secret).items()}


def mutable_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` for writing: created when absent, so changes land in ``obj``."""
    found: dict[str, Any] = obj.setdefault("metadata", {})
    return found


def mutable_status(obj: dict[str, Any]) -> dict[str, Any]:
    """``status`` for writing: created when absent, so changes land in ``obj``."""
    found: dict[str, Any] = obj.setdefault("status", {})
    return found
