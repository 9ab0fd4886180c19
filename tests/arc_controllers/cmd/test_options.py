"""The manager's flag and environment contract, as ARC's charts exercise it."""

from __future__ import annotations

import pytest

from arc_controllers.cmd.goflag import (
    FlagError,
    FlagSet,
    format_go_duration,
    parse_go_bool,
    parse_go_duration,
    parse_go_int,
)
from arc_controllers.cmd.options import StartupError, parse_manager_options

ENV = {"CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems", "CONTROLLER_MANAGER_CONTAINER_IMAGE": "arc:test"}

# Upstream: charts/gha-runner-scale-set-controller/tests/template_test.go (default render at HEAD)
HEAD_DEFAULT_ARGS = [
    "--auto-scaling-runner-set-only",
    "--log-level=debug",
    "--log-format=text",
    "--runner-max-concurrent-reconciles=2",
    "--listener-metrics-addr=0",
    "--listener-metrics-endpoint=",
    "--metrics-addr=0",
]


def test_head_chart_default_render_is_accepted() -> None:
    """The arguments the HEAD chart renders by default parse into scale-set mode."""
    opts = parse_manager_options(HEAD_DEFAULT_ARGS, ENV)
    assert opts.auto_scaling_runner_set_only
    assert opts.metrics_addr == "0"
    assert opts.listener_metrics_endpoint == ""
    assert opts.max_concurrent_reconciles["ephemeralrunner"] == 2
    assert opts.controller_namespace == "arc-systems"


def test_every_chart_version_is_accepted() -> None:
    """0.14.2's --update-strategy and later master's per-controller flags are all accepted."""
    args = [
        *HEAD_DEFAULT_ARGS,
        "--update-strategy=immediate",
        "--autoscaling-runner-set-max-concurrent-reconciles=3",
        "--ephemeral-runner-max-concurrent-reconciles=0",
        "--enable-leader-election",
        "--leader-election-id=arc-gha-rs-controller",
        "--auto-scaler-image-pull-secrets=a",
        "--auto-scaler-image-pull-secrets=b",
        "--exclude-label-propagation-prefix=argocd.argoproj.io/",
        "--health-probe-bind-address=:8081",
        "--workqueue-rate-limiter=typed_rate_limiter",
        "--k8s-client-rate-limiter-qps=50",
        "--watch-single-namespace=team-a",
    ]
    opts = parse_manager_options(args, ENV)
    assert opts.max_concurrent_reconciles["autoscalingrunnerset"] == 3
    assert opts.max_concurrent_reconciles["ephemeralrunner"] == 4  # <= 0 means the controller's default
    assert opts.auto_scaler_image_pull_secrets == ("a", "b")
    assert opts.enable_leader_election
    assert opts.k8s_client_rate_limiter_qps == 50


@pytest.mark.parametrize(
    ("args", "env", "code", "fragment"),
    [
        (["--no-such-flag"], ENV, 2, "flag provided but not defined: -no-such-flag"),
        (["--k8s-client-rate-limiter-qps=lots"], ENV, 2, 'invalid value "lots"'),
        (["--log-level"], ENV, 2, "flag needs an argument: -log-level"),
        (["---log-level=info"], ENV, 2, "bad flag syntax"),
        (["--log-format=xml"], ENV, 1, "invalid log format"),
        (["--log-level=-2"], ENV, 1, "invalid log level"),
        (["--auto-scaling-runner-set-only"], {}, 1, "CONTROLLER_MANAGER_POD_NAMESPACE is not set"),
        (
            ["--auto-scaling-runner-set-only"],
            {"CONTROLLER_MANAGER_POD_NAMESPACE": "x"},
            1,
            "CONTROLLER_MANAGER_CONTAINER_IMAGE is not set",
        ),
        (["--workqueue-rate-limiter=fancy"], ENV, 1, "unknown work queue rate limiter"),
        ([], {**ENV, "GITHUB_APP_ID": "abc"}, 1, "GITHUB_APP_ID is not an integer"),
        (["--help"], ENV, 0, "Usage of"),
    ],
)
def test_bad_input_exits_like_arc(args: list[str], env: dict[str, str], code: int, fragment: str) -> None:
    """Each refusal carries ARC's exit code and one readable line."""
    with pytest.raises(StartupError) as info:
        parse_manager_options(args, env)
    assert info.value.exit_code == code
    assert fragment in str(info.value)
    if code != 0:
        assert "\n" not in str(info.value)


def test_single_dash_space_separated_and_positional_stop() -> None:
    """-name equals --name, a value may follow as the next word, and parsing stops at a positional."""
    fs = FlagSet("t")
    fs.add("name", "string", "", "")
    fs.add("on", "bool", False, "")
    parsed = fs.parse(["-name", "x", "--on", "positional", "--name=y"])
    assert parsed.values == {"name": "x", "on": True}
    assert parsed.rest == ["positional", "--name=y"]
    assert parsed.given == frozenset({"name", "on"})


