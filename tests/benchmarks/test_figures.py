"""The ARC benchmarks' pure helpers: audit-log parsing and attribution, figure aggregation, targets."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from benchmarks import _audit, _figures
from benchmarks._arcrun import ScaleSetPlan, ScaleSetRecord


def _event(user: str, verb: str, resource: str, *, sub: str = "", ns: str = "ns", ua: str = "reconcilekit") -> str:
    ref = {"resource": resource, "namespace": ns, **({"subresource": sub} if sub else {})}
    return json.dumps(
        {
            "stage": "ResponseComplete",
            "user": {"username": user},
            "userAgent": ua,
            "verb": verb,
            "objectRef": ref,
            "responseStatus": {"code": 200},
        }
    )


def test_audit_events_are_attributed_by_user_and_user_agent() -> None:
    lines = [
        _event("system:serviceaccount:arc-systems:ss-01-gha-rs-listener", "patch", "ephemeralrunnersets"),
        _event("admin", "create", "pods"),
        _event("admin", "patch", "ephemeralrunners", sub="status"),
        _event("admin", "get", "secrets", ua=_audit.SIM_USER_AGENT),
        _event("system:apiserver", "get", "namespaces"),
        '{"stage": "ResponseComplete", "user": {"username": "admin"}, "verb": "get"',  # torn last line
    ]
    requests = _audit.parse_lines(lines)
    assert [r.role for r in requests] == ["listener", "controller", "controller", "sim", "apiserver"]
    assert requests[2].resource == "ephemeralrunners/status"
    assert _audit.tally(requests) == {
        "patch ephemeralrunnersets": 1,
        "create pods": 1,
        "patch ephemeralrunners/status": 1,
        "get secrets": 1,
        "get namespaces": 1,
    }


def test_time_to_all_pods_and_drain() -> None:
    assert _figures.time_to_all_pods([3.0, 1.0, 2.0, 9.0], demand=3, burst_at=0.5) == 2.5
    assert math.isnan(_figures.time_to_all_pods([1.0], demand=2, burst_at=0.0))
    assert _figures.drain_seconds([10.0, 12.0], [11.0, 13.5]) == 1.5
    assert math.isnan(_figures.drain_seconds([], [1.0]))


def test_targets_are_met_within_the_limit_and_missed_above_or_on_nan() -> None:
    assert _figures.Target("x", 12.0, 12.0).met
    assert not _figures.Target("x", 12.1, 12.0).met
    assert not _figures.Target("x", math.nan, 12.0).met
    assert _figures.Target("drain", 4.3, 1.2, " s").line().lstrip().startswith("MISSED drain: 4.30 s")


def test_scale_set_rows_and_manager_totals() -> None:
    plan = ScaleSetPlan(name="ss-01", namespace="runners-01", jobs=2, max_runners=2, burst_at=1.0)
    rec = ScaleSetRecord(plan)
    rec.pods_seen = {"ss-01-runner-a": 2.0, "ss-01-runner-b": 3.5, "ss-01-runner-c": 4.0}
    rec.runners_created = {"ss-01-runner-a": 1.5, "ss-01-runner-b": 3.0, "ss-01-runner-c": 3.9}
    rec.runners_gone = {"ss-01-runner-a": 20.0, "ss-01-runner-b": 21.0, "ss-01-runner-c": 6.0}
    rec.job_ids = {1, 2}
    jobs = {
        1: SimpleNamespace(queued=1.0, started=3.0, done=19.0, result="succeeded"),
        2: SimpleNamespace(queued=1.0, started=5.0, done=20.5, result="succeeded"),
    }
    lines = [
        _event("system:serviceaccount:arc-systems:ss-01-gha-rs-listener", "patch", "ephemeralrunnersets"),
        _event("system:serviceaccount:arc-systems:ss-01-gha-rs-listener", "watch", "ephemeralrunnersets"),
        *[_event("admin", "delete", "ephemeralrunners", ns="runners-01")] * 3,
        _event("admin", "create", "pods", ns="runners-01"),
    ]
    result = SimpleNamespace(
        records=[rec],
        jobs=jobs,
        runners_with_job={"ss-01-runner-a", "ss-01-runner-b"},
        requests=_audit.parse_lines(lines),
        actions_requests={"generate_jit_config": 3, "get_message": 3},
        controller_cpu=0.3,
        listener_rss_by_scale_set={"ss-01": 64 * _figures.MIB},
    )
    (row,) = _figures.scale_set_rows(result)
    assert row["all_pods_s"] == 2.5  # the 2nd pod, from the burst at 1.0 s
    assert row["wait_p50"] == 3.0
    assert row["beyond_demand"] == 1
    assert row["drain_s"] == 0.5  # last runner gone 21.0, last job done 20.5
    assert row["listener_per_runner"] == 1 / 3  # the watch is left out
    assert row["listener_rss_mib"] == 64.0
    totals = _figures.manager_totals(result)
    assert totals["controller_per_runner"] == 4 / 3
    assert totals["deletes_per_runner"] == 1.0
    assert totals["actions_per_runner"] == 2.0
    assert math.isclose(totals["controller_cpu_per_runner"], 0.1)


def test_finish_gaps_measure_each_step_from_the_terminated_pod_status() -> None:
    def req(role: str, verb: str, resource: str, at: float, name: str = "r-1") -> _audit.Request:
        return _audit.Request(role, "u", verb, resource, "ns", name, 200, at)

    requests = [
        req("sim", "patch", "pods/status", 1.0),  # pending
        req("controller", "patch", "ephemeralrunners/status", 1.5),  # before the end: not counted
        req("sim", "patch", "pods/status", 10.0),  # terminated
        req("controller", "patch", "ephemeralrunners/status", 11.0),
        req("controller", "delete", "ephemeralrunners", 11.2),
        req("controller", "delete", "ephemeralrunners", 11.3),
        req("controller", "delete", "pods", 14.0),
        req("controller", "patch", "ephemeralrunners", 14.5),
        req("sim", "patch", "pods/status", 3.0, name="r-2"),  # a runner whose end was not seen
    ]
    gaps = _audit.finish_gaps(requests)
    assert gaps == {
        "succeeded patch": [1.0],
        "first delete": [pytest.approx(1.2)],
        "finalize start": [4.0],
        "finalizers removed": [4.5],
    }


def test_scale_up_targets_follow_the_latency_and_flag_a_size_the_anchors_are_not_for() -> None:
    from benchmarks.bench_scale_up import targets_for

    totals = {
        "total_per_runner": 11.0, "listener_per_runner": 3.0, "deletes_per_runner": 1.0, "drain_s": 1.0,
        "all_pods_s": 3.0, "beyond_demand": 0, "listener_peak_rss": 30 * _figures.MIB,
    }  # fmt: skip
    at_zero = {t.name: t for t in targets_for(totals, latency_ms=0, jobs=50)}
    assert "drain (issue: 50 runners)" in at_zero
    assert not any("beyond demand" in name for name in at_zero)
    assert all(t.met for t in at_zero.values())
    at_100 = [t.name for t in targets_for(totals, latency_ms=100, jobs=200)]
    assert "runners beyond demand at 100 ms" in at_100
    assert any("NOT COMPARABLE at 200" in name for name in at_100)
