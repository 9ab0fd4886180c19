"""load_rest_config: kubeconfig precedence, token auth, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconcilekit.config import ConfigError, RestConfig, load_rest_config

_KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "{server}", insecure-skip-tls-verify: true}}
users:
- name: u
  user: {{token: "{token}"}}
contexts:
- name: ctx
  context: {{cluster: c, user: u}}
- name: other
  context: {{cluster: c, user: u, namespace: x}}
current-context: ctx
"""


def _write(tmp_path: Path, name: str, server: str, token: str) -> Path:
    path = tmp_path / name
    path.write_text(_KUBECONFIG.format(server=server, token=token))
    return path


async def test_explicit_path_wins_over_kubeconfig_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = _write(tmp_path, "a", "https://10.0.0.1:6443", "tok-a")
    env = _write(tmp_path, "b", "https://10.0.0.2:6443", "tok-b")
    monkeypatch.setenv("KUBECONFIG", str(env))
    config = await load_rest_config(explicit)
    assert config.host == "https://10.0.0.1:6443"
    assert config.verify_ssl is False
    assert await config.authorization() == "Bearer tok-a"
    assert "tok-a" not in repr(config)
    from_env = await load_rest_config()
    assert from_env.host == "https://10.0.0.2:6443"


async def test_missing_everything_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="no kubeconfig"):
        await load_rest_config()


async def test_unparsable_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n")
    with pytest.raises(ConfigError):
        await load_rest_config(bad)


async def test_static_token_config() -> None:
    config = RestConfig(host="https://h", bearer_token="s3cret")
    assert await config.authorization() == "Bearer s3cret"
    assert "s3cret" not in repr(config)
    assert await RestConfig(host="https://h").authorization() is None


async def test_static_kubeconfig_is_read_without_kubernetes_asyncio(tmp_path: Path) -> None:
    """Client-certificate data, CA data and a relative CA path are read directly; no plugin, no fallback."""
    (tmp_path / "ca.pem").write_text("not used")
    path = tmp_path / "config"
    path.write_text(
        """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443/", certificate-authority-data: "UEVN", tls-server-name: api}
users:
- name: u
  user: {client-certificate-data: "Q0VSVA==", client-key-data: "S0VZ"}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
"""
    )
    config = await load_rest_config(path)
    assert config.source is None
    assert config.host == "https://127.0.0.1:6443"
    assert config.ca_data == "PEM"
    assert (config.cert_data, config.key_data) == (b"CERT", b"KEY")
    assert config.tls_server_name == "api"
    assert "KEY" not in repr(config)
    assert await config.authorization() is None


async def test_kubeconfig_list_merges_first_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = tmp_path / "first"
    first.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
        "contexts: [{name: ctx, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {tokenFile: tok}}]\n"
    )
    (tmp_path / "tok").write_text("from-file\n")
    second = _write(tmp_path, "second", "https://10.0.0.9:6443", "ignored-token")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    config = await load_rest_config()
    assert config.host == "https://10.0.0.9:6443"
    assert await config.authorization() == "Bearer from-file"  # user u from the first file wins
    other = await load_rest_config(context="other")
    assert other.host == "https://10.0.0.9:6443"


async def test_exec_plugin_runs_at_load_without_kubernetes_asyncio(tmp_path: Path) -> None:
    credential = (
        '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"from-exec"}}'
    )
    path = tmp_path / "config"
    path.write_text(
        f"""
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: echo
      args: ['{credential}']
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
current-context: ctx
"""
    )
    config = await load_rest_config(path)
    assert config.source is None
    assert config.exec_plugin is not None
    assert config.exec_plugin.runs == 1  # at load: a failing plugin is a start-up error
    assert await config.authorization() == "Bearer from-exec"
    assert config.exec_plugin.runs == 1  # no expiry: cached


async def test_in_cluster_config_rereads_the_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reconcilekit import config as config_module

    (tmp_path / "token").write_text("t1")
    (tmp_path / "ca.crt").write_text("pem")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    now = [1000.0]
    config = config_module._in_cluster(tmp_path)
    assert config._token_file is not None
    config._token_file._clock = lambda: now[0]
    assert config.host == "https://[fd00::1]:443"
    assert config.ca_file == str(tmp_path / "ca.crt")
    assert await config.authorization() == "Bearer t1"
    (tmp_path / "token").write_text("t2")
    assert await config.authorization() == "Bearer t1"  # cached within the minute
    now[0] += 61
    assert await config.authorization() == "Bearer t2"


def test_bad_server_url_is_refused() -> None:
    with pytest.raises(ConfigError, match="https://"):
        RestConfig(host="127.0.0.1:6443")


def test_a_json_kubeconfig_is_read_without_yaml(tmp_path: Path) -> None:
    """JSON is YAML: read by ``json`` it leaves PyYAML unimported (issue 20, a listener's RSS); a YAML
    flow mapping that starts with ``{`` and a broken file still go to PyYAML."""
    import asyncio
    import json
    import subprocess
    import sys
    import textwrap

    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.9:6443", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "tok"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / "config"
    path.write_text(json.dumps(doc, indent=2))
    script = textwrap.dedent(
        """
        import asyncio, sys
        from reconcilekit.config import load_rest_config
        config = asyncio.run(load_rest_config(sys.argv[1]))
        print(config.host, "yaml" in sys.modules)
        """
    )
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["https://10.0.0.9:6443", "False"]

    yaml_flow = tmp_path / "yaml-flow"
    yaml_flow.write_text(
        '{clusters: [{name: c, cluster: {server: "https://10.0.0.7:6443"}}], users: [{name: u, user: {token: t}}],'
        " contexts: [{name: x, context: {cluster: c, user: u}}], current-context: x}"
    )
    assert asyncio.run(load_rest_config(yaml_flow)).host == "https://10.0.0.7:6443"
