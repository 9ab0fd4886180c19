"""The manager's log lines: zap's keys on every line, the standard library's records included."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from arc_controllers.cmd._logging import configure_manager_logging
from arc_controllers.controllers.autoscalingrunnerset import reconciler as autoscalingrunnerset
from arc_controllers.controllers.ephemeralrunner import reconciler as ephemeralrunner

ZAP_KEYS = {"ts", "severity", "logger", "message"}


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    """A stream the manager's logging writes to; structlog and the root logger are restored after."""
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level, config = list(root.handlers), root.level, structlog.get_config()
    try:
        yield stream
    finally:
        structlog.configure(**config)
        root.handlers[:] = handlers
        root.setLevel(level)


def _lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_json_lines_carry_zaps_four_keys_with_the_logger_name(out: io.StringIO) -> None:
    """``logger`` is the logr name: Go's reconciler names, else the name the logger was made with."""
    configure_manager_logging("info", "json", stream=out)
    structlog.get_logger("arc_controllers.cmd.manager").info("starting manager", version="dev")
    autoscalingrunnerset.log.info("reconciling")
    ephemeralrunner.log.info("creating pod")
    lines = _lines(out)
    assert all(line.keys() >= ZAP_KEYS for line in lines), lines
    names = [line["logger"] for line in lines]
    assert names == ["arc_controllers.cmd.manager", "AutoscalingRunnerSet", "EphemeralRunner"]
    assert list(lines[0])[:4] == ["ts", "severity", "logger", "message"]
    assert lines[0]["version"] == "dev"


def test_standard_library_records_are_json_lines_too(out: io.StringIO) -> None:
    """asyncio's and aiohttp's records take the manager's renderer: one JSON object with zap's keys."""
    configure_manager_logging("info", "json", stream=out)
    logging.getLogger("asyncio").error("x")
    logging.getLogger("aiohttp.client").warning("retrying %s", "GET")
    [first, second] = _lines(out)
    assert first.keys() >= ZAP_KEYS
    assert second.keys() >= ZAP_KEYS
    assert (first["severity"], first["logger"], first["message"]) == ("ERROR", "asyncio", "x")
    assert (second["logger"], second["message"]) == ("aiohttp.client", "retrying GET")


def test_standard_library_records_follow_the_log_level(out: io.StringIO) -> None:
    """``--log-level=error`` drops a library's warning as it drops structlog's."""
    configure_manager_logging("error", "json", stream=out)
    logging.getLogger("kubernetes_asyncio.client.rest").warning("dropped")
    structlog.get_logger("t").warning("dropped too")
    logging.getLogger("asyncio").error("kept")
    assert [line["message"] for line in _lines(out)] == ["kept"]


def test_standard_library_debug_records_stay_out_of_a_debug_log(out: io.StringIO) -> None:
    """At ``debug`` (ARC's default) a library's DEBUG records are dropped: kubernetes_asyncio's
    carry whole response bodies (Secrets too), asyncio's a selector line that would break the
    one-line exit of a bad kube config."""
    configure_manager_logging("debug", "json", stream=out)
    logging.getLogger("kubernetes_asyncio.client.rest").debug("response body: %s", '{"data": {"token": "c2VjcmV0"}}')
    structlog.get_logger("t").debug("kept")
    logging.getLogger("aiohttp.client").info("kept too")
    assert [line["message"] for line in _lines(out)] == ["kept", "kept too"]


def test_standard_library_records_are_redacted(out: io.StringIO) -> None:
    """A library that logs a header value gets it scrubbed like every other line."""
    configure_manager_logging("info", "json", stream=out)
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjMifQ.c2lnbmF0dXJl"
    logging.getLogger("aiohttp.client").warning("sent Authorization: Bearer %s", jwt)
    assert jwt not in out.getvalue()
    assert _lines(out)[0]["message"] == "sent Authorization: Bearer [redacted]"


def test_text_lines_name_their_logger(out: io.StringIO) -> None:
    """The console layout shows the logger name too, for structlog's and the library's records."""
    configure_manager_logging("info", "text", stream=out)
    autoscalingrunnerset.log.info("reconciling")
    logging.getLogger("asyncio").error("x")
    first, second = out.getvalue().splitlines()
    assert "[AutoscalingRunnerSet]" in first
    assert "reconciling" in first
    assert "[asyncio]" in second
    assert "] x " in second
