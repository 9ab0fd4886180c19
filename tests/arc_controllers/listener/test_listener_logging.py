"""The listener's logging set-up: slog's records, every logger, every line."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from arc_controllers.listener import loop, metrics, scaler
from arc_controllers.listener._logging import configure_logging, parse_log_level, redact_secrets

SLOG_TEXT = re.compile(r'^time=\S+Z level=(DEBUG|INFO|WARN|ERROR) source=\S+:\d+ msg=("(?:[^"\\]|\\.)*"|\S+)')


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    """A stream the listener's logging writes to; structlog and the root logger are restored after."""
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield stream
    finally:
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)


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


def test_json_format_writes_one_object_per_line_and_text_is_case_sensitive(out: io.StringIO) -> None:
    """json renders one slog object per line; an unknown format is refused."""
    configure_logging("info", "json", stream=out)
    structlog.get_logger("t").info("hello", token="t0k3n")
    line = json.loads(out.getvalue().splitlines()[-1])
    assert list(line)[:4] == ["time", "level", "source", "msg"]
    assert line["msg"] == "hello"
    assert line["level"] == "INFO"
    assert line["token"] == "[redacted]"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", line["time"])
    assert line["source"]["file"].endswith("test_listener_logging.py")
    with pytest.raises(ValueError, match="invalid log format: JSON"):
        configure_logging("info", "JSON")


def test_component_loggers_bound_at_import_follow_the_configured_format(out: io.StringIO) -> None:
    """The listener, worker and metrics exporter loggers are module globals, made at import time;
    they must still render through the configuration `configure_logging` installs later
    (bound eagerly, they printed structlog's default console text in a JSON run)."""
    configure_logging("debug", "json", stream=out)
    loop.log.info("from the listener")
    scaler.log.debug("from the worker", count=2)
    metrics.log.warning("from the exporter")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["component"], x["level"], x["msg"]) for x in lines] == [
        ("listener", "INFO", "from the listener"),
        ("worker", "DEBUG", "from the worker"),
        ("metrics exporter", "WARN", "from the exporter"),
    ]


def test_log_level_filters_every_logger_the_standard_librarys_included(out: io.StringIO) -> None:
    """``warn`` drops info from structlog's loggers and from aiohttp's; what passes is one slog object."""
    configure_logging("warn", "json", stream=out)
    loop.log.info("dropped")
    logging.getLogger("aiohttp.access").info("dropped too")
    logging.getLogger("asyncio").warning("Task was destroyed but it is pending: %s", "t")
    scaler.log.error("kept", error="boom")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["level"], x["msg"], x.get("logger"), x.get("component")) for x in lines] == [
        ("WARN", "Task was destroyed but it is pending: t", "asyncio", None),
        ("ERROR", "kept", None, "worker"),
    ]


def test_text_format_is_slogs_text_handler_layout(out: io.StringIO) -> None:
    """``time=… level=INFO source=file:line msg="…" component=listener key=value``, values quoted when they must be."""
    configure_logging("info", "text", stream=out)
    loop.log.info("jobs acquired", count=2, request_ids=[1, 2], owner="a b", empty="", ok=True, none=None)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("aiohttp.server").exception("Error handling request")
    first, second = out.getvalue().splitlines()
    assert SLOG_TEXT.match(first), first
    assert first.split(" msg=", 1)[1] == (
        '"jobs acquired" component=listener count=2 request_ids=[1,2] owner="a b" empty="" ok=true none=<nil>'
    )
    assert SLOG_TEXT.match(second), second
    assert " level=ERROR " in second
    assert " logger=aiohttp.server " in second
    assert 'exception="Traceback (most recent call last):\\n' in second


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("a\u00a0b", '"a\\u00a0b"'),  # NBSP: a Unicode space, not printable to Go
        ("a\u2028b", '"a\\u2028b"'),  # LINE SEPARATOR: raw, str.splitlines() would split the record
        ("a\u0085b", '"a\\u0085b"'),  # NEXT LINE: the same
        ("\x1b[31mred", '"\\x1b[31mred"'),  # ESC: Go's \x, not JSON's \u001b
        ("a b\x7f", '"a b\\x7f"'),  # DEL inside a quoted value is escaped ...
        ("a\x7fb", "a\x7fb"),  # ... but alone does not make slog quote (JSON's safe set has it)
        ("tab\there", '"tab\\there"'),
        ("bell\a", '"bell\\a"'),
        ("nul\x00", '"nul\\x00"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", "back\\slash"),  # a backslash alone stays bare
        ("a=b", '"a=b"'),
        ("zero\u200bwidth", '"zero\\u200bwidth"'),  # a format character: not printable
        ("tag\U000e0001", '"tag\\U000e0001"'),  # beyond the BMP: \U and eight digits
        ("café😀", "café😀"),  # printable beyond ASCII stays bare
        ("", '""'),
    ],
)
def test_text_values_are_quoted_like_gos_strconv_quote(out: io.StringIO, value: str, written: str) -> None:
    """slog's text handler quotes by its needsQuoting rule and escapes by strconv.Quote; one record, one line."""
    configure_logging("info", "text", stream=out)
    structlog.get_logger("t").info("m", value=value)
    [line] = out.getvalue().splitlines()
    assert line.endswith(f" value={written}"), line


def test_text_keys_are_quoted_like_values(out: io.StringIO) -> None:
    """slog's text handler quotes a key by the same rule as a value."""
    configure_logging("info", "text", stream=out)
    structlog.get_logger("t").info("m", **{"a key": 1})
    assert out.getvalue().rstrip("\n").endswith(' "a key"=1')
