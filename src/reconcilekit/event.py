"""The events that sources hand to predicates and event handlers.

Objects in events are the informer's cached objects, shared with every other
handler and with the cache: read them, never change them (copy first).

Ports: sigs.k8s.io/controller-runtime/pkg/event (event.go)
"""

from __future__ import annotations

from dataclasses import dataclass

from reconcilekit.client.interfaces import Object

__all__ = ["CreateEvent", "DeleteEvent", "GenericEvent", "UpdateEvent"]


@dataclass(frozen=True, slots=True)
class CreateEvent:
    """An object was created, or found by the informer's first list.

    Ports: event.CreateEvent
    """

    object: Object
    """The new object."""

    is_in_initial_list: bool = False
    """True when the object came from the informer's initial list, not from a watch event."""


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    """An object changed, or was replayed by a resync (then ``object_old is object_new``).

    Ports: event.UpdateEvent
    """

    object_old: Object
    """The object before the change."""

    object_new: Object
    """The object after the change."""


@dataclass(frozen=True, slots=True)
class DeleteEvent:
    """An object was deleted.

    Ports: event.DeleteEvent
    """

    object: Object
    """The last state known of the object; possibly stale when `delete_state_unknown`."""

    delete_state_unknown: bool = False
    """True when the watch missed the deletion and a relist found the object gone."""


@dataclass(frozen=True, slots=True)
class GenericEvent:
    """Something outside the API server asks for an object to be reconciled.

    Ports: event.GenericEvent
    """

    object: Object
    """The object to reconcile (only its name and namespace matter to most handlers)."""
