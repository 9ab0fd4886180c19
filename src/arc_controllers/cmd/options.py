"""The manager binary's contract: every flag any ARC chart renders, and its environment.

`parse_manager_options` turns ``argv`` and the environment into `ManagerOptions`, or
raises `StartupError` carrying the exit code ARC's Go binary would use: 2 for a flag Go
refuses, 1 for a bad environment or a bad value that ARC checks itself, 0 for help.
It accepts the union of the flags of the 0.14.2 chart, HEAD (June 2026) and later
master (September 2026), so no official chart version crash-loops this manager.

Ports: main.go of actions-runner-controller (flag registration, the GITHUB_* envconfig
parse, the scale-set mode environment checks), and controllers/actions.github.com/options.go
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arc_controllers.cmd.goflag import FlagError, FlagSet, HelpRequested, parse_go_int

__all__ = [
    "DEFAULT_LISTENER_ENTRYPOINT",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "ManagerOptions",
    "StartupError",
    "manager_flag_set",
    "parse_manager_options",
]

DEFAULT_LISTENER_ENTRYPOINT = "/ghalistener"
"""The listener container's command unless ``LISTENER_ENTRYPOINT`` overrides it."""

LOG_LEVELS = ("debug", "info", "warn", "error")
"""Log levels ARC accepts in scale-set mode (its secondary logger refuses numeric levels)."""

LOG_FORMATS = ("text", "json")
"""Log formats ARC accepts; anything else exits 1."""

_WORKQUEUE_RATE_LIMITERS = ("", "bucket_rate_limiter", "typed_rate_limiter")

_CONCURRENCY_DEFAULTS = {
    "autoscaling-runner-set-max-concurrent-reconciles": 2,
    "autoscaling-listener-max-concurrent-reconciles": 2,
    "ephemeral-runner-set-max-concurrent-reconciles": 2,
    "ephemeral-runner-max-concurrent-reconciles": 4,
}


class StartupError(Exception):
    """The manager must exit before starting: ``str()`` is the one line to print.

    Attributes:
        exit_code: 2 for a flag Go's parser refuses, 1 for what ARC checks itself,
            0 when help was requested (then the message is the usage text).

    Python only: carries Go's exit codes out of the parser.
    """

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True, kw_only=True)
class ManagerOptions:
    """What the manager runs with, after flags and environment are parsed and checked.

    Ports: the variables main.go fills from flags and environment
    """

    auto_scaling_runner_set_only: bool = False
    """Scale-set mode; the charts always pass it. Without it ARC starts its legacy controllers."""

    log_level: str = "debug"
    """One of `LOG_LEVELS`."""

    log_format: str = "text"
    """One of `LOG_FORMATS`."""

    metrics_addr: str = ":8080"
    """Bind address of /metrics; "0" disables the server (and ARC's runner-count gauges)."""

    listener_metrics_addr: str = ":8080"
    """Written into every listener's config; "0" disables listener metrics."""

    listener_metrics_endpoint: str = "/metrics"
    """HTTP path of listener metrics, written into every listener's config."""

    health_probe_bind_address: str = ""
    """Bind address of /healthz and /readyz; "" or "0" means no probe server."""

    pprof_addr: str = ""
    """Bind address of the profiling server; "" or "0" means none."""

    enable_leader_election: bool = False
    """Run the controllers only while this replica holds the Lease."""

    leader_election_id: str = "actions-runner-controller"
    """Name of the Lease."""

    watch_single_namespace: str = ""
    """Cache only this namespace and the controller's own."""

    watch_namespace: str = ""
    """Cache only this namespace (legacy name; also honoured in scale-set mode)."""

    auto_scaler_image_pull_secrets: tuple[str, ...] = ()
    """Image pull secret names set on new AutoscalingListeners."""

    exclude_label_propagation_prefixes: tuple[str, ...] = ()
    """Label keys with any of these prefixes are not copied from parents to children."""

    k8s_client_rate_limiter_qps: int = 20
    """Client-side requests per second to the API server."""

    k8s_client_rate_limiter_burst: int = 30
    """Client-side burst of requests to the API server."""

    workqueue_rate_limiter: str = ""
    """"" or "bucket_rate_limiter": the default limiter; "typed_rate_limiter": per-item backoff only."""

    sync_period: float = 60.0
    """Seconds between informer resyncs."""

    kubeconfig: str = ""
    """Kubeconfig path; "" means KUBECONFIG, then in-cluster, then ~/.kube/config."""

    update_strategy: str = "immediate"
    """Accepted for the 0.14.2 chart; HEAD removed the behaviour, so it is logged and ignored."""

    max_concurrent_reconciles: Mapping[str, int] = field(default_factory=lambda: dict(_CONCURRENCY_DEFAULTS))
    """Workers per controller, keyed by controller name (autoscalingrunnerset, ...)."""

    controller_namespace: str = ""
    """``CONTROLLER_MANAGER_POD_NAMESPACE``: where listeners and their objects live."""

    controller_image: str = ""
    """``CONTROLLER_MANAGER_CONTAINER_IMAGE``: the default listener image."""

    listener_entrypoint: str = DEFAULT_LISTENER_ENTRYPOINT
    """``LISTENER_ENTRYPOINT``: the listener container's command."""

    skip_crd_check: bool = False
    """Start without checking the served CRDs against ours (`arc_controllers.cmd.crds`)."""

    failed_runner_recycle_age: float = 300.0
    """Seconds after its creation a Failed EphemeralRunner is deleted, so its set creates a fresh one.

    Beyond: ARC #3014 (#3685, #4258): upstream keeps Failed runners, holding their slots; flag
    ``--failed-runner-recycle-age`` (a Go duration, > 0) is ours.
    """


