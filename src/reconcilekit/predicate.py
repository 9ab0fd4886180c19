"""Predicates: filters that decide which events reach an event handler.

A predicate answers one question per event type. Sources run a watch's
predicates in order and drop the event at the first ``False``. The four
``*Changed`` predicates pass every create, delete and generic event and
judge only updates; an update missing its old or new object fails them.

Ports: sigs.k8s.io/controller-runtime/pkg/predicate (predicate.go)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from reconcilekit.client.interfaces import Object
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

__all__ = [
    "AnnotationChangedPredicate",
    "Funcs",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Predicate",
    "ResourceVersionChangedPredicate",
    "and_",
    "label_selector_predicate",
    "new_predicate_funcs",
    "not_",
    "or_",
]

_log = structlog.get_logger(__name__)


class Predicate(Protocol):
    """**Protocol:** whether an event should reach the handler.

    Ports: predicate.Predicate
    """

    def create(self, event: CreateEvent, /) -> bool:
        """True to pass the create event on."""
        ...

    def update(self, event: UpdateEvent, /) -> bool:
        """True to pass the update event on."""
        ...

    def delete(self, event: DeleteEvent, /) -> bool:
        """True to pass the delete event on."""
        ...

    def generic(self, event: GenericEvent, /) -> bool:
        """True to pass the generic event on."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Funcs:
    """A predicate from functions; a missing function lets its events through.

    Example::

        only_named_a = Funcs(create_func=lambda e: e.object["metadata"]["name"] == "a")

    Ports: predicate.Funcs
    """

    create_func: Callable[[CreateEvent], bool] | None = None
    """Judges create events; ``None`` passes them all."""

    update_func: Callable[[UpdateEvent], bool] | None = None
    """Judges update events; ``None`` passes them all."""

    delete_func: Callable[[DeleteEvent], bool] | None = None
    """Judges delete events; ``None`` passes them all."""

    generic_func: Callable[[GenericEvent], bool] | None = None
    """Judges generic events; ``None`` passes them all."""

    def create(self, event: CreateEvent, /) -> bool:
        """Ports: Funcs.Create"""
        return self.create_func is None or self.create_func(event)

    def update(self, event: UpdateEvent, /) -> bool:
        """Ports: Funcs.Update"""
        return self.update_func is None or self.update_func(event)

    def delete(self, event: DeleteEvent, /) -> bool:
        """Ports: Funcs.Delete"""
        return self.delete_func is None or self.delete_func(event)

    def generic(self, event: GenericEvent, /) -> bool:
        """Ports: Funcs.Generic"""
        return self.generic_func is None or self.generic_func(event)


def new_predicate_funcs(filter: Callable[[Object], bool], /) -> Funcs:
    """A predicate that applies ``filter`` to the event's object (the new object of an update).

    Ports: predicate.NewPredicateFuncs
    """
    return Funcs(
        create_func=lambda e: filter(e.object),
        update_func=lambda e: filter(e.object_new),
        delete_func=lambda e: filter(e.object),
        generic_func=lambda e: filter(e.object),
    )


class _UpdateOnly:
    """Python only: passes create, delete and generic; subclasses judge updates."""

    def create(self, event: CreateEvent, /) -> bool:
        return True

    def delete(self, event: DeleteEvent, /) -> bool:
        return True

    def generic(self, event: GenericEvent, /) -> bool:
        return True

    def _both(self, event: UpdateEvent) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """The old and new metadata, or ``None`` (logged) when an object is missing."""
        old, new = event.object_old, event.object_new
        if not isinstance(old, Mapping):
            _log.error("update event has no old object", predicate=type(self).__name__)
            return None
        if not isinstance(new, Mapping):
            _log.error("update event has no new object", predicate=type(self).__name__)
            return None
        return old.get("metadata") or {}, new.get("metadata") or {}


class ResourceVersionChangedPredicate(_UpdateOnly):
    """Passes updates whose ``metadata.resourceVersion`` changed: drops resyncs only.

    Ports: predicate.ResourceVersionChangedPredicate
    """

    def update(self, event: UpdateEvent, /) -> bool:
        """Ports: ResourceVersionChangedPredicate.Update"""
        both = self._both(event)
        return both is not None and both[0].get("resourceVersion") != both[1].get("resourceVersion")


class GenerationChangedPredicate(_UpdateOnly):
    """Passes updates whose ``metadata.generation`` changed.

    Drops resyncs and metadata-only changes, and, for kinds with a status
    subresource, status-only changes (generation moves only with the spec).

    Ports: predicate.GenerationChangedPredicate
    """

    def update(self, event: UpdateEvent, /) -> bool:
        """Ports: GenerationChangedPredicate.Update"""
        both = self._both(event)
        return both is not None and both[0].get("generation") != both[1].get("generation")


