"""``arc-controller`` (the image's ``/manager``): ARC's flags and environment → manager and controllers.

Start-up follows ARC's main.go: options (exit 2 on a bad flag, 1 on a bad environment),
logging, the kube config (exit 1 if none is found), the check of the served CRDs (exit 1,
unless ``--skip-crd-check``), the manager (metrics, probes, leader election, cache scope),
the controllers, then run until SIGTERM/SIGINT (exit 0) or a failure (exit 1). Every
failure is one readable line on stderr. ``arc-controller crds`` prints our CRDs instead.

`build_manager` and `setup_all_controllers` are shared with ``arc-sim``, which runs the
same manager in-process.

Ports: main.go of actions-runner-controller (scale-set mode)
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from arc_controllers.api.v1alpha1 import CONFIG_MAP, SECRET
from arc_controllers.cmd._logging import configure_manager_logging
from arc_controllers.cmd.crds import check_served_crds, print_crds
from arc_controllers.cmd.options import LOG_FORMATS, LOG_LEVELS, ManagerOptions, StartupError, parse_manager_options
from arc_controllers.controllers import Controllers, ControllersOptions, setup_controllers
from reconcilekit.cache.options import Options as CacheOptions
from reconcilekit.client.interfaces import WithWatch
from reconcilekit.config import RestConfig, load_rest_config
from reconcilekit.healthz import ping
from reconcilekit.manager import ControllerManager, LeaderElectionLostError, new_manager, run_until_signalled
from reconcilekit.manager import Options as ManagerRuntimeOptions

__all__ = [
    "BUILD_VERSION_ENV",
    "UNCACHED_KINDS",
    "build_manager",
    "build_version",
    "cache_namespaces",
    "controllers_options",
    "main",
    "manager_runtime_options",
    "run_manager",
    "setup_all_controllers",
]

log = structlog.get_logger("arc_controllers.cmd.manager")

BUILD_VERSION_ENV = "ARC_BUILD_VERSION"
"""Environment variable holding the build version (Go injects it at link time); ``dev`` when unset."""

UNCACHED_KINDS = (SECRET, CONFIG_MAP)
"""Kinds every read fetches from the API server (ARC's ``Client.Cache.DisableFor``)."""


def build_version(environ: Mapping[str, str] | None = None) -> str:
    """The build version the version gate compares chart labels with.

    Python only: Go sets ``build.Version`` with ``-ldflags``; the image sets `BUILD_VERSION_ENV`.
    """
    env = os.environ if environ is None else environ
    return env.get(BUILD_VERSION_ENV) or "dev"


def cache_namespaces(options: ManagerOptions) -> list[str] | None:
    """The namespaces the informers cover; ``None`` means cluster-wide.

    ``--watch-namespace`` first, then ``--watch-single-namespace`` adds its namespace and the
    controller's own.

    Ports: the cache DefaultNamespaces set-up of main.go
    """
    namespaces: list[str] = []
    if options.watch_namespace:
        namespaces.append(options.watch_namespace)
    if options.watch_single_namespace:
        namespaces += [options.watch_single_namespace, options.controller_namespace]
    unique = [ns for ns in dict.fromkeys(namespaces) if ns]
    return unique or None


def manager_runtime_options(options: ManagerOptions, *, in_cluster_namespace: str = "") -> ManagerRuntimeOptions:
    """reconcilekit manager options from ARC's options.

    Args:
        options: the parsed flags and environment.
        in_cluster_namespace: the pod's namespace for the Lease; "" falls back to the
            controller namespace (out of cluster, e.g. under ``arc-sim``).

    The cache freezes what it lists (`CacheOptions.freeze_listed_objects`): the controller
    keeps every runner and runner pod cached, and nothing in it relies on the cyclic
    collector for data it lists.

    Ports: the ctrl.Options literal of main.go
    Beyond: no ARC issue; issue 20: full garbage collections over the cache cost 0.75 s of a 2.2 s start-up.
    """
    metrics = "0" if options.metrics_addr == "0" else options.metrics_addr
    probe = options.health_probe_bind_address if options.health_probe_bind_address not in ("", "0") else ""
    return ManagerRuntimeOptions(
        cache=CacheOptions(
            default_namespaces=cache_namespaces(options),
            sync_period=options.sync_period,
            freeze_listed_objects=True,
        ),
        uncached=UNCACHED_KINDS,
        metrics_bind_address=metrics,
        health_probe_bind_address=probe,
        leader_election=options.enable_leader_election,
        leader_election_id=options.leader_election_id,
        leader_election_namespace=in_cluster_namespace or options.controller_namespace,
    )


def _service_account_namespace() -> str:
    """The pod's namespace from its service account mount; "" out of cluster. Python only."""
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def build_manager(
    options: ManagerOptions, rest_config: RestConfig, *, client: WithWatch | None = None
) -> ControllerManager:
    """The manager with ARC's client limits, cache scope, servers and health checks.

    Args:
        options: parsed flags and environment.
        rest_config: where the API server is.
        client: a prebuilt client (``arc-sim`` passes one to read its request counts); the
            caller then closes it.

    Raises:
        ValueError: leader election without an id.

    Ports: ctrl.NewManager and the AddHealthzCheck/AddReadyzCheck calls of main.go
    """
    rest = dataclasses.replace(
        rest_config,
        qps=float(options.k8s_client_rate_limiter_qps),
        burst=options.k8s_client_rate_limiter_burst,
    )
    runtime = manager_runtime_options(options, in_cluster_namespace=_service_account_namespace())
    mgr = new_manager(rest, runtime, client=client)
    if runtime.health_probe_bind_address:
        mgr.add_healthz_check("healthz", ping)
        mgr.add_readyz_check("readyz", ping)
    return mgr


def controllers_options(
    options: ManagerOptions, *, version: str | None = None, skip_name_validation: bool = False
) -> ControllersOptions:
    """The four controllers' options from the manager's flags and environment.

    The listener log level and format are forwarded only when ARC would forward them
    (a keyword level and ``text``/``json``); otherwise listeners keep their defaults.

    Ports: the reconciler literals of main.go (scale-set branch)
    """
    concurrency = options.max_concurrent_reconciles
    forward_logging = options.log_level in LOG_LEVELS and options.log_format in LOG_FORMATS
    extra: dict[str, Any] = {}
    if forward_logging:
        extra = {"listener_log_level": options.log_level, "listener_log_format": options.log_format}
    return ControllersOptions(
        controller_namespace=options.controller_namespace,
        listener_image=options.controller_image,
        listener_image_pull_secrets=options.auto_scaler_image_pull_secrets,
        listener_metrics_addr=options.listener_metrics_addr,
        listener_metrics_endpoint=options.listener_metrics_endpoint,
        publish_metrics=options.metrics_addr != "0",
        exclude_label_propagation_prefixes=options.exclude_label_propagation_prefixes,
        build_version=version if version is not None else build_version(),
        listener_entrypoint=options.listener_entrypoint,
        autoscaling_runner_set_concurrency=concurrency["autoscalingrunnerset"],
        autoscaling_listener_concurrency=concurrency["autoscalinglistener"],
        ephemeral_runner_set_concurrency=concurrency["ephemeralrunnerset"],
        ephemeral_runner_concurrency=concurrency["ephemeralrunner"],
        failed_runner_recycle_age=options.failed_runner_recycle_age,
        skip_name_validation=skip_name_validation,
        **extra,
    )


async def setup_all_controllers(
    mgr: ControllerManager, options: ManagerOptions, *, skip_name_validation: bool = False
) -> Controllers:
    """Register ARC's field indexers and its four controllers on ``mgr``.

    Args:
        skip_name_validation: allow a second manager with the same controller names in this
            process (``arc-sim`` restarts the controller in-process).

    Returns:
        The controllers; ``await controllers.aclose()`` after the manager stops.

    Ports: the SetupIndexers and SetupWithManager calls of main.go
    """
    return await setup_controllers(mgr, controllers_options(options, skip_name_validation=skip_name_validation))


async def run_manager(options: ManagerOptions, *, stop: asyncio.Event | None = None) -> None:
    """Load the kube config, build the manager, register the controllers, run until ``stop`` or a signal.

    Raises:
        StartupError: no kube config, served CRDs that are not ours, the manager or a controller
            cannot be built (exit 1).
        LeaderElectionLostError, Exception: the manager failed while running.

    Ports: main.go from the kube config to mgr.Start
    """
    try:
        rest = await load_rest_config(options.kubeconfig or None)
    except Exception as err:
        raise StartupError(f"unable to get kubeconfig: {err}", 1) from err
    if not options.skip_crd_check:
        await check_served_crds(rest, image=options.controller_image)
    try:
        mgr = build_manager(options, rest)
    except Exception as err:
        raise StartupError(f"unable to start manager: {err}", 1) from err
    try:
        controllers = await setup_all_controllers(mgr, options)
    except Exception as err:
        raise StartupError(f"unable to create controllers: {err}", 1) from err
    if options.update_strategy not in ("", "immediate"):
        log.info("--update-strategy is accepted for old charts and ignored", update_strategy=options.update_strategy)
    log.info(
        "starting manager",
        version=build_version(),
        metrics_addr=options.metrics_addr,
        health_probe_bind_address=options.health_probe_bind_address,
        leader_election=options.enable_leader_election,
        watch_single_namespace=options.watch_single_namespace,
        **{f"{name}_max_concurrent_reconciles": n for name, n in options.max_concurrent_reconciles.items()},
    )
    try:
        await run_until_signalled(mgr, stop)
    finally:
        await controllers.aclose()


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the manager (or with ``crds``, print our CRDs); return the exit status (0 clean stop, 1 failure, 2 bad flag).

    Ports: main
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["crds"]:
        return print_crds(args[1:])
    env = dict(os.environ if environ is None else environ)
    try:
        options = parse_manager_options(args, env)
    except StartupError as err:
        print(str(err), file=sys.stdout if err.exit_code == 0 else sys.stderr)
        return err.exit_code
    if not options.auto_scaling_runner_set_only:
        print(
            "legacy (summerwind) mode is not supported: pass --auto-scaling-runner-set-only",
            file=sys.stderr,
        )
        return 1
    configure_manager_logging(options.log_level, options.log_format)
    try:
        asyncio.run(run_manager(options))
    except StartupError as err:
        print(str(err), file=sys.stderr)
        return err.exit_code
    except LeaderElectionLostError:
        print("problem running manager: leader election lost", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except Exception as err:
        print(f"problem running manager: {err}", file=sys.stderr)
        return 1
    log.info("manager stopped")
    return 0