def manager_flag_set(program: str = "manager") -> FlagSet:
    """Every flag of every chart version, with ARC's types and defaults.

    Ports: the flag registrations of main.go (0.14.2, HEAD and later master)
    """
    fs = FlagSet(program)
    add = fs.add
    add("auto-scaling-runner-set-only", "bool", False, "Enable the AutoscalingRunnerSet controllers only.")
    add("log-level", "string", "debug", "The verbosity of the logging: debug, info, warn or error.")
    add("log-format", "string", "text", "The log format: text or json.")
    add("metrics-addr", "string", ":8080", "The address the metric endpoint binds to; 0 disables it.")
    add("listener-metrics-addr", "string", ":8080", "The address listeners serve metrics on; 0 disables.")
    add("listener-metrics-endpoint", "string", "/metrics", "The path of listener metrics.")
    add("health-probe-bind-address", "string", "", "The address the health probe endpoint binds to.")
    add("pprof-addr", "string", "", "The address the profiling endpoint binds to.")
    add("enable-leader-election", "bool", False, "Enable leader election for the controller manager.")
    add("leader-election-id", "string", "actions-runner-controller", "The name of the leader election Lease.")
    add("watch-single-namespace", "string", "", "Restrict the cache to one namespace and the controller's own.")
    add("watch-namespace", "string", "", "Restrict the cache to one namespace.")
    add("runner-max-concurrent-reconciles", "int", 2, "Workers of the EphemeralRunner controller (older charts).")
    for name, default in _CONCURRENCY_DEFAULTS.items():
        add(name, "int", default, f"Workers of one controller; <= 0 means {default}.")
    add("default-max-concurrent-reconciles", "int", 0, "Accepted and ignored (briefly existed upstream).")
    add("auto-scaler-image-pull-secrets", "list", (), "Image pull secret for listener pods (repeatable).")
    add("exclude-label-propagation-prefix", "list", (), "Label prefix not propagated to children (repeatable).")
    add("k8s-client-rate-limiter-qps", "int", 20, "Kubernetes client requests per second.")
    add("k8s-client-rate-limiter-burst", "int", 30, "Kubernetes client burst.")
    add("workqueue-rate-limiter", "string", "", "bucket_rate_limiter (default) or typed_rate_limiter.")
    add("sync-period", "duration", 60.0, "Informer resync period.")
    add("port", "int", 9443, "Webhook server port (no webhook runs in scale-set mode).")
    add("update-strategy", "string", "immediate", "Accepted for the 0.14.2 chart; ignored.")
    add("kubeconfig", "string", "", "Path to a kubeconfig; only required if out-of-cluster.")
    add("skip-crd-check", "bool", False, "Start without checking that the served CRDs keep our fields.")
    add(
        "failed-runner-recycle-age",
        "duration",
        300.0,
        "Age at which a Failed EphemeralRunner is deleted for its set to replace it (ours; > 0).",
    )
    # Legacy-mode flags: accepted (unknown flags exit 2) and ignored in scale-set mode.
    for legacy_name, legacy_default in (
        ("runner-image", "summerwind/actions-runner:latest"),
        ("docker-image", "docker:dind"),
        ("docker-gid", "1001"),
        ("docker-registry-mirror", ""),
        ("github-token", ""),
        ("github-enterprise-url", ""),
        ("github-url", ""),
        ("github-upload-url", ""),
        ("github-app-private-key", ""),
        ("github-basicauth-username", ""),
        ("github-basicauth-password", ""),
        ("runner-github-url", ""),
    ):
        add(legacy_name, "string", legacy_default, "Legacy mode only.")
    add("github-app-id", "int", 0, "Legacy mode only.")
    add("github-app-installation-id", "int", 0, "Legacy mode only.")
    add("runner-image-pull-secret", "list", (), "Legacy mode only (repeatable).")
    add("runner-status-update-hook", "bool", False, "Legacy mode only.")
    add("default-scale-down-delay", "duration", 600.0, "Legacy mode only.")
    add("common-runner-labels", "comma_list", (), "Legacy mode only (comma-separated, repeatable).")
    return fs


