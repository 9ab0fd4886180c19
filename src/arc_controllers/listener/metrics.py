"""The listener's Prometheus metrics, with upstream's names, types, labels and buckets.

Default set (subsystem ``gha``)::

    gauges      gha_assigned_jobs, gha_running_jobs, gha_registered_runners, gha_busy_runners,
                gha_min_runners, gha_max_runners, gha_desired_runners, gha_idle_runners
                labels: enterprise, organization, repository, name, namespace
    counters    gha_started_jobs_total     labels: enterprise, organization, repository, job_name, event_name
                gha_completed_jobs_total   the same + job_result
    histograms  gha_job_startup_duration_seconds     like gha_started_jobs_total
                gha_job_execution_duration_seconds   like gha_completed_jobs_total

A ``metrics`` block in the config file replaces the whole set: only the metrics it
lists are registered, with its labels (and buckets); unknown names are logged and
skipped. Metrics live in their own registry, served over HTTP by `MetricsServer`.

Ports: cmd/ghalistener/metrics/metrics.go and workflow_ref_parser.go
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import structlog

if TYPE_CHECKING:
    from aiohttp import web
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = [
    "DEFAULT_RUNTIME_BUCKETS",
    "DISCARD",
    "METRIC_ASSIGNED_JOBS",
    "METRIC_BUSY_RUNNERS",
    "METRIC_COMPLETED_JOBS_TOTAL",
    "METRIC_DESIRED_RUNNERS",
    "METRIC_IDLE_RUNNERS",
    "METRIC_JOB_EXECUTION_DURATION_SECONDS",
    "METRIC_JOB_STARTUP_DURATION_SECONDS",
    "METRIC_MAX_RUNNERS",
    "METRIC_MIN_RUNNERS",
    "METRIC_REGISTERED_RUNNERS",
    "METRIC_RUNNING_JOBS",
    "METRIC_STARTED_JOBS_TOTAL",
    "Exporter",
    "JobCompletedInfo",
    "JobInfo",
    "MetricsRecorder",
    "MetricsServer",
    "StatisticsInfo",
    "WorkflowRefInfo",
    "default_metrics_config",
    "parse_workflow_ref",
]

log = structlog.get_logger(__name__, component="metrics exporter")  # lazy: configured at first use

METRIC_ASSIGNED_JOBS = "gha_assigned_jobs"
METRIC_RUNNING_JOBS = "gha_running_jobs"
METRIC_REGISTERED_RUNNERS = "gha_registered_runners"
METRIC_BUSY_RUNNERS = "gha_busy_runners"
METRIC_MIN_RUNNERS = "gha_min_runners"
METRIC_MAX_RUNNERS = "gha_max_runners"
METRIC_DESIRED_RUNNERS = "gha_desired_runners"
METRIC_IDLE_RUNNERS = "gha_idle_runners"
METRIC_STARTED_JOBS_TOTAL = "gha_started_jobs_total"
METRIC_COMPLETED_JOBS_TOTAL = "gha_completed_jobs_total"
METRIC_JOB_STARTUP_DURATION_SECONDS = "gha_job_startup_duration_seconds"
METRIC_JOB_EXECUTION_DURATION_SECONDS = "gha_job_execution_duration_seconds"

DEFAULT_RUNTIME_BUCKETS: tuple[float, ...] = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100,
    110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200, 1800, 2400, 3000, 3600,
)  # fmt: skip
"""Seconds; the buckets of both job histograms unless the config gives others."""

_GAUGE_HELP = {
    METRIC_ASSIGNED_JOBS: "Number of jobs assigned to this scale set.",
    METRIC_RUNNING_JOBS: "Number of jobs running (or about to be run).",
    METRIC_REGISTERED_RUNNERS: "Number of runners registered by the scale set.",
    METRIC_BUSY_RUNNERS: "Number of registered runners running a job.",
    METRIC_MIN_RUNNERS: "Minimum number of runners.",
    METRIC_MAX_RUNNERS: "Maximum number of runners.",
    METRIC_DESIRED_RUNNERS: "Number of runners desired by the scale set.",
    METRIC_IDLE_RUNNERS: "Number of registered runners not running a job.",
}
_COUNTER_HELP = {
    METRIC_STARTED_JOBS_TOTAL: "Total number of jobs started.",
    METRIC_COMPLETED_JOBS_TOTAL: "Total number of jobs completed.",
}
_HISTOGRAM_HELP = {
    METRIC_JOB_STARTUP_DURATION_SECONDS: "Time spent waiting for a workflow job to start on a runner of the scale set (seconds).",  # noqa: E501
    METRIC_JOB_EXECUTION_DURATION_SECONDS: "Time spent executing workflow jobs by the scale set (seconds).",
}

_SCALE_SET_LABELS = ["enterprise", "organization", "repository", "name", "namespace"]
_JOB_LABELS = ["enterprise", "organization", "repository", "job_name", "event_name"]
_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def default_metrics_config() -> dict[str, Any]:
    """Upstream's default ``metrics`` block, in the config file's shape.

    Ports: defaultMetrics
    """
    return {
        "counters": {
            METRIC_STARTED_JOBS_TOTAL: {"labels": list(_JOB_LABELS)},
            METRIC_COMPLETED_JOBS_TOTAL: {"labels": [*_JOB_LABELS, "job_result"]},
        },
        "gauges": {name: {"labels": list(_SCALE_SET_LABELS)} for name in _GAUGE_HELP},
        "histograms": {
            METRIC_JOB_STARTUP_DURATION_SECONDS: {
                "labels": list(_JOB_LABELS),
                "buckets": list(DEFAULT_RUNTIME_BUCKETS),
            },
            METRIC_JOB_EXECUTION_DURATION_SECONDS: {
                "labels": [*_JOB_LABELS, "job_result"],
                "buckets": list(DEFAULT_RUNTIME_BUCKETS),
            },
        },
    }


@dataclass(frozen=True, slots=True)
class WorkflowRefInfo:
    """What a ``job_workflow_ref`` says. Ports: WorkflowRefInfo"""

    name: str = ""
    """The workflow file name without ``.yml``/``.yaml``."""

    target: str = ""
    """``heads/<branch>``, ``tags/<tag>``, ``pull/<n>``, or ``""``."""


def parse_workflow_ref(workflow_ref: str) -> WorkflowRefInfo:
    """Split ``owner/repo/.github/workflows/ci.yml@refs/heads/main`` into name and target.

    Exactly one ``@`` is required; otherwise both parts are empty.

    Ports: ParseWorkflowRef
    """
    parts = workflow_ref.split("@")
    if not workflow_ref or len(parts) != 2:
        return WorkflowRefInfo()
    path, ref = parts
    file_name = posixpath.basename(path.rstrip("/")) or ("/" if path.startswith("/") else ".")
    name = file_name.removesuffix(".yml").removesuffix(".yaml")
    target = ""
    if ref.startswith("refs/heads/"):
        target = "heads/" + ref.removeprefix("refs/heads/")
    elif ref.startswith("refs/tags/"):
        target = "tags/" + ref.removeprefix("refs/tags/")
    elif ref.startswith("refs/pull/"):
        number, slash, _ = ref.removeprefix("refs/pull/").partition("/")
        if slash and number:
            target = "pull/" + number
    return WorkflowRefInfo(name=name, target=target)


class StatisticsInfo(Protocol):
    """The statistics the gauges read. Ports: scaleset.RunnerScaleSetStatistic"""

    @property
    def total_assigned_jobs(self) -> int: ...
    @property
    def total_running_jobs(self) -> int: ...
    @property
    def total_registered_runners(self) -> int: ...
    @property
    def total_busy_runners(self) -> int: ...
    @property
    def total_idle_runners(self) -> int: ...


class JobInfo(Protocol):
    """The job fields the job metrics read. Ports: scaleset.JobMessageBase"""

    @property
    def owner_name(self) -> str: ...
    @property
    def repository_name(self) -> str: ...
    @property
    def job_display_name(self) -> str: ...
    @property
    def job_workflow_ref(self) -> str: ...
    @property
    def event_name(self) -> str: ...
    @property
    def scale_set_assign_time(self) -> datetime | None: ...
    @property
    def runner_assign_time(self) -> datetime | None: ...


class JobCompletedInfo(JobInfo, Protocol):
    """Ports: scaleset.JobCompleted (as the metrics read it)"""

    @property
    def result(self) -> str: ...
    @property
    def finish_time(self) -> datetime | None: ...


class MetricsRecorder(Protocol):
    """The hooks the message loop calls. Ports: listener.MetricsRecorder"""

    def record_statistics(self, statistics: StatisticsInfo, /) -> None: ...
    def record_job_started(self, job: JobInfo, /) -> None: ...
    def record_job_completed(self, job: JobCompletedInfo, /) -> None: ...
    def record_desired_runners(self, count: int, /) -> None: ...


class _Discard:
    """A recorder that records nothing. Ports: metrics.Discard"""

    def record_static(self, min_runners: int, max_runners: int, /) -> None:
        """Ports: discard.RecordStatic"""

    def record_statistics(self, statistics: StatisticsInfo, /) -> None:
        """Ports: discard.RecordStatistics"""

    def record_job_started(self, job: JobInfo, /) -> None:
        """Ports: discard.RecordJobStarted"""

    def record_job_completed(self, job: JobCompletedInfo, /) -> None:
        """Ports: discard.RecordJobCompleted"""

    def record_desired_runners(self, count: int, /) -> None:
        """Ports: discard.RecordDesiredRunners"""


DISCARD = _Discard()
"""The recorder used when no metrics address is configured."""


def _unix(value: datetime | None) -> int:
    """Whole seconds since the epoch; the zero time (or None) is year 1, as Go's ``Unix()``.

    Python only: Go's time.Time.Unix.
    """
    if value is None:
        value = _ZERO_TIME
    elif value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int((value - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() // 1)


def _is_zero(value: datetime | None) -> bool:
    """Python only: Go's time.Time.IsZero for an optional datetime."""
    return value is None or _unix(value) == _unix(None)


