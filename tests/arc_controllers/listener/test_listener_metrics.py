"""The listener metrics: names, types, labels, buckets, values, and the HTTP endpoint."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp
import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from arc_controllers.listener.metrics import (
    DEFAULT_RUNTIME_BUCKETS,
    Exporter,
    MetricsServer,
    WorkflowRefInfo,
    parse_workflow_ref,
)


@dataclass
class Stats:
    total_assigned_jobs: int = 3
    total_running_jobs: int = 2
    total_registered_runners: int = 4
    total_busy_runners: int = 2
    total_idle_runners: int = 2


@dataclass
class Job:
    owner_name: str = "my-org"
    repository_name: str = "repo"
    job_display_name: str = "build"
    job_workflow_ref: str = "my-org/repo/.github/workflows/ci.yml@refs/heads/main"
    event_name: str = "push"
    scale_set_assign_time: datetime | None = datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC)
    runner_assign_time: datetime | None = datetime(2026, 1, 2, 3, 4, 20, tzinfo=UTC)
    finish_time: datetime | None = datetime(2026, 1, 2, 3, 5, 20, tzinfo=UTC)
    result: str = "succeeded"


def families(exporter: Exporter) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(generate_latest(exporter.registry).decode())}


def samples(exporter: Exporter) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(generate_latest(exporter.registry).decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def new_exporter() -> Exporter:
    return Exporter(scale_set_name="set-abcde", scale_set_namespace="arc-runners", organization="my-org")


def test_default_names_types_and_labels() -> None:
    """Upstream's twelve metrics with their types and label names."""
    exporter = new_exporter()
    exporter.record_static(1, 5)
    exporter.record_statistics(Stats())
    exporter.record_desired_runners(4)
    exporter.record_job_started(Job())
    exporter.record_job_completed(Job())
    got = {name: f.type for name, f in families(exporter).items()}  # type: ignore[attr-defined]
    gauges = ["assigned_jobs", "running_jobs", "registered_runners", "busy_runners", "min_runners", "max_runners"]
    gauges += ["desired_runners", "idle_runners"]
    for name in gauges:
        assert got[f"gha_{name}"] == "gauge"
    assert got["gha_started_jobs"] == "counter"
    assert got["gha_completed_jobs"] == "counter"
    assert got["gha_job_startup_duration_seconds"] == "histogram"
    assert got["gha_job_execution_duration_seconds"] == "histogram"

    values = samples(exporter)
    scale_set = (
        ("enterprise", ""),
        ("name", "set-abcde"),
        ("namespace", "arc-runners"),
        ("organization", "my-org"),
        ("repository", ""),
    )
    assert values[("gha_min_runners", scale_set)] == 1
    assert values[("gha_max_runners", scale_set)] == 5
    assert values[("gha_assigned_jobs", scale_set)] == 3
    assert values[("gha_desired_runners", scale_set)] == 4
    job = (("enterprise", ""), ("event_name", "push"), ("job_name", "build"), ("organization", "my-org"))
    job += (("repository", "repo"),)
    assert values[("gha_started_jobs_total", job)] == 1
    assert values[("gha_job_startup_duration_seconds_sum", job)] == 14
    completed = tuple(sorted((*job, ("job_result", "succeeded"))))
    assert values[("gha_completed_jobs_total", completed)] == 1
    assert values[("gha_job_execution_duration_seconds_sum", completed)] == 60


def test_histograms_use_upstreams_buckets() -> None:
    """The default buckets run from 0.01 s to 3600 s, 45 of them."""
    exporter = new_exporter()
    exporter.record_job_started(Job())
    bounds = [
        float(s.labels["le"])
        for f in text_string_to_metric_families(generate_latest(exporter.registry).decode())
        for s in f.samples
        if s.name == "gha_job_startup_duration_seconds_bucket"
    ]
    assert bounds[:-1] == [float(b) for b in DEFAULT_RUNTIME_BUCKETS]
    assert len(DEFAULT_RUNTIME_BUCKETS) == 45


def test_completed_job_without_runner_is_not_counted() -> None:
    """A JobCompleted whose runnerAssignTime is zero records nothing (a job canceled before it ran)."""
    exporter = new_exporter()
    exporter.record_job_completed(Job(runner_assign_time=datetime(1, 1, 1, tzinfo=UTC), result="canceled"))
    exporter.record_job_completed(Job(runner_assign_time=None, result="canceled"))
    assert not [k for k in samples(exporter) if k[0].startswith("gha_completed_jobs")]


def test_user_config_replaces_the_set_with_its_labels_and_buckets() -> None:
    """Only listed metrics exist; any label is accepted; unknown names are skipped; buckets override."""
    exporter = Exporter(
        scale_set_name="s",
        scale_set_namespace="n",
        metrics={
            "counters": {"gha_started_jobs_total": {"labels": ["job_workflow_name", "job_workflow_target", "nope"]}},
            "gauges": {"gha_not_a_metric": {"labels": []}},
            "histograms": {"gha_job_startup_duration_seconds": {"labels": [], "buckets": [1, 10]}},
        },
    )
    exporter.record_job_started(Job())
    exporter.record_statistics(Stats())
    values = samples(exporter)
    key = ("gha_started_jobs_total", (("job_workflow_name", "ci"), ("job_workflow_target", "heads/main"), ("nope", "")))
    assert values[key] == 1
    assert ("gha_job_startup_duration_seconds_bucket", (("le", "10.0"),)) in values
    assert not [k for k in values if k[0] == "gha_assigned_jobs"]


# Upstream: cmd/ghalistener/metrics/workflow_ref_parser_test.go TestParseWorkflowRef
@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("org/repo/.github/workflows/ci.yml@refs/heads/main", WorkflowRefInfo("ci", "heads/main")),
        ("org/repo/.github/workflows/ci.yaml@refs/heads/feature/new", WorkflowRefInfo("ci", "heads/feature/new")),
        ("org/repo/.github/workflows/release.yml@refs/tags/v1.2.3", WorkflowRefInfo("release", "tags/v1.2.3")),
        ("org/repo/.github/workflows/pr.yml@refs/pull/123/merge", WorkflowRefInfo("pr", "pull/123")),
        ("org/repo/.github/workflows/pr.yml@refs/pull/123", WorkflowRefInfo("pr", "")),
        ("org/repo/.github/workflows/ci.yml@abc123", WorkflowRefInfo("ci", "")),
        ("org/repo/.github/workflows/ci.yml", WorkflowRefInfo()),
        ("a@b@c", WorkflowRefInfo()),
        ("", WorkflowRefInfo()),
    ],
)
def test_parse_workflow_ref(ref: str, expected: WorkflowRefInfo) -> None:
    """Name without extension; target keeps heads/, tags/ or pull/<n>."""
    assert parse_workflow_ref(ref) == expected


async def test_metrics_are_served_on_the_configured_endpoint() -> None:
    """The registry is served as Prometheus text on addr + endpoint, and the server stops on cancel."""
    exporter = new_exporter()
    exporter.record_static(0, 3)
    server = MetricsServer(exporter.registry, addr="127.0.0.1:0", endpoint="/custom")
    task = asyncio.create_task(server.serve(), name="metrics-server")
    try:
        await asyncio.wait_for(server.bound.wait(), 5)
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{server.port}/custom") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain")
            assert 'gha_max_runners{enterprise="",name="set-abcde"' in await resp.text()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
