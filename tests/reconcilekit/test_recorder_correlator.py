"""The event correlator: keys, aggregation of similar Events, repeat counting, the spam filter.

Ported from client-go's tools/record/events_cache_test.go behaviours (TestEventAggregatorByReasonFunc,
TestEventCorrelator, TestSpamFilter...), with our own cases.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from reconcilekit.recorder import CorrelatorOptions, EventCorrelator
from reconcilekit.recorder._event import generate_event_name, make_event, object_reference
from reconcilekit.recorder.correlator import aggregate_by_reason, event_key, format_time, spam_key

T0 = 1_790_000_000.0
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "runner-1", "namespace": "arc-runners", "uid": "u-1", "resourceVersion": "7"},
}


class Clock:
    """Seconds since the epoch that move only when told."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def _event(clock: Clock, *, reason: str = "Failed", message: str = "boom", obj: Any = POD) -> dict[str, Any]:
    return make_event(object_reference(obj), type="Warning", reason=reason, message=message, component="c", now=clock())


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_event_key_names_source_object_type_reason_and_message(clock: Clock) -> None:
    """Two Events differing only in message get different exact keys but one aggregate key."""
    a, b = _event(clock, message="one"), _event(clock, message="two")
    assert event_key(a) != event_key(b)
    assert aggregate_by_reason(a)[0] == aggregate_by_reason(b)[0]
    assert aggregate_by_reason(a)[1] == "one"
    assert event_key(a) == "cPodarc-runnersrunner-1u-1v1WarningFailedone"


def test_spam_key_ignores_reason_and_message(clock: Clock) -> None:
    """The spam filter counts every Event of a source about an object and type together."""
    assert spam_key(_event(clock, reason="A", message="x")) == spam_key(_event(clock, reason="B", message="y"))
    other = {**POD, "metadata": {**POD["metadata"], "uid": "u-2"}}
    assert spam_key(_event(clock)) != spam_key(_event(clock, obj=other))