class Exporter:
    """Holds the metrics in their own registry and records the listener's events.

    Ports: metrics.exporter (without the HTTP server, see `MetricsServer`)
    """

    def __init__(
        self,
        *,
        scale_set_name: str,
        scale_set_namespace: str,
        enterprise: str = "",
        organization: str = "",
        repository: str = "",
        metrics: Mapping[str, Any] | None = None,
    ) -> None:
        """Register the configured metrics (upstream's defaults when ``metrics`` is None).

        Ports: NewExporter and installMetrics
        """
        # Imported here: a listener without metrics never loads prometheus_client (issue 20).
        from prometheus_client import CollectorRegistry, Counter

        self.registry = CollectorRegistry(auto_describe=True)
        """The registry served on the metrics endpoint; nothing else is in it."""
        self._scale_set_labels = {
            "name": scale_set_name,
            "namespace": scale_set_namespace,
            "enterprise": enterprise,
            "organization": organization,
            "repository": repository,
        }
        config = default_metrics_config() if metrics is None else metrics
        self._gauges: dict[str, tuple[Gauge, list[str]]] = {}
        self._counters: dict[str, tuple[Counter, list[str]]] = {}
        self._histograms: dict[str, tuple[Histogram, list[str]]] = {}
        self._install(config)
        # What Go's promhttp handler registers next to the metrics it serves.
        Counter(
            "promhttp_metric_handler_errors",
            "Total number of internal errors encountered by the promhttp metric handler.",
            ["cause"],
            registry=self.registry,
        )

    def _install(self, config: Mapping[str, Any]) -> None:
        """Ports: installMetrics"""
        from prometheus_client import Counter, Gauge, Histogram

        for name, spec in sorted((config.get("gauges") or {}).items()):
            if name not in _GAUGE_HELP:
                log.error("unknown metric name", name=name, kind="gauge")
                continue
            labels = _labels_of(spec)
            self._gauges[name] = (Gauge(name, _GAUGE_HELP[name], labels, registry=self.registry), labels)
        for name, spec in sorted((config.get("counters") or {}).items()):
            if name not in _COUNTER_HELP:
                log.error("unknown metric name", name=name, kind="counter")
                continue
            labels = _labels_of(spec)
            self._counters[name] = (Counter(name, _COUNTER_HELP[name], labels, registry=self.registry), labels)
        for name, spec in sorted((config.get("histograms") or {}).items()):
            if name not in _HISTOGRAM_HELP:
                log.error("unknown metric name", name=name, kind="histogram")
                continue
            labels = _labels_of(spec)
            buckets = [float(b) for b in (spec or {}).get("buckets") or ()] or list(DEFAULT_RUNTIME_BUCKETS)
            histogram = Histogram(name, _HISTOGRAM_HELP[name], labels, registry=self.registry, buckets=buckets)
            self._histograms[name] = (histogram, labels)

    def _set_gauge(self, name: str, all_labels: Mapping[str, str], value: float) -> None:
        """Ports: exporter.setGauge"""
        if name in self._gauges:
            gauge, labels = self._gauges[name]
            _with(gauge, labels, all_labels).set(value)

    def _inc_counter(self, name: str, all_labels: Mapping[str, str]) -> None:
        """Ports: exporter.incCounter"""
        if name in self._counters:
            counter, labels = self._counters[name]
            _with(counter, labels, all_labels).inc()

    def _observe(self, name: str, all_labels: Mapping[str, str], value: float) -> None:
        """Ports: exporter.observeHistogram"""
        if name in self._histograms:
            histogram, labels = self._histograms[name]
            _with(histogram, labels, all_labels).observe(value)

    def _job_labels(self, job: JobInfo) -> dict[str, str]:
        """Ports: exporter.jobLabels"""
        ref = parse_workflow_ref(job.job_workflow_ref)
        return {
            "enterprise": self._scale_set_labels["enterprise"],
            "organization": job.owner_name,
            "repository": job.repository_name,
            "job_name": job.job_display_name,
            "job_workflow_ref": job.job_workflow_ref,
            "job_workflow_name": ref.name,
            "job_workflow_target": ref.target,
            "event_name": job.event_name,
        }

    def record_static(self, min_runners: int, max_runners: int, /) -> None:
        """Set the bounds once at start. Ports: exporter.RecordStatic"""
        self._set_gauge(METRIC_MAX_RUNNERS, self._scale_set_labels, float(max_runners))
        self._set_gauge(METRIC_MIN_RUNNERS, self._scale_set_labels, float(min_runners))

    def record_statistics(self, statistics: StatisticsInfo, /) -> None:
        """Ports: exporter.RecordStatistics"""
        labels = self._scale_set_labels
        self._set_gauge(METRIC_ASSIGNED_JOBS, labels, float(statistics.total_assigned_jobs))
        self._set_gauge(METRIC_RUNNING_JOBS, labels, float(statistics.total_running_jobs))
        self._set_gauge(METRIC_REGISTERED_RUNNERS, labels, float(statistics.total_registered_runners))
        self._set_gauge(METRIC_BUSY_RUNNERS, labels, float(statistics.total_busy_runners))
        self._set_gauge(METRIC_IDLE_RUNNERS, labels, float(statistics.total_idle_runners))

    def record_job_started(self, job: JobInfo, /) -> None:
        """Count the start; observe runner-assign minus scale-set-assign, whole seconds, no zero guard.

        Ports: exporter.RecordJobStarted
        """
        labels = self._job_labels(job)
        self._inc_counter(METRIC_STARTED_JOBS_TOTAL, labels)
        startup = _unix(job.runner_assign_time) - _unix(job.scale_set_assign_time)
        self._observe(METRIC_JOB_STARTUP_DURATION_SECONDS, labels, float(startup))

    def record_job_completed(self, job: JobCompletedInfo, /) -> None:
        """Count and time a completion, but only when the job ever had a runner.

        Ports: exporter.RecordJobCompleted
        """
        if _is_zero(job.runner_assign_time):
            return
        labels = {**self._job_labels(job), "job_result": job.result}
        self._inc_counter(METRIC_COMPLETED_JOBS_TOTAL, labels)
        execution = _unix(job.finish_time) - _unix(job.runner_assign_time)
        self._observe(METRIC_JOB_EXECUTION_DURATION_SECONDS, labels, float(execution))

    def record_desired_runners(self, count: int, /) -> None:
        """Ports: exporter.RecordDesiredRunners"""
        self._set_gauge(METRIC_DESIRED_RUNNERS, self._scale_set_labels, float(count))


