"""Drift checks between live objects and freshly built desired ones, for the scale set and listener controllers.

Every comparison is semantic (`arc_controllers.api.v1alpha1.equality`): nil and empty
collections are alike and quantities compare by value, so an object that round-tripped
through the API server never looks changed by spelling alone.

Ports: controllers/actions.github.com/helpers.go
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from arc_controllers import constants
from arc_controllers.api.v1alpha1 import EphemeralRunnerSetPhase, objects
from arc_controllers.api.v1alpha1.autoscalinglistener import AutoscalingListenerSpec
from arc_controllers.api.v1alpha1.equality import QUANTITY_MAP_KEYS, semantic_equal

__all__ = [
    "ephemeral_runner_set_actionable_spec_changed",
    "ephemeral_runner_set_desired_spec_changed",
    "ephemeral_runner_set_outdated_for_applied_revision",
    "listener_config_changed",
    "listener_pod_spec_requires_recreation",
    "listener_spec_changed",
    "next_actionable_revision",
]

_Obj = Mapping[str, Any] | None


def ephemeral_runner_set_actionable_spec_changed(current: _Obj, desired: _Obj) -> bool:
    """Whether the runner spec differs: what runners are built from, so a change needs a new revision.

    Ports: ephemeralRunnerSetActionableSpecChanged
    """
    if current is None or desired is None:
        return current is not desired
    return not semantic_equal(
        objects.spec(current).get("ephemeralRunnerSpec"), objects.spec(desired).get("ephemeralRunnerSpec")
    )


def ephemeral_runner_set_desired_spec_changed(current: _Obj, desired: _Obj) -> bool:
    """The runner spec, or the runner metadata, differs (#4660, #4695).

    Inside a present metadata object nil and empty are alike; an absent metadata
    versus a present ``{}`` is a change.

    Ports: ephemeralRunnerSetDesiredSpecChanged
    """
    if current is None or desired is None:
        return current is not desired
    if ephemeral_runner_set_actionable_spec_changed(current, desired):
        return True
    return _runner_metadata_changed(current, desired)


def _runner_metadata_changed(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Python only: `ephemeralRunnerMetadata` compared as a Go pointer (nil differs from present)."""
    live, want = (
        objects.spec(current).get("ephemeralRunnerMetadata"),
        objects.spec(desired).get("ephemeralRunnerMetadata"),
    )
    if (live is None) != (want is None):
        return True
    return not semantic_equal(live, want)


def next_actionable_revision(current: _Obj) -> int:
    """The revision to publish next: one above both the requested and the applied revision.

    Ports: nextActionableRevision
    """
    if current is None:
        return 1
    requested = int(objects.spec(current).get("actionableRevision") or 0)
    applied = int(objects.status(current).get("appliedActionableRevision") or 0)
    return requested + 1 if requested > applied else applied + 1


def ephemeral_runner_set_outdated_for_applied_revision(current: _Obj) -> bool:
    """Outdated, and already running the current spec (so the verdict is about this spec).

    Ports: ephemeralRunnerSetOutdatedForAppliedRevision
    """
    if current is None:
        return False
    status = objects.status(current)
    applied = int(status.get("appliedActionableRevision") or 0)
    requested = int(objects.spec(current).get("actionableRevision") or 0)
    return status.get("phase") == EphemeralRunnerSetPhase.OUTDATED and applied >= requested


def listener_spec_changed(current: _Obj, desired: _Obj) -> bool:
    """The listener specs differ, ignoring ``phase`` (only the scale set controller writes it) (#4682).

    Compared as `AutoscalingListenerSpec` models, so a struct-typed field (the four
    metadata blocks, metrics, proxy, TLS, vault, listener config) is a Go pointer: absent
    differs from present-but-empty, while empty maps and lists inside it equal absent ones.
    Neither argument is changed.

    Ports: listenerSpecChanged
    """
    if current is None or desired is None:
        return current is not desired
    return not semantic_equal(_listener_spec_without_phase(current), _listener_spec_without_phase(desired))


def _listener_spec_without_phase(listener: Mapping[str, Any]) -> Any:
    """Python only: the spec minus ``phase``, as a model; plain JSON when the model rejects it."""
    spec = {key: value for key, value in objects.spec(listener).items() if key != "phase"}
    try:
        return AutoscalingListenerSpec.model_validate(spec)
    except ValidationError:
        return spec


def listener_config_changed(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """The pod was built from another config secret version (or carries no record of it).

    A desired pod without the annotation never counts (tests only); a live pod without
    it does, once, after an upgrade.

    Ports: listenerConfigChanged
    """
    key = constants.ANNOTATION_KEY_LISTENER_CONFIG_RESOURCE_VERSION
    want = objects.annotations(desired).get(key, "")
    if not want:
        return False
    return bool(objects.annotations(current).get(key) != want)


def listener_pod_spec_requires_recreation(current: _Obj, desired: _Obj) -> bool:
    """Whether the live listener pod must be replaced to match the desired one.

    True when the config secret changed, when a desired container has fewer ports than
    the live one of that name, or when anything the desired spec sets differs (fields it
    leaves unset, which the API server defaults, are ignored).

    Ports: listenerPodSpecRequiresRecreation
    """
    if current is None or desired is None:
        return current is not desired
    if listener_config_changed(current, desired):
        return True
    live_containers = {c.get("name"): c for c in objects.spec(current).get("containers") or []}
    for container in objects.spec(desired).get("containers") or []:
        live = live_containers.get(container.get("name"))
        if live is not None and len(container.get("ports") or []) < len(live.get("ports") or []):
            return True
    return not semantic_derivative(objects.spec(desired), objects.spec(current))


def semantic_derivative(desired: Any, current: Any) -> bool:
    """Whether ``current`` agrees with everything ``desired`` sets; what ``desired`` leaves unset is ignored.

    Unset means absent, None, ``""`` or an empty collection. Maps compare only
    ``desired``'s keys; a list may be longer on the live side (admission plugins append
    tolerations, for example) and is compared on ``desired``'s length; resource
    quantities compare by value; other scalars exactly.

    Ports: equality.Semantic.DeepDerivative
    """
    if desired is None or desired == "" or (isinstance(desired, dict | list) and not desired):
        return True
    if isinstance(desired, dict):
        if not isinstance(current, dict):
            return False
        for key, value in desired.items():
            if key in QUANTITY_MAP_KEYS and isinstance(value, dict):
                live = current.get(key) or {}
                if not semantic_equal({key: value}, {key: {k: live.get(k) for k in value}}):
                    return False
            elif not semantic_derivative(value, current.get(key)):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(current, list) or len(desired) > len(current):
            return False
        return all(semantic_derivative(d, c) for d, c in zip(desired, current))
    if isinstance(desired, bool) or isinstance(current, bool):
        return desired is current
    return bool(desired == current)