def test_bool_flag_does_not_take_the_next_word() -> None:
    """``--flag false`` is not a value: parsing stops at 'false' as Go's does."""
    fs = FlagSet("t")
    fs.add("on", "bool", False, "")
    parsed = fs.parse(["--on", "false"])
    assert parsed.values["on"] is True
    assert parsed.rest == ["false"]
    with pytest.raises(FlagError):
        fs.parse(["--on=maybe"])


def test_comma_list_splits_and_skips_empty_items() -> None:
    """--common-runner-labels appends and splits on commas, skipping empty items."""
    fs = FlagSet("t")
    fs.add("labels", "comma_list", (), "")
    assert fs.parse(["--labels=a,,b", "--labels=c"]).values["labels"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("text", "value"), [("10", 10), ("0x10", 16), ("0o17", 15), ("017", 15), ("0b11", 3), ("1_000", 1000), ("-5", -5)]
)
def test_go_integers(text: str, value: int) -> None:
    """Integers use base auto-detection, like strconv.ParseInt(s, 0, 64)."""
    assert parse_go_int(text) == value


@pytest.mark.parametrize("text", ["", "08", "1__0", "1_", "abc", "9223372036854775808"])
def test_go_integer_refusals(text: str) -> None:
    """What strconv.ParseInt refuses is refused."""
    with pytest.raises(ValueError):
        parse_go_int(text)


@pytest.mark.parametrize(
    ("text", "seconds"), [("1m", 60.0), ("30s", 30.0), ("1h2m", 3720.0), ("1.5h", 5400.0), ("0", 0.0), ("300ms", 0.3)]
)
def test_go_durations(text: str, seconds: float) -> None:
    """Durations follow time.ParseDuration."""
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (300.0, "5m0s"),
        (60.0, "1m0s"),
        (600.0, "10m0s"),
        (3600.0, "1h0m0s"),
        (3723.5, "1h2m3.5s"),
        (4.0, "4s"),
        (1.5, "1.5s"),
        (0.3, "300ms"),
        (0.0000015, "1.5µs"),
        (0.0, "0s"),
        (-90.0, "-1m30s"),
    ],
)
def test_go_duration_text(seconds: float, text: str) -> None:
    """Durations print as time.Duration.String does, and parse back to the same seconds."""
    assert format_go_duration(seconds) == text
    assert parse_go_duration(text) == pytest.approx(seconds)


def test_duration_defaults_print_as_go_durations() -> None:
    """``--help`` shows a duration flag's default as Go does (``5m0s``), not the seconds float."""
    flags = FlagSet("arc-controller")
    flags.add("failed-runner-recycle-age", "duration", 300.0, "Age.")
    assert "(default 5m0s)" in flags.usage()
    assert "300.0" not in flags.usage()


@pytest.mark.parametrize("text", ["", "1", "1x", "m"])
def test_go_duration_refusals(text: str) -> None:
    """A unit is required except for '0'."""
    with pytest.raises(ValueError):
        parse_go_duration(text)


def test_go_bools() -> None:
    """Exactly strconv.ParseBool's spellings are booleans."""
    assert all(parse_go_bool(t) for t in ("1", "t", "T", "TRUE", "true", "True"))
    assert not any(parse_go_bool(f) for f in ("0", "f", "F", "FALSE", "false", "False"))
    with pytest.raises(ValueError):
        parse_go_bool("yes")


def test_failed_runner_recycle_age_flag_arc_3014() -> None:
    """Our ``--failed-runner-recycle-age`` (a Go duration): 300 s by default, above 0 or exit 1."""
    assert parse_manager_options([], ENV).failed_runner_recycle_age == 300.0
    assert parse_manager_options(["--failed-runner-recycle-age=5s"], ENV).failed_runner_recycle_age == 5.0
    assert parse_manager_options(["--failed-runner-recycle-age", "2m"], ENV).failed_runner_recycle_age == 120.0
    for bad in ("0s", "-1s"):
        with pytest.raises(StartupError) as info:
            parse_manager_options([f"--failed-runner-recycle-age={bad}"], ENV)
        assert info.value.exit_code == 1
        assert "--failed-runner-recycle-age" in str(info.value)


@pytest.mark.parametrize("bad", ["300", "5x", "five minutes"])
def test_failed_runner_recycle_age_wants_a_go_duration_arc_3014(bad: str) -> None:
    """A recycle age that is not a Go duration (a bare number included) exits non-zero with one line naming it."""
    with pytest.raises(StartupError) as info:
        parse_manager_options([f"--failed-runner-recycle-age={bad}"], ENV)
    assert info.value.exit_code != 0
    text = str(info.value)
    assert "\n" not in text.strip()
    assert f'invalid value "{bad}" for flag -failed-runner-recycle-age' in text