def _labels_of(spec: Any) -> list[str]:
    """Python only: the ``labels`` list of one metric's config."""
    labels = (spec or {}).get("labels") or []
    return [str(label) for label in labels]


def _with(metric: Any, labels: Sequence[str], all_labels: Mapping[str, str]) -> Any:
    """Python only: the child for the configured labels; unknown label names get ``""``."""
    if not labels:
        return metric
    return metric.labels(**{label: all_labels.get(label, "") for label in labels})


class MetricsServer:
    """Serves a registry over HTTP until cancelled.

    Python only: Go's ``http.Server`` inside exporter.ListenAndServe; here an
    aiohttp site with a 5-second graceful stop.
    """

    def __init__(self, registry: CollectorRegistry, *, addr: str, endpoint: str = "/metrics") -> None:
        """Args:
        registry: What to serve.
        addr: ``host:port``; an empty host (``":8080"``) listens on all interfaces, port 0 picks one.
        endpoint: The HTTP path; ``/metrics`` when empty.

        Ports: the http.Server built in NewExporter (ExporterConfig.defaults for the endpoint)
        """
        host, _, port = addr.rpartition(":")
        self._host = host.strip("[]") or None
        self._port = int(port or 8080)
        self._endpoint = endpoint or "/metrics"
        self._registry = registry
        self.bound = asyncio.Event()
        """Set once the socket listens; `port` is then the real port."""
        self.port = self._port
        """The port served on (the picked one when 0 was asked for)."""

    async def serve(self) -> None:
        """Listen and serve until cancelled; then stop within 5 seconds.

        Raises:
            OSError: the address cannot be bound.

        Ports: exporter.ListenAndServe
        """
        from aiohttp import web  # the server half of aiohttp, loaded only when metrics are served

        app = web.Application()
        app.router.add_get(self._endpoint, self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
            for address in runner.addresses:
                if isinstance(address, tuple):
                    self.port = int(address[1])
                    break
            log.info("starting metrics server", addr=f"{self._host or ''}:{self.port}", endpoint=self._endpoint)
            self.bound.set()
            await asyncio.Event().wait()
        finally:
            log.info("stopping metrics server")
            async with asyncio.timeout(5.0):
                await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        """Python only: the exposition handler (promhttp.HandlerFor)."""
        from aiohttp import web
        from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

        body = generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