def test_new_event_names_the_object_and_goes_to_its_namespace(clock: Clock) -> None:
    """A new Event: count 1, both timestamps now, source = component, name ``<object>.<hex ns>``."""
    event = _event(clock)
    assert event["metadata"] == {"name": f"runner-1.{int(T0 * 1e9):x}", "namespace": "arc-runners"}
    assert event["involvedObject"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "namespace": "arc-runners",
        "name": "runner-1",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == format_time(T0) == "2026-09-21T14:13:20Z"
    assert event["source"] == {"component": "c"}


def test_cluster_scoped_object_event_goes_to_default(clock: Clock) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert _event(clock, obj=node)["metadata"]["namespace"] == "default"


def test_event_name_falls_back_to_uuid_when_not_a_dns_subdomain() -> None:
    assert generate_event_name("ok", 255) == "ok.ff"
    odd = generate_event_name("Not_Valid", 255)
    assert len(odd) == 36
    assert odd.count("-") == 4


def test_object_without_kind_has_no_reference() -> None:
    with pytest.raises(ValueError):
        object_reference({"metadata": {"name": "x"}})


def test_repeat_of_an_event_patches_count_and_keeps_first_name(clock: Clock) -> None:
    """The same Event again: the first one's name and firstTimestamp, count 2, a patch of count and time."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock))
    first = correlator.correlate(_event(clock))
    assert first.patch is None
    assert first.event is not None
    stored = {**first.event, "metadata": {**first.event["metadata"], "resourceVersion": "11"}}
    correlator.update_state(stored)
    clock.now += 30
    second = correlator.correlate(_event(clock))
    assert second.event is not None
    assert second.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert second.event["metadata"]["resourceVersion"] == "11"
    assert second.event["firstTimestamp"] == format_time(T0)
    assert second.event["count"] == 2
    assert second.patch == {"count": 2, "lastTimestamp": format_time(T0 + 30), "message": "boom"}


def test_similar_events_aggregate_from_the_tenth_distinct_message(clock: Clock) -> None:
    """Ten Events of one reason about one object with ten messages: the tenth becomes an aggregate."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock))
    results = []
    for i in range(9):
        clock.now += 1
        results.append(correlator.correlate(_event(clock, message=f"attempt {i}")))
    assert [r.event["message"] for r in results if r.event] == [f"attempt {i}" for i in range(9)]
    assert all(r.patch is None for r in results)
    clock.now += 1
    tenth = correlator.correlate(_event(clock, message="attempt 9"))
    assert tenth.event is not None
    assert tenth.patch is None
    assert tenth.event["message"] == "(combined from similar events): attempt 9"
    assert tenth.event["count"] == 1
    assert tenth.event["reason"] == "Failed"
    clock.now += 1
    eleventh = correlator.correlate(_event(clock, message="attempt 10"))
    assert eleventh.event is not None
    assert eleventh.event["metadata"]["name"] == tenth.event["metadata"]["name"]
    assert eleventh.patch == {
        "count": 2,
        "lastTimestamp": format_time(clock.now),
        "message": "(combined from similar events): attempt 10",
    }


def test_repeating_one_message_never_aggregates(clock: Clock) -> None:
    """Aggregation counts distinct messages: one message twenty times is one counted Event."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock))
    counts = []
    for _ in range(20):
        result = correlator.correlate(_event(clock))
        assert result.event is not None
        assert not result.event["message"].startswith("(combined")
        counts.append(result.event["count"])
    assert counts == list(range(1, 21))


def test_other_reasons_aggregate_apart(clock: Clock) -> None:
    """Nine messages of one reason and nine of another: nothing is aggregated."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock))
    for i in range(9):
        for reason in ("A", "B"):
            result = correlator.correlate(_event(clock, reason=reason, message=str(i)))
            assert result.event is not None
            assert result.event["message"] == str(i)


def test_aggregation_restarts_after_the_interval(clock: Clock) -> None:
    """A similar Event more than 600 s after the previous one starts the count again."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock))
    for i in range(9):
        correlator.correlate(_event(clock, message=str(i)))
    clock.now += 601
    result = correlator.correlate(_event(clock, message="9"))
    assert result.event is not None
    assert result.event["message"] == "9"


def test_spam_filter_allows_a_burst_of_25_then_one_per_five_minutes(clock: Clock) -> None:
    """Source + object + type: 25 Events pass, the 26th is skipped; 300 s later one more passes."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock))
    passed = [not correlator.correlate(_event(clock, reason=f"R{i}")).skip for i in range(26)]
    assert passed == [True] * 25 + [False]
    clock.now += 299
    assert correlator.correlate(_event(clock, reason="late")).skip
    clock.now += 1
    assert not correlator.correlate(_event(clock, reason="later")).skip
    assert correlator.correlate(_event(clock, reason="again")).skip


def test_spam_filter_is_per_object(clock: Clock) -> None:
    """Another object has its own bucket."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock, burst=2))
    other = {**POD, "metadata": {**POD["metadata"], "name": "runner-2", "uid": "u-2"}}
    assert [correlator.correlate(_event(clock, reason=f"R{i}")).skip for i in range(3)] == [False, False, True]
    assert not correlator.correlate(_event(clock, obj=other)).skip


def test_skipped_repeats_still_count(clock: Clock) -> None:
    """A repeat the spam filter dropped still counts: the next one written carries the total."""
    correlator = EventCorrelator(CorrelatorOptions(clock=clock, burst=1, qps=1.0))
    assert correlator.correlate(_event(clock)).event is not None
    assert correlator.correlate(_event(clock)).skip
    clock.now += 1
    result = correlator.correlate(_event(clock))
    assert result.event is not None
    assert result.event["count"] == 3


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        CorrelatorOptions(burst=0)
    with pytest.raises(ValueError):
        CorrelatorOptions(qps=0)


def test_reference_of_a_pydantic_model() -> None:
    """A model is dumped by alias, as the patch helpers do: apiVersion, kind and metadata."""

    class Meta(BaseModel):
        name: str
        namespace: str | None = None
        uid: str | None = None

    class Thing(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        api_version: str = Field("example.io/v1", alias="apiVersion")
        kind: str = "Thing"
        metadata: Meta

    ref = object_reference(Thing(metadata=Meta(name="t", namespace="ns", uid="u")))
    assert ref == {"kind": "Thing", "apiVersion": "example.io/v1", "namespace": "ns", "name": "t", "uid": "u"}
