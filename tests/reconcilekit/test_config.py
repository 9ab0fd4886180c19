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
