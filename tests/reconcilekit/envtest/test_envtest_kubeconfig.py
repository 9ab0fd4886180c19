"""Kubeconfig files: the one envtest writes, and reading an existing cluster's."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from reconcilekit.envtest import KubeconfigError
from reconcilekit.envtest._kubeconfig import ClusterAccess, kubeconfig_paths, load_kubeconfig, render_kubeconfig

ACCESS = ClusterAccess(
    server="https://127.0.0.1:6443",
    ca_pem=b"CA PEM",
    client_cert_pem=b"CERT PEM",
    client_key_pem=b"KEY PEM",
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_rendered_kubeconfig_is_named_envtest_and_inlines_everything() -> None:
    """Cluster, user and context are 'envtest', current, with the CA and client cert inlined."""
    doc = yaml.safe_load(render_kubeconfig(ACCESS))
    assert doc["current-context"] == "envtest"
    assert doc["clusters"] == [
        {"name": "envtest", "cluster": {"server": ACCESS.server, "certificate-authority-data": _b64(b"CA PEM")}}
    ]
    assert doc["users"][0]["user"] == {
        "client-certificate-data": _b64(b"CERT PEM"),
        "client-key-data": _b64(b"KEY PEM"),
    }
    assert doc["contexts"] == [{"name": "envtest", "context": {"cluster": "envtest", "user": "envtest"}}]


def test_render_then_load_round_trips(tmp_path: Path) -> None:
    """Loading a rendered kubeconfig gives back the same access."""
    path = tmp_path / "config"
    path.write_bytes(render_kubeconfig(ACCESS))
    assert load_kubeconfig([path]) == ACCESS


def test_access_repr_hides_secrets() -> None:
    """Neither the client key nor a token appears in the repr (so never in a log line)."""
    text = repr(ClusterAccess(server="https://x", client_key_pem=b"SECRET KEY", token="SECRET TOKEN"))
    assert "SECRET" not in text


def _config(tmp_path: Path) -> Path:
    (tmp_path / "ca.crt").write_bytes(b"FILE CA")
    (tmp_path / "token").write_text("tok-from-file\n")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "one",
        "clusters": [
            {"name": "c1", "cluster": {"server": "https://one:6443/", "certificate-authority": "ca.crt"}},
            {"name": "c2", "cluster": {"server": "https://two:6443", "insecure-skip-tls-verify": True}},
        ],
        "users": [
            {"name": "u1", "user": {"token": "tok-1"}},
            {"name": "u2", "user": {"tokenFile": "token"}},
            {"name": "u3", "user": {"exec": {"command": "get-token"}}},
        ],
        "contexts": [
            {"name": "one", "context": {"cluster": "c1", "user": "u1"}},
            {"name": "two", "context": {"cluster": "c2", "user": "u2"}},
            {"name": "plugin", "context": {"cluster": "c1", "user": "u3"}},
        ],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_current_context_with_files_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    """The current context is used; certificate-authority is read relative to the file's folder."""
    access = load_kubeconfig([_config(tmp_path)])
    assert access.server == "https://one:6443"
    assert access.ca_pem == b"FILE CA"
    assert access.token == "tok-1"


def test_explicit_context_and_token_file(tmp_path: Path) -> None:
    """A named context wins over the current one; tokenFile is read and stripped."""
    access = load_kubeconfig([_config(tmp_path)], context="two")
    assert access.server == "https://two:6443"
    assert access.insecure_skip_tls_verify
    assert access.token == "tok-from-file"


def test_exec_plugins_and_unknown_contexts_are_clear_errors(tmp_path: Path) -> None:
    """An exec credential plugin or a missing context is reported, never silently ignored."""
    path = _config(tmp_path)
    with pytest.raises(KubeconfigError, match="exec"):
        load_kubeconfig([path], context="plugin")
    with pytest.raises(KubeconfigError, match="nope"):
        load_kubeconfig([path], context="nope")
    with pytest.raises(KubeconfigError, match="no kubeconfig found"):
        load_kubeconfig([tmp_path / "missing"])


def test_kubeconfig_variable_lists_files_and_first_one_wins(tmp_path: Path) -> None:
    """KUBECONFIG's entries are merged in order: the first file to name the current context decides."""
    first = tmp_path / "first"
    first.write_bytes(render_kubeconfig(ACCESS))
    second = _config(tmp_path)
    env = {"KUBECONFIG": f"{first}:{second}"}
    assert kubeconfig_paths(env) == [first, second]
    assert load_kubeconfig(environ=env).server == ACCESS.server
    assert kubeconfig_paths({"HOME": "/home/u"}) == [Path("/home/u/.kube/config")]
