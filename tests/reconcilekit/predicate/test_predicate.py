"""reconcilekit.predicate: the rules of controller-runtime's predicates (semantics §6.6)."""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit import predicate
from reconcilekit.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent


def obj(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", **meta}}


def passes_all_but_updates(p: predicate.Predicate) -> bool:
    o = obj()
    return p.create(CreateEvent(o)) and p.delete(DeleteEvent(o)) and p.generic(GenericEvent(o))


def test_funcs_without_functions_pass_everything() -> None:
    """A missing function means true."""
    p = predicate.Funcs()
    assert passes_all_but_updates(p)
    assert p.update(UpdateEvent(obj(), obj()))


def test_funcs_call_the_given_function_per_event_type() -> None:
    """Each function judges its own event type only."""
    p = predicate.Funcs(create_func=lambda e: False, update_func=lambda e: e.object_new["metadata"]["name"] == "b")
    assert not p.create(CreateEvent(obj()))
    assert p.delete(DeleteEvent(obj()))
    assert p.update(UpdateEvent(obj(), obj(name="b")))


def test_new_predicate_funcs_filters_the_new_object_of_updates() -> None:
    """The filter sees event.object, and object_new for updates."""
    p = predicate.new_predicate_funcs(lambda o: o["metadata"]["name"] == "keep")
    keep, drop = obj(name="keep"), obj(name="drop")
    assert p.create(CreateEvent(keep))
    assert not p.create(CreateEvent(drop))
    assert p.update(UpdateEvent(drop, keep))
    assert not p.update(UpdateEvent(keep, drop))
    assert p.delete(DeleteEvent(keep))
    assert not p.generic(GenericEvent(drop))


@pytest.mark.parametrize(
    ("p", "old", "new", "expected"),
    [
        (predicate.GenerationChangedPredicate(), obj(generation=1), obj(generation=2), True),
        (
            predicate.GenerationChangedPredicate(),
            obj(generation=1, resourceVersion="1"),
            obj(generation=1, resourceVersion="2"),
            False,
        ),
        (predicate.ResourceVersionChangedPredicate(), obj(resourceVersion="1"), obj(resourceVersion="2"), True),
        (predicate.ResourceVersionChangedPredicate(), obj(resourceVersion="1"), obj(resourceVersion="1"), False),
        (predicate.LabelChangedPredicate(), obj(labels={"a": "1"}), obj(labels={"a": "2"}), True),
        (predicate.LabelChangedPredicate(), obj(labels={"a": "1"}), obj(labels={"a": "1"}), False),
        (predicate.LabelChangedPredicate(), obj(), obj(labels={}), False),
        (predicate.LabelChangedPredicate(), obj(labels=None), obj(labels={}), False),
        (predicate.AnnotationChangedPredicate(), obj(annotations={"a": "1"}), obj(), True),
        (predicate.AnnotationChangedPredicate(), obj(), obj(annotations={}), False),
    ],
)
def test_changed_predicates_judge_updates(p: predicate.Predicate, old: Any, new: Any, expected: bool) -> None:
    """Generation, resourceVersion, labels, annotations: pass iff changed (nil equals empty)."""
    assert p.update(UpdateEvent(old, new)) is expected
    assert passes_all_but_updates(p)


@pytest.mark.parametrize(
    "p",
    [
        predicate.GenerationChangedPredicate(),
        predicate.ResourceVersionChangedPredicate(),
        predicate.LabelChangedPredicate(),
        predicate.AnnotationChangedPredicate(),
    ],
)
def test_changed_predicates_drop_updates_missing_an_object(p: predicate.Predicate) -> None:
    """An update without its old or new object fails all four."""
    assert not p.update(UpdateEvent(None, obj()))  # type: ignore[arg-type]
    assert not p.update(UpdateEvent(obj(), None))  # type: ignore[arg-type]


def test_a_resync_is_dropped_by_generation_and_resource_version_predicates() -> None:
    """A resync is Update(obj, obj): both drop it."""
    o = obj(generation=3, resourceVersion="7")
    assert not predicate.GenerationChangedPredicate().update(UpdateEvent(o, o))
    assert not predicate.ResourceVersionChangedPredicate().update(UpdateEvent(o, o))


def test_and_or_not() -> None:
    """and_: all (empty true); or_: any (empty false); not_: negation."""
    yes, no = predicate.Funcs(), predicate.Funcs(create_func=lambda e: False)
    event = CreateEvent(obj())
    assert predicate.and_().create(event)
    assert predicate.and_(yes, yes).create(event)
    assert not predicate.and_(yes, no).create(event)
    assert not predicate.or_().create(event)
    assert predicate.or_(no, yes).create(event)
    assert not predicate.or_(no, no).create(event)
    assert predicate.not_(no).create(event)
    assert not predicate.not_(yes).create(event)


def test_and_stops_at_the_first_false() -> None:
    """Later predicates are not evaluated."""
    asked: list[str] = []
    first = predicate.Funcs(update_func=lambda e: asked.append("first") or False)
    second = predicate.Funcs(update_func=lambda e: asked.append("second") or True)
    assert not predicate.and_(first, second).update(UpdateEvent(obj(), obj()))
    assert asked == ["first"]


def test_label_selector_predicate_matches_labels_and_expressions() -> None:
    """matchLabels and the four operators; an empty selector matches all."""
    p = predicate.label_selector_predicate(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "team", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    good = obj(labels={"app": "web", "tier": "front", "team": "x"})
    assert p.create(CreateEvent(good))
    assert not p.create(CreateEvent(obj(labels={**good["metadata"]["labels"], "env": "dev"})))
    assert not p.create(CreateEvent(obj(labels={**good["metadata"]["labels"], "legacy": ""})))
    assert not p.create(CreateEvent(obj(labels={"app": "web", "tier": "mid", "team": "x"})))
    assert not p.create(CreateEvent(obj(labels={"app": "web", "tier": "front"})))
    assert not p.update(UpdateEvent(good, obj()))
    assert predicate.label_selector_predicate({}).create(CreateEvent(obj()))


@pytest.mark.parametrize(
    "expression",
    [
        {"key": "a", "operator": "Bogus"},
        {"key": "a", "operator": "In", "values": []},
        {"key": "a", "operator": "Exists", "values": ["x"]},
    ],
)
def test_label_selector_predicate_rejects_bad_selectors(expression: dict[str, Any]) -> None:
    """A selector that cannot be built fails at once."""
    with pytest.raises(ValueError):
        predicate.label_selector_predicate({"matchExpressions": [expression]})
