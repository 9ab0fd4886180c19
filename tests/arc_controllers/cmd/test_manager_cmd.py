"""arc-controller's entry point: exit codes and one readable line; options mapped onto the manager."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from arc_controllers.cmd.manager import (
    UNCACHED_KINDS,
    build_version,
    cache_namespaces,
    controllers_options,
    main,
    manager_runtime_options,
)
from arc_controllers.cmd.options import parse_manager_options


@pytest.fixture(autouse=True)
def _keep_logging() -> Iterator[None]:
    """main() configures structlog for the process; give the next test the configuration back."""
    before = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**before)
    root.handlers[:] = handlers
    root.setLevel(level)


ENV = {"CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems", "CONTROLLER_MANAGER_CONTAINER_IMAGE": "img:1"}


@pytest.mark.parametrize(
    ("argv", "env", "code", "needle"),
    [
        (["--bogus"], ENV, 2, "flag provided but not defined: -bogus"),
        (["--auto-scaling-runner-set-only"], {}, 1, "CONTROLLER_MANAGER_POD_NAMESPACE is not set"),
        (["--auto-scaling-runner-set-only", "--log-format=xml"], ENV, 1, "invalid log format"),
        ([], ENV, 1, "legacy (summerwind) mode is not supported"),
        (
            ["--auto-scaling-runner-set-only", "--kubeconfig=/nonexistent/kubeconfig"],
            ENV,
            1,
            "unable to get kubeconfig",
        ),
    ],
)
def test_exit_codes_with_one_line(
    argv: list[str], env: dict[str, str], code: int, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv, env) == code
    err = capsys.readouterr().err
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-h"], ENV) == 0
    assert "-auto-scaling-runner-set-only" in capsys.readouterr().out


def test_cache_scope() -> None:
    def ns(*argv: str) -> list[str] | None:
        return cache_namespaces(parse_manager_options(["--auto-scaling-runner-set-only", *argv], ENV))

    assert ns() is None
    assert ns("--watch-single-namespace=runners") == ["runners", "arc-systems"]
    assert ns("--watch-namespace=w") == ["w"]
    assert ns("--watch-namespace=w", "--watch-single-namespace=runners") == ["w", "runners", "arc-systems"]


def test_manager_options_follow_the_flags() -> None:
    opts = parse_manager_options(
        [
            "--auto-scaling-runner-set-only",
            "--metrics-addr=0",
            "--health-probe-bind-address=:8081",
            "--enable-leader-election",
            "--leader-election-id=arc-gha-rs-controller",
            "--sync-period=2m",
        ],
        ENV,
    )
    runtime = manager_runtime_options(opts)
    assert runtime.metrics_bind_address == "0"
    assert runtime.health_probe_bind_address == ":8081"
    assert runtime.leader_election
    assert runtime.leader_election_id == "arc-gha-rs-controller"
    assert runtime.leader_election_namespace == "arc-systems"
    assert runtime.cache.sync_period == 120.0
    assert tuple(runtime.uncached) == UNCACHED_KINDS
    assert manager_runtime_options(opts, in_cluster_namespace="pod-ns").leader_election_namespace == "pod-ns"
    off = manager_runtime_options(parse_manager_options(["--health-probe-bind-address=0"], ENV))
    assert off.health_probe_bind_address == ""


def test_controllers_options_forward_listener_logging_and_concurrency() -> None:
    opts = parse_manager_options(
        [
            "--auto-scaling-runner-set-only",
            "--log-level=info",
            "--log-format=json",
            "--runner-max-concurrent-reconciles=7",
            "--auto-scaler-image-pull-secrets=pull",
            "--listener-metrics-addr=:9090",
        ],
        {**ENV, "LISTENER_ENTRYPOINT": "/custom"},
    )
    c = controllers_options(opts, version="0.14.2")
    assert (c.listener_log_level, c.listener_log_format) == ("info", "json")
    assert c.ephemeral_runner_concurrency == 7
    assert c.listener_image == "img:1"
    assert c.listener_image_pull_secrets == ("pull",)
    assert c.listener_metrics_addr == ":9090"
    assert c.listener_entrypoint == "/custom"
    assert c.build_version == "0.14.2"
    assert c.controller_namespace == "arc-systems"
    assert c.failed_runner_recycle_age == 300.0
    short = parse_manager_options(["--failed-runner-recycle-age=7s"], ENV)
    assert controllers_options(short, version="dev").failed_runner_recycle_age == 7.0


def test_build_version_from_the_environment() -> None:
    assert build_version({}) == "dev"
    assert build_version({"ARC_BUILD_VERSION": "0.14.2"}) == "0.14.2"


def test_log_lines_carry_no_secrets() -> None:
    import io
    import json

    from arc_controllers.cmd._logging import configure_manager_logging

    out = io.StringIO()
    configure_manager_logging("info", "json", stream=out)
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJl"
    structlog.get_logger("t").info("calling", github_token="ghp_secretsecret", header=f"Bearer {jwt}")
    line = json.loads(out.getvalue())
    assert line["github_token"] == "[redacted]"
    assert jwt not in out.getvalue()
    assert line["severity"] == "INFO"
    assert line["message"] == "calling"


def test_json_tracebacks_carry_no_frame_locals() -> None:
    """A failing request's locals (its headers, with the bearer token) stay out of the JSON log."""
    import io
    import json

    from arc_controllers.cmd._logging import configure_manager_logging

    out = io.StringIO()
    configure_manager_logging("info", "json", stream=out)

    def send(headers: dict[str, str]) -> None:
        raise PermissionError("403 Forbidden")

    try:
        send({"Authorization": "Bearer eyJhbGciOiJFUzI1NiJ9.payload"})
    except PermissionError:
        structlog.get_logger("t").exception("reconciler error")
    line = json.loads(out.getvalue())
    assert "eyJhbGciOiJFUzI1NiJ9" not in out.getvalue()
    [exc] = line["exception"]
    assert exc["exc_type"] == "PermissionError"
    assert all(not frame.get("locals") for frame in exc["frames"])