def parse_manager_options(argv: Sequence[str], environ: Mapping[str, str]) -> ManagerOptions:
    """Parse and check ``argv`` and ``environ`` in the order ARC's binary does.

    Order: the GITHUB_* environment (exit 1), the flags (exit 2, or 0 for help), the log
    format and level (exit 1), scale-set mode's CONTROLLER_MANAGER_POD_NAMESPACE
    (exit 1), CONTROLLER_MANAGER_CONTAINER_IMAGE (exit 1), the work-queue rate limiter
    (exit 1), then our own ``--failed-runner-recycle-age`` above 0 (exit 1).

    Raises:
        StartupError: with the message to print and the exit code.

    Ports: main.go's start-up sequence up to building the manager
    """
    _check_github_environment(environ)
    fs = manager_flag_set()
    try:
        parsed = fs.parse(argv)
    except HelpRequested:
        raise StartupError(fs.usage(), 0) from None
    except FlagError as exc:
        raise StartupError(f"{exc} (run with -h for the list of flags)", 2) from None

    values = parsed.values
    if values["log-format"] not in LOG_FORMATS:
        raise StartupError(f"invalid log format {values['log-format']!r}: want one of text, json", 1)
    if values["log-level"].lower() not in LOG_LEVELS:
        raise StartupError(f"invalid log level {values['log-level']!r}: want one of debug, info, warn, error", 1)
    scale_set_mode = bool(values["auto-scaling-runner-set-only"])
    namespace = environ.get("CONTROLLER_MANAGER_POD_NAMESPACE", "")
    image = environ.get("CONTROLLER_MANAGER_CONTAINER_IMAGE", "")
    if scale_set_mode and not namespace:
        raise StartupError("CONTROLLER_MANAGER_POD_NAMESPACE is not set", 1)
    if scale_set_mode and not image:
        raise StartupError("CONTROLLER_MANAGER_CONTAINER_IMAGE is not set", 1)
    if values["workqueue-rate-limiter"] not in _WORKQUEUE_RATE_LIMITERS:
        raise StartupError(
            f"unknown work queue rate limiter {values['workqueue-rate-limiter']!r}: "
            "want bucket_rate_limiter or typed_rate_limiter",
            1,
        )

    if not values["failed-runner-recycle-age"] > 0:
        raise StartupError(
            f"invalid --failed-runner-recycle-age {values['failed-runner-recycle-age']:g}s: want a duration above 0", 1
        )
    concurrency = _concurrency(values, parsed.given)
    metrics_addr = values["metrics-addr"] or ":8080"
    return ManagerOptions(
        auto_scaling_runner_set_only=scale_set_mode,
        log_level=values["log-level"].lower(),
        log_format=values["log-format"],
        metrics_addr=metrics_addr,
        listener_metrics_addr=values["listener-metrics-addr"],
        listener_metrics_endpoint=values["listener-metrics-endpoint"],
        health_probe_bind_address=values["health-probe-bind-address"],
        pprof_addr=values["pprof-addr"],
        enable_leader_election=values["enable-leader-election"],
        leader_election_id=values["leader-election-id"],
        watch_single_namespace=values["watch-single-namespace"],
        watch_namespace=values["watch-namespace"],
        auto_scaler_image_pull_secrets=tuple(values["auto-scaler-image-pull-secrets"]),
        exclude_label_propagation_prefixes=tuple(values["exclude-label-propagation-prefix"]),
        k8s_client_rate_limiter_qps=values["k8s-client-rate-limiter-qps"],
        k8s_client_rate_limiter_burst=values["k8s-client-rate-limiter-burst"],
        workqueue_rate_limiter=values["workqueue-rate-limiter"],
        sync_period=values["sync-period"],
        kubeconfig=values["kubeconfig"],
        update_strategy=values["update-strategy"],
        max_concurrent_reconciles=concurrency,
        controller_namespace=namespace,
        controller_image=image,
        listener_entrypoint=environ.get("LISTENER_ENTRYPOINT") or DEFAULT_LISTENER_ENTRYPOINT,
        skip_crd_check=values["skip-crd-check"],
        failed_runner_recycle_age=values["failed-runner-recycle-age"],
    )


