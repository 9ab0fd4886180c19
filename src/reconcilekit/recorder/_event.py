"""Building one core/v1 Event: the involved object's reference, the name, the fields.

Ports: k8s.io/client-go/tools/record (event.go recorderImpl.makeEvent, util/util.go
GenerateEventName) and tools/reference (GetReference)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from reconcilekit.client.interfaces import GroupVersionKind, Object
from reconcilekit.client.patch import to_json_tree
from reconcilekit.recorder.correlator import format_time

__all__ = ["generate_event_name", "make_event", "object_reference"]

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def object_reference(obj: Any) -> dict[str, str]:
    """The ``ObjectReference`` of a JSON object or pydantic model: kind, apiVersion, name, and the rest set.

    Raises:
        ValueError: the object has no ``apiVersion`` and ``kind``, or no name.

    Ports: reference.GetReference
    """
    tree = to_json_tree(obj)
    if not isinstance(tree, Mapping):
        raise ValueError(f"not an object: {type(obj).__name__}")
    gvk = GroupVersionKind.of(tree)
    meta = tree.get("metadata") or {}
    if not meta.get("name"):
        raise ValueError(f"{gvk.kind} has no metadata.name")
    ref = {"kind": gvk.kind, "apiVersion": gvk.api_version}
    for field in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(field):
            ref[field] = str(meta[field])
    return ref


def generate_event_name(ref_name: str, unix_nano: int) -> str:
    """``<name>.<nanoseconds in hex>``, or a random UUID when that is no valid DNS subdomain.

    Ports: util.GenerateEventName
    """
    name = f"{ref_name}.{unix_nano:x}"
    if len(name) <= 253 and _DNS_SUBDOMAIN.fullmatch(name):
        return name
    return str(uuid.uuid4())


def make_event(
    ref: Mapping[str, str],
    *,
    type: str,
    reason: str,
    message: str,
    component: str,
    now: float,
    annotations: Mapping[str, str] | None = None,
) -> Object:
    """A new Event (count 1) about ``ref`` from ``component`` at ``now`` (seconds since the epoch).

    It goes to the object's namespace, or ``default`` for a cluster-scoped object.

    Ports: recorderImpl.makeEvent and generateEvent's source fields
    """
    stamp = format_time(now)
    meta: dict[str, Any] = {
        "name": generate_event_name(ref["name"], int(now * 1e9)),
        "namespace": ref.get("namespace") or "default",
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta,
        "involvedObject": dict(ref),
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": type,
        "reportingComponent": component,
        "reportingInstance": "",
    }
