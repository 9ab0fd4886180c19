"""controller-runtime's controller metrics, on reconcilekit's registry.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/controller/metrics/metrics.go
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from reconcilekit.metrics import REGISTRY

RESULTS = ("success", "error", "requeue", "requeue_after")
"""Every value of the ``result`` label; all four start at 0 when a controller starts."""

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile",
    "Total number of reconciliations per controller",
    ("controller", "result"),
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
    ("controller",),
    registry=REGISTRY,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
    ("controller",),
    registry=REGISTRY,
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics",
    "Total number of reconciliation panics per controller",
    ("controller",),
    registry=REGISTRY,
)
RECONCILE_TIMEOUTS = Counter(
    "controller_runtime_reconcile_timeouts",
    "Total number of reconciliation timeouts per controller",
    ("controller",),
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ("controller",),
    buckets=(
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.25,
        1.5,
        1.75,
        2.0,
        2.5,
        3.0,
        3.5,
        4.0,
        4.5,
        5,
        6,
        7,
        8,
        9,
        10,
        15,
        20,
        25,
        30,
        40,
        50,
        60,
    ),
    registry=REGISTRY,
)
WORKER_COUNT = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ("controller",),
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ("controller",),
    registry=REGISTRY,
)


class ControllerMetrics:
    """One controller's series, resolved once (a label lookup per reconcile costs more than the count).

    Creating it makes every series exist at 0, as controller-runtime's initMetrics does.

    Ports: Controller.initMetrics and the series reconcileHandler and updateMetrics touch
    """

    def __init__(self, name: str, max_concurrent_reconciles: int) -> None:
        self.total = {result: RECONCILE_TOTAL.labels(name, result) for result in RESULTS}
        self.errors = RECONCILE_ERRORS.labels(name)
        self.terminal_errors = TERMINAL_RECONCILE_ERRORS.labels(name)
        self.panics = RECONCILE_PANICS.labels(name)
        self.timeouts = RECONCILE_TIMEOUTS.labels(name)
        self.time = RECONCILE_TIME.labels(name)
        self.active_workers = ACTIVE_WORKERS.labels(name)
        WORKER_COUNT.labels(name).set(max_concurrent_reconciles)
