"""Refreshing credentials: exec plugins before expiry and after 401 (once per burst), token
files after 401, and the REST transport sending a request once more after a refresh (issue 16, item 3)."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp import web

from reconcilekit.client import GroupVersionKind, GroupVersionResource, ObjectKey, RESTMapping, new_client
from reconcilekit.config import ConfigError, RestConfig, load_rest_config
from reconcilekit.credentials import CredentialError, ExecPlugin, TokenFile, refresh_margin
from reconcilekit.errors import UnauthorizedError

CM = GroupVersionKind("", "v1", "ConfigMap")


def plugin_script(tmp_path: Path, *, lifetime: int | None = None, exit_code: int = 0) -> Path:
    """A plugin printing the token in ``token`` (expiring ``lifetime`` s from now) and counting its runs."""
    expiry = (
        f'"expirationTimestamp": "$(date -u -d @$(( $(date +%s) + {lifetime} )) +%Y-%m-%dT%H:%M:%SZ)",'
        if lifetime is not None
        else ""
    )
    script = tmp_path / "plugin.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'echo run >> "{tmp_path}/runs"\n'
        f"[ {exit_code} -eq 0 ] || exit {exit_code}\n"
        'cat <<JSON\n{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",\n'
        f' "status": {{{expiry} "token": "$(cat {tmp_path}/token)"}}}}\nJSON\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "token").write_text("one")
    return script


def runs(tmp_path: Path) -> int:
    path = tmp_path / "runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_refresh_margin_is_a_fifth_of_the_lifetime_at_most_a_minute() -> None:
    assert refresh_margin(10.0) == 2.0
    assert refresh_margin(3600.0) == 60.0
    assert refresh_margin(-5.0) == 0.0


async def test_exec_plugin_runs_again_before_its_expiry(tmp_path: Path) -> None:
    now = [datetime.now(UTC).timestamp()]
    plugin = ExecPlugin(command=str(plugin_script(tmp_path, lifetime=100)), clock=lambda: now[0])
    assert await plugin.authorization() == "Bearer one"
    (tmp_path / "token").write_text("two")
    now[0] += 70  # 30 s before expiry: more than the 20 s margin
    assert await plugin.authorization() == "Bearer one"
    now[0] += 12  # 18 s before expiry: inside the margin
    assert await plugin.authorization() == "Bearer two"
    assert runs(tmp_path) == 2


async def test_a_burst_of_401s_runs_the_plugin_once(tmp_path: Path) -> None:
    plugin = ExecPlugin(command=str(plugin_script(tmp_path)))
    used = await asyncio.gather(*(plugin.authorization() for _ in range(5)))
    assert set(used) == {"Bearer one"}
    assert runs(tmp_path) == 1  # concurrent first requests share one run
    (tmp_path / "token").write_text("two")
    for header in used:  # five requests sent with "one" all answered 401
        plugin.invalidate(header)
        assert await plugin.authorization() == "Bearer two"
    assert runs(tmp_path) == 2


async def test_a_failing_plugin_is_a_clear_error_without_output(tmp_path: Path) -> None:
    plugin = ExecPlugin(command=str(plugin_script(tmp_path, exit_code=3)))
    with pytest.raises(CredentialError, match="exited with status 3"):
        await plugin.authorization()
    missing = ExecPlugin(command="/nonexistent/plugin", install_hint="install it with brew")
    with pytest.raises(CredentialError, match="not found: install it with brew"):
        await missing.authorization()


async def test_a_failing_plugin_at_load_is_a_config_error(tmp_path: Path) -> None:
    plugin_script(tmp_path, exit_code=2)
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://10.0.0.1:6443'}}]\n"
        "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin.sh}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    with pytest.raises(ConfigError, match="exited with status 2"):
        await load_rest_config(kubeconfig)  # a relative command resolves against the kubeconfig's folder


async def test_a_relative_plugin_of_a_relative_kubeconfig_resolves_against_its_folder_issue_16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``command: ./plugin.sh`` in ``conf/config`` given as a relative path runs ``<cwd>/conf/plugin.sh``.

    The plugin's path must be absolute at load: the kubeconfig's folder, not whatever the
    working directory is when the plugin runs again later.
    """
    folder = tmp_path / "conf"
    folder.mkdir()
    plugin_script(folder)
    (folder / "config").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://10.0.0.1:6443'}}]\n"
        "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ./plugin.sh}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    monkeypatch.chdir(tmp_path)
    config = await load_rest_config(Path("conf") / "config")
    assert config.exec_plugin is not None
    assert config.exec_plugin.command == str(folder.resolve() / "plugin.sh")
    assert runs(folder) == 1
    monkeypatch.chdir(folder)  # a later run from another working directory still finds it
    config.exec_plugin.invalidate(await config.exec_plugin.authorization())
    assert await config.exec_plugin.authorization() == "Bearer one"
    assert runs(folder) == 2


