"""What a listener process imports: only what its configuration needs (issue 20: RSS per listener).

Each case runs a fresh interpreter, which starts the way ``arc-listener`` starts
(`arc_controllers.listener.entry`), reads a configuration and builds the Actions
client, the Kubernetes client and the app, decodes a session and a job message (the wire
types), and then prints the heavy packages it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

HEAVY = (
    "cryptography",
    "jwt",
    "rich",
    "pygments",
    "prometheus_client",
    "aiohttp.web",
    "kubernetes_asyncio",
    "pydantic",
    "pydantic_core",
    "arc_controllers.api.v1alpha1._base",
    "reconcilekit.client.typed",
    "yaml",
    "jsonpatch",
)

_START = textwrap.dedent(
    """
    import asyncio, json, sys
    from arc_controllers.listener.entry import keep_developer_packages_out
    keep_developer_packages_out()
    from arc_controllers.listener import __main__ as listener_main
    from arc_controllers.listener._logging import configure_logging
    from arc_controllers.listener.app import ListenerApp
    from arc_controllers.listener.config import read_config
    from arc_controllers.actions import RunnerScaleSetSession, SystemInfo, new_client
    from arc_controllers.actions.types import decode_wire, parse_runner_scale_set_message
    from reconcilekit.client import new_client as new_kube_client
    from reconcilekit.config import RestConfig

    config = read_config(sys.argv[1])
    configure_logging("info", "json")

    async def build():
        actions = new_client(
            config.configure_url, listener_main._credentials(config), system_info=SystemInfo(subsystem="ghalistener")
        )
        kube = new_kube_client(RestConfig(host="https://127.0.0.1:1"), register_prometheus=False)
        ListenerApp(config, open_session=listener_main.session_opener(actions), kube=kube)
        await kube.close()
        decode_wire(RunnerScaleSetSession, b'{"sessionId": "6f1c2d4e-0000-4000-8000-000000000001"}')
        body = json.dumps([{"messageType": "JobStarted", "runnerRequestId": 1, "queueTime": "2026-01-02T03:04:05Z"}])
        parse_runner_scale_set_message(
            json.dumps({"messageId": 1, "messageType": "RunnerScaleSetJobMessages", "body": body}).encode()
        )

    asyncio.run(build())
    print(json.dumps(sorted(name for name in HEAVY if sys.modules.get(name) is not None)))
    """
)

PAT: dict[str, Any] = {
    "configure_url": "https://github.com/my-org",
    "github_token": "ghp_secret",
    "ephemeral_runner_set_namespace": "ns",
    "ephemeral_runner_set_name": "set",
    "runner_scale_set_id": 1,
    "max_runners": 10,
    "min_runners": 0,
    "log_level": "info",
    "log_format": "json",
}


def _loaded(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    script = f"HEAVY = {HEAVY!r}\n{_START}"
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_a_listener_with_a_pat_and_no_metrics_loads_none_of_the_heavy_packages(tmp_path: Path) -> None:
    """No cryptography or PyJWT (App keys only), no prometheus_client or aiohttp's server (metrics
    only), no rich or pygments (structlog's console extras), no kubernetes_asyncio (kubeconfig
    fallback only), no pydantic (the wire types are dataclasses, the CRD models and TypedClient load
    on first use), no yaml (kubeconfig files only) or jsonpatch (JSON patches only)."""
    assert _loaded(tmp_path, PAT) == []