def _check_github_environment(environ: Mapping[str, str]) -> None:
    """Exit 1 (StartupError) when GITHUB_APP_ID or GITHUB_APP_INSTALLATION_ID is set but not an integer."""
    for var in ("GITHUB_APP_ID", "GITHUB_APP_INSTALLATION_ID"):
        raw = environ.get(var, "")
        if raw:
            try:
                parse_go_int(raw)
            except ValueError:
                raise StartupError(f"processing environment variables: {var} is not an integer", 1) from None


def _concurrency(values: Mapping[str, Any], given: Collection[str]) -> dict[str, int]:
    """Workers per reconciler; the older ``--runner-max-concurrent-reconciles`` counts when the newer flag is absent."""
    concurrency = {
        "autoscalingrunnerset": _positive_or(values, "autoscaling-runner-set-max-concurrent-reconciles"),
        "autoscalinglistener": _positive_or(values, "autoscaling-listener-max-concurrent-reconciles"),
        "ephemeralrunnerset": _positive_or(values, "ephemeral-runner-set-max-concurrent-reconciles"),
        "ephemeralrunner": _positive_or(values, "ephemeral-runner-max-concurrent-reconciles"),
    }
    older_flag = "runner-max-concurrent-reconciles"
    if older_flag in given and "ephemeral-runner-max-concurrent-reconciles" not in given:
        concurrency["ephemeralrunner"] = max(1, int(values[older_flag]))
    return concurrency


def _positive_or(values: Mapping[str, object], name: str) -> int:
    value = values[name]
    assert isinstance(value, int)
    return value if value > 0 else _CONCURRENCY_DEFAULTS[name]