async def test_token_file_is_reread_after_a_401(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    source = TokenFile(str(path))
    assert await source.authorization() == "Bearer one"
    path.write_text("two\n")
    assert await source.authorization() == "Bearer one"  # cached within the minute
    source.invalidate("Bearer stale")  # a 401 for an older token changes nothing
    assert await source.authorization() == "Bearer one"
    source.invalidate("Bearer one")
    assert await source.authorization() == "Bearer two"


class _OnlyAccepts:
    """An API endpoint that accepts one bearer token and counts what it saw."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.seen: list[str | None] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization")
        self.seen.append(auth)
        if auth != f"Bearer {self.token}":
            status = {"kind": "Status", "status": "Failure", "code": 401, "reason": "Unauthorized"}
            return web.json_response(status, status=401)
        if request.query.get("watch") == "true":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}\n')
            return resp
        return web.json_response({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[_OnlyAccepts, str]]:
    srv = _OnlyAccepts("two")
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield srv, f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_a_rotated_token_file_costs_no_failed_request(tmp_path: Path, endpoint: tuple[_OnlyAccepts, str]) -> None:
    srv, url = endpoint
    path = tmp_path / "token"
    path.write_text("one")
    async with new_client(RestConfig(host=url, token_file=str(path)), timeout=5.0) as c:
        c.rest_mapper.add(RESTMapping(CM, GroupVersionResource("", "v1", "configmaps"), True))
        with pytest.raises(UnauthorizedError):  # the file still holds the old token: re-read, same, no retry
            await c.get(CM, ObjectKey("ns", "a"))
        assert srv.seen == ["Bearer one"]
        srv.token = "one"
        await c.get(CM, ObjectKey("ns", "a"))
        path.write_text("two")  # rotated: the server now accepts only the new token
        srv.token = "two"
        srv.seen.clear()
        obj = await c.get(CM, ObjectKey("ns", "a"))
        assert obj["metadata"]["name"] == "a"
        assert srv.seen == ["Bearer one", "Bearer two"]  # one 401, re-read, sent once more
        async with asyncio.timeout(5):
            async for event in c.watch(CM, namespace="ns", resource_version="1", timeout_seconds=5):
                assert event.type == "BOOKMARK"
                break


async def test_exec_plugin_runs_once_after_a_401_and_the_request_succeeds(
    tmp_path: Path, endpoint: tuple[_OnlyAccepts, str]
) -> None:
    srv, url = endpoint
    plugin = ExecPlugin(command=str(plugin_script(tmp_path)))
    srv.token = "one"
    async with new_client(RestConfig(host=url, exec_plugin=plugin), timeout=5.0) as c:
        c.rest_mapper.add(RESTMapping(CM, GroupVersionResource("", "v1", "configmaps"), True))
        await c.get(CM, ObjectKey("ns", "a"))
        (tmp_path / "token").write_text("two")
        srv.token = "two"
        await asyncio.gather(*(c.get(CM, ObjectKey("ns", "a")) for _ in range(5)))
    assert runs(tmp_path) == 2  # one run at first use, one for the whole burst of 401s
    assert srv.seen.count("Bearer two") == 5
    assert srv.seen.count("Bearer one") == 6
