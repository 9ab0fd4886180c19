"""envtest's environment variables: USE_EXISTING_CLUSTER and the Go-duration timeouts."""

from __future__ import annotations

import pytest

from reconcilekit.envtest import Environment, parse_duration, use_existing_cluster_from_env
from reconcilekit.envtest._settings import timeout_from_env


@pytest.mark.parametrize(
    ("text", "seconds"), [("20s", 20.0), ("1m30s", 90.0), ("1.5m", 90.0), ("500ms", 0.5), ("75", 75.0), ("2h", 7200.0)]
)
def test_parse_duration_reads_go_durations_and_plain_seconds(text: str, seconds: float) -> None:
    """Go duration strings and bare numbers both give seconds."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "10 s", "1x", "s"])
def test_parse_duration_rejects_other_text(text: str) -> None:
    """Anything else is a ValueError that quotes the text."""
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("value", "expected"), [("true", True), ("TRUE", True), (" True ", True), ("1", False), ("yes", False), ("", False)]
)
def test_use_existing_cluster_is_true_only_for_true(value: str, expected: bool) -> None:
    """Only 'true' in any case switches to an existing cluster, as upstream."""
    assert use_existing_cluster_from_env({"USE_EXISTING_CLUSTER": value}) is expected


def test_timeout_from_env_names_the_variable_on_bad_input() -> None:
    """A malformed timeout variable fails with its name; unset or empty means the default."""
    name = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"
    with pytest.raises(ValueError, match=name):
        timeout_from_env({name: "forever"}, name, 60.0)
    with pytest.raises(ValueError, match="positive"):
        timeout_from_env({name: "0s"}, name, 60.0)
    assert timeout_from_env({name: ""}, name, 60.0) == 60.0
    assert timeout_from_env({name: "2m"}, name, 60.0) == 120.0


def test_environment_reads_switch_and_options_without_starting() -> None:
    """The constructor reads the environment and starts nothing; an explicit option beats the variable."""
    env = Environment(environ={"USE_EXISTING_CLUSTER": "true"})
    assert env.use_existing_cluster
    assert not Environment(use_existing_cluster=False, environ={"USE_EXISTING_CLUSTER": "true"}).use_existing_cluster
    with pytest.raises(RuntimeError, match="not started"):
        _ = env.server


def test_bad_options_fail_where_they_are_written() -> None:
    """Non-positive timeouts and zero attempts are rejected by the constructor."""
    with pytest.raises(ValueError, match="start_attempts"):
        Environment(start_attempts=0)
    with pytest.raises(ValueError, match="crd_install_timeout"):
        Environment(crd_install_timeout=0)