class LabelChangedPredicate(_UpdateOnly):
    """Passes updates whose labels changed; no labels and empty labels are equal.

    Ports: predicate.LabelChangedPredicate
    """

    def update(self, event: UpdateEvent, /) -> bool:
        """Ports: LabelChangedPredicate.Update"""
        both = self._both(event)
        return both is not None and (both[0].get("labels") or {}) != (both[1].get("labels") or {})


class AnnotationChangedPredicate(_UpdateOnly):
    """Passes updates whose annotations changed; no annotations and empty ones are equal.

    Ports: predicate.AnnotationChangedPredicate
    """

    def update(self, event: UpdateEvent, /) -> bool:
        """Ports: AnnotationChangedPredicate.Update"""
        both = self._both(event)
        return both is not None and (both[0].get("annotations") or {}) != (both[1].get("annotations") or {})


class _And:
    """Python only: the value `and_` returns."""

    def __init__(self, predicates: Sequence[Predicate]) -> None:
        self._predicates = tuple(predicates)

    def create(self, event: CreateEvent, /) -> bool:
        return all(p.create(event) for p in self._predicates)

    def update(self, event: UpdateEvent, /) -> bool:
        return all(p.update(event) for p in self._predicates)

    def delete(self, event: DeleteEvent, /) -> bool:
        return all(p.delete(event) for p in self._predicates)

    def generic(self, event: GenericEvent, /) -> bool:
        return all(p.generic(event) for p in self._predicates)


class _Or:
    """Python only: the value `or_` returns."""

    def __init__(self, predicates: Sequence[Predicate]) -> None:
        self._predicates = tuple(predicates)

    def create(self, event: CreateEvent, /) -> bool:
        return any(p.create(event) for p in self._predicates)

    def update(self, event: UpdateEvent, /) -> bool:
        return any(p.update(event) for p in self._predicates)

    def delete(self, event: DeleteEvent, /) -> bool:
        return any(p.delete(event) for p in self._predicates)

    def generic(self, event: GenericEvent, /) -> bool:
        return any(p.generic(event) for p in self._predicates)


class _Not:
    """Python only: the value `not_` returns."""

    def __init__(self, predicate: Predicate) -> None:
        self._predicate = predicate

    def create(self, event: CreateEvent, /) -> bool:
        return not self._predicate.create(event)

    def update(self, event: UpdateEvent, /) -> bool:
        return not self._predicate.update(event)

    def delete(self, event: DeleteEvent, /) -> bool:
        return not self._predicate.delete(event)

    def generic(self, event: GenericEvent, /) -> bool:
        return not self._predicate.generic(event)


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event when every predicate does (evaluated in order, stopping at the first no).

    ``and_()`` passes everything. Ports: predicate.And
    """
    return _And(predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event when any predicate does (in order, stopping at the first yes).

    ``or_()`` passes nothing. Ports: predicate.Or
    """
    return _Or(predicates)


def not_(predicate: Predicate, /) -> Predicate:
    """Passes an event exactly when ``predicate`` does not. Ports: predicate.Not"""
    return _Not(predicate)


_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def label_selector_predicate(selector: Mapping[str, Any], /) -> Predicate:
    """A predicate that passes objects whose labels match a ``metav1.LabelSelector``.

    Args:
        selector: ``{"matchLabels": {k: v}, "matchExpressions": [{"key", "operator",
            "values"}]}``; operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``.
            An empty selector matches every object.

    Raises:
        ValueError: an unknown operator, ``In``/``NotIn`` without values, or
            ``Exists``/``DoesNotExist`` with values.

    Ports: predicate.LabelSelectorPredicate (with metav1.LabelSelectorAsSelector)
    """
    match_labels = dict(selector.get("matchLabels") or {})
    expressions: list[tuple[str, str, frozenset[str]]] = []
    for expression in selector.get("matchExpressions") or ():
        key, operator = str(expression.get("key", "")), str(expression.get("operator", ""))
        values = frozenset(str(v) for v in expression.get("values") or ())
        if operator not in _OPERATORS:
            raise ValueError(f"{operator!r} is not a valid label selector operator")
        if operator in ("In", "NotIn") and not values:
            raise ValueError(f"label selector operator {operator} on {key!r} needs values")
        if operator in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"label selector operator {operator} on {key!r} takes no values")
        expressions.append((key, operator, values))

    def matches(obj: Object) -> bool:
        labels: Mapping[str, str] = (obj.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in match_labels.items()):
            return False
        for key, operator, values in expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True

    return new_predicate_funcs(matches)
