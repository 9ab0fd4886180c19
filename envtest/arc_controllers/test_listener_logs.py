"""The listener's log contract, on a real ``arc-listener`` process: every line is one slog record.

Go's listener logs through log/slog (``logger.New``): ``log_format: json`` gives one JSON
object per line with ``time``, ``level`` (DEBUG/INFO/WARN/ERROR), ``source``, ``msg`` and the
attributes (``component``: ``listener``, ``worker``, ``metrics exporter``); ``text`` gives
slog's ``key=value`` layout. Log pipelines parse listener pods by those keys, so these tests
parse every line the process printed on stdout during a run that opens a session, scales the
set, takes a job, serves metrics and stops on SIGTERM. The process runs as the listener's
ServiceAccount (`listener_account`), like every listener in these envtests.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from arc_controllers.actions.fake import FakeActionsService
from reconcilekit.client import ObjectKey, RestClient
from reconcilekit.envtest import Environment
from reconcilekit.testing import eventually

from . import test_listener
from .chart_rbac import service_account_kubeconfig

pytestmark = pytest.mark.slow

# test_listener's fixtures (a listener ServiceAccount holding only its Role, the fake service, a scale set)
crds, client, listener_account = test_listener.crds, test_listener.client, test_listener.listener_account
fake, actions, scale_set_id = test_listener.fake, test_listener.actions, test_listener.scale_set_id
ERS, SET_NAME, create_runner_set = test_listener.ERS, test_listener.SET_NAME, test_listener.create_runner_set

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
COMPONENTS = {"listener", "worker", "metrics exporter"}
TEXT_HEAD = re.compile(
    r"time=(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) level=(?P<level>[A-Z]+) source=(?P<source>\S+:\d+) "
    r'msg=(?P<msg>"(?:[^"\\]|\\.)*"|[^ "=]+)'
)
TEXT_ATTR = re.compile(r' (?P<key>[^ ="]+)=(?P<value>"(?:[^"\\]|\\.)*"|[^ "=]+)')


def parse_slog_text(line: str) -> dict[str, str]:
    """One line of slog's TextHandler as ``{key: value}`` (quoted values unquoted); AssertionError if it is not one."""
    head = TEXT_HEAD.match(line)
    assert head, f"not slog's text layout: {line!r}"
    record = {key: head[key] for key in ("time", "level", "source", "msg")}
    rest = line[head.end() :]
    while rest:
        attr = TEXT_ATTR.match(rest)
        assert attr, f"not a key=value attribute at {rest!r} in {line!r}"
        record[attr["key"]] = attr["value"]
        rest = rest[attr.end() :]
    return {key: json.loads(v) if v.startswith('"') else v for key, v in record.items()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["json", "text"])
def log_format(request: pytest.FixtureRequest) -> str:
    """The listener config's ``log_format``."""
    return str(request.param)


@pytest.fixture
async def listener_output(
    envtest_environment: Environment,
    client: RestClient,
    listener_account: tuple[str, str] | None,
    namespace: str,
    fake: FakeActionsService,
    scale_set_id: int,
    tmp_path: Path,
    log_format: str,
) -> tuple[list[str], str]:
    """Run ``arc-listener`` through a session, a scale-up and a job, then SIGTERM; its stdout lines and stderr."""
    await create_runner_set(client, namespace)
    config = test_listener._process_config(namespace, scale_set_id, fake)
    config.update(min_runners=1, log_level="debug", log_format=log_format, metrics_endpoint="/metrics")
    config["metrics_addr"] = f"127.0.0.1:{_free_port()}"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    kubeconfig = envtest_environment.kubeconfig_path
    if listener_account is not None:
        account_namespace, name = listener_account
        kubeconfig = await service_account_kubeconfig(
            client, kubeconfig, tmp_path / "listener.kubeconfig", namespace=account_namespace, name=name
        )
    env = {**os.environ, "LISTENER_CONFIG_PATH": str(path), "KUBECONFIG": str(kubeconfig), "NO_PROXY": "127.0.0.1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "arc_controllers.listener", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:

        async def replicas(want: int) -> bool:
            if process.returncode is not None:
                pytest.fail(f"the listener exited {process.returncode}")
            runner_set = await client.get(ERS, ObjectKey(namespace, SET_NAME))
            return bool(runner_set["spec"].get("replicas") == want)

        await eventually(lambda: replicas(1), timeout=60)
        fake.queue_job(labels=["set"])
        await eventually(lambda: replicas(2), timeout=60)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 1, stderr.decode()[-2000:]
    return stdout.decode().splitlines(), stderr.decode()


def check_json_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Each line one JSON object starting ``time, level, source, msg`` (slog's JSONHandler with AddSource)."""
    records: list[dict[str, Any]] = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}")
    for record in records:
        assert isinstance(record, dict)
        assert list(record)[:4] == ["time", "level", "source", "msg"], record
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", record["time"])
        assert set(record["source"]) == {"function", "file", "line"}
    return records


def check_text_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Each line ``time=… level=… source=… msg=… key=value…`` (slog's TextHandler with AddSource)."""
    return [dict(parse_slog_text(line)) for line in lines]


async def test_every_line_of_a_listener_run_is_one_slog_record(
    listener_output: tuple[list[str], str], log_format: str
) -> None:
    """Every stdout line parses in the configured format; all three components log; debug reaches them all."""
    lines, stderr = listener_output
    records = (check_json_lines if log_format == "json" else check_text_lines)(lines)
    assert len(records) > 5
    assert {r["level"] for r in records} <= set(LEVELS)
    assert "DEBUG" in {r["level"] for r in records}, "log_level debug reaches every logger"
    assert {r.get("component") for r in records} >= COMPONENTS
    assert stderr.strip() == "Application returned an error: context canceled"


def test_the_text_parser_follows_slogs_quoting() -> None:
    """The parser above takes slog's rules: bare values have no space, quote or ``=``; others are quoted."""
    line = 'time=2026-12-02T06:00:00.123Z level=INFO source=/a/b.py:3 msg="jobs acquired" component=listener n=2 x=""'
    assert parse_slog_text(line) == {
        "time": "2026-12-02T06:00:00.123Z",
        "level": "INFO",
        "source": "/a/b.py:3",
        "msg": "jobs acquired",
        "component": "listener",
        "n": "2",
        "x": "",
    }
    with pytest.raises(AssertionError):
        parse_slog_text("2026-12-02 [info     ] jobs acquired  component=listener")
    with pytest.raises(AssertionError):
        parse_slog_text("time=2026-12-02T06:00:00.123Z level=INFO source=/a.py:1 msg=ok owner=a b")
