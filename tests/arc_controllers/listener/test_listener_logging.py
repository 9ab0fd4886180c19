"""The listener's logging set-up."""

from __future__ import annotations

import io
import json

import pytest
import structlog
from structlog.testing import capture_logs

from arc_controllers.listener._logging import configure_logging, parse_log_level, redact_secrets


def test_tokens_never_reach_a_log_line() -> None:
    """A token logged by mistake is redacted before any renderer sees it."""
    with capture_logs(processors=[redact_secrets]) as logs:
        structlog.get_logger().info("session", message_queue_access_token="mq-secret", github_token="ghp", name="x")
    assert logs == [
        {
            "event": "session",
            "message_queue_access_token": "[redacted]",
            "github_token": "[redacted]",
            "name": "x",
            "log_level": "info",
        }
    ]


@pytest.mark.parametrize(("level", "ok"), [("DEBUG", True), ("warn", True), ("", False), ("trace", False)])
def test_log_levels_match_upstreams(level: str, ok: bool) -> None:
    """debug, info, warn and error in any case; anything else (empty included) is an error."""
    if ok:
        parse_log_level(level)
    else:
        with pytest.raises(ValueError, match="invalid log level"):
            parse_log_level(level)


def test_json_format_writes_one_object_per_line_and_text_is_case_sensitive() -> None:
    """json renders one JSON object per line; an unknown format is refused."""
    out = io.StringIO()
    try:
        configure_logging("info", "json", stream=out)
        structlog.get_logger("t").info("hello", token="t0k3n")
        line = json.loads(out.getvalue().splitlines()[-1])
        assert line["event"] == "hello"
        assert line["token"] == "[redacted]"
        with pytest.raises(ValueError, match="invalid log format: JSON"):
            configure_logging("info", "JSON")
    finally:
        structlog.reset_defaults()
