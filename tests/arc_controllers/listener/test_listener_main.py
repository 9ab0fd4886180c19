"""The arc-listener entry point: exit status and one-line errors; the scaler's client rate limits; session recovery."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from arc_controllers.actions import SessionRecovery
from arc_controllers.listener.__main__ import (
    CONFLICT_INTERVAL_ENV,
    DEFAULT_BURST,
    DEFAULT_QPS,
    REPUBLISH_INTERVAL_ENV,
    SESSION_RECOVERY,
    main,
    rate_limits,
    republish_interval,
    session_opener,
    session_recovery,
)
from arc_controllers.listener.config import ListenerConfig
from arc_controllers.listener.scaler import DEFAULT_REPUBLISH_INTERVAL

VALID_CONFIG: dict[str, Any] = {
    "configure_url": "https://github.com/my-org",
    "github_token": "ghp_secret",
    "ephemeral_runner_set_namespace": "ns",
    "ephemeral_runner_set_name": "set",
    "runner_scale_set_id": 1,
    "max_runners": 1,
}
"""A config file the listener accepts."""


def test_missing_config_path_variable_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without LISTENER_CONFIG_PATH the process prints upstream's line to stderr and exits 1."""
    monkeypatch.delenv("LISTENER_CONFIG_PATH", raising=False)
    assert main() == 1
    assert capsys.readouterr().err == "Error: LISTENER_CONFIG_PATH environment variable is not set\n"


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {"runner_scale_set_id": 0},
            'Failed to read config: failed to validate configuration: RunnerScaleSetId "0" is missing',
        ),
        ({"log_level": ""}, "Application returned an error: failed to create logger: invalid log level: "),
        ({"log_format": "yaml"}, "Application returned an error: failed to create logger: invalid log format: yaml"),
    ],
)
def test_bad_config_is_one_line_and_exit_1(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    line: str,
) -> None:
    """A bad config file or logger setting is one stderr line and exit status 1."""
    config = {**VALID_CONFIG, "log_level": "info", "log_format": "json", **changes}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    monkeypatch.setenv("LISTENER_CONFIG_PATH", str(path))
    assert main() == 1
    err = capsys.readouterr().err
    assert err == line + "\n"
    assert "ghp_secret" not in err


# Upstream: cmd/ghalistener/scaler/scaler_test.go TestEffectiveRateLimiterConfig (every subtest)
@pytest.mark.parametrize(
    ("scaler", "want", "level"),
    [
        ({"qps": 75, "burst": 150}, (75.0, 150), None),
        (None, (DEFAULT_QPS, DEFAULT_BURST), "debug"),
        ({"burst": 150}, (DEFAULT_QPS, 150), "debug"),
        ({"qps": 75}, (75.0, DEFAULT_BURST), "debug"),
        ({"qps": 0, "burst": 150}, (DEFAULT_QPS, 150), "warning"),
        ({"qps": 75, "burst": -1}, (75.0, DEFAULT_BURST), "warning"),
    ],
)
def test_effective_rate_limiter_config(
    scaler: dict[str, Any] | None, want: tuple[float, int], level: str | None
) -> None:
    """Configured values win; missing ones fall back quietly (debug), out-of-range ones with a warning."""
    with capture_logs() as logs:
        assert rate_limits(ListenerConfig(scaler=scaler)) == want
    assert [entry["log_level"] for entry in logs] == ([level] if level else [])


class SessionFactory:
    """Records how the opener asks the Actions client for a session."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, SessionRecovery | None]] = []

    async def message_session_client(
        self, scale_set_id: int, owner: str, *, recovery: SessionRecovery | None = None
    ) -> str:
        self.calls.append((scale_set_id, owner, recovery))
        return "session"


async def test_the_process_opens_its_session_with_recovery_arc_3209() -> None:
    """The process's session retries a 409 every 30 s up to 10 times and replaces a forgotten or broken session."""
    factory = SessionFactory()
    assert await session_opener(factory)(7, "pod-1") == "session"  # type: ignore[arg-type]
    assert factory.calls == [(7, "pod-1", SESSION_RECOVERY)]
    assert (SESSION_RECOVERY.conflict_interval, SESSION_RECOVERY.conflict_retries) == (30.0, 10)


def test_the_conflict_interval_can_be_set_in_the_environment_arc_3209() -> None:
    """LISTENER_SESSION_CONFLICT_RETRY_INTERVAL replaces the 30 s; everything else stays the process's."""
    assert session_recovery({}) is SESSION_RECOVERY
    recovery = session_recovery({CONFLICT_INTERVAL_ENV: "1.5"})
    assert recovery.conflict_interval == 1.5
    assert recovery.conflict_retries == SESSION_RECOVERY.conflict_retries


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_conflict_interval_exits_1_with_one_line(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A conflict interval that is not a number of seconds >= 0 is refused before anything starts."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(VALID_CONFIG))
    monkeypatch.setenv("LISTENER_CONFIG_PATH", str(path))
    monkeypatch.setenv(CONFLICT_INTERVAL_ENV, value)
    assert main() == 1
    assert capsys.readouterr().err == (
        f"Failed to read config: {CONFLICT_INTERVAL_ENV} must be a number of seconds >= 0, got {value!r}\n"
    )


def test_the_republish_interval_can_be_set_in_the_environment() -> None:
    """LISTENER_REPUBLISH_INTERVAL replaces the scaler's default; 0 is Go's patch on every poll."""
    assert republish_interval({}) == DEFAULT_REPUBLISH_INTERVAL > 0.0
    assert republish_interval({REPUBLISH_INTERVAL_ENV: "0"}) == 0.0
    assert republish_interval({REPUBLISH_INTERVAL_ENV: "50"}) == 50.0
    assert republish_interval({REPUBLISH_INTERVAL_ENV: "7.5"}) == 7.5


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_republish_interval_exits_1_with_one_line(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(VALID_CONFIG))
    monkeypatch.setenv("LISTENER_CONFIG_PATH", str(path))
    monkeypatch.setenv(REPUBLISH_INTERVAL_ENV, value)
    assert main() == 1
    assert capsys.readouterr().err == (
        f"Failed to read config: {REPUBLISH_INTERVAL_ENV} must be a number of seconds >= 0, got {value!r}\n"
    )
