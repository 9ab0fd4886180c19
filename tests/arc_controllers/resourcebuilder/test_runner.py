"""The runner builders: names, labels, annotations, owner references and env exactly as upstream."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from arc_controllers.resourcebuilder.labels import fnv_hash_string
from arc_controllers.resourcebuilder.runner import (
    JitRunnerConfig,
    RunnerBuildOptions,
    new_ephemeral_runner,
    new_ephemeral_runner_jit_secret,
    new_ephemeral_runner_pod,
    new_ephemeral_runner_set_proxy_secret,
    proxy_env,
    proxy_ephemeral_runner_set_secret_name,
    proxy_secret_data,
)

OPTIONS = RunnerBuildOptions(build_version="1.2.3")


def runner_set(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": "set",
            "namespace": "ns",
            "uid": "set-uid",
            "labels": {"actions.github.com/scale-set-name": "set", "actions.github.com/scale-set-namespace": "ns"},
            "annotations": {"actions.github.com/runner-group-name": "default"},
        },
        "spec": {
            "replicas": 3,
            "patchID": 4,
            "actionableRevision": 2,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/org",
                "runnerScaleSetId": 7,
                "metadata": {"labels": {"tmpl": "l"}, "annotations": {"tmpl": "a"}},
                "spec": {
                    "containers": [
                        {"name": "runner", "image": "r", "env": [{"name": "USER", "value": "u"}]},
                        {"name": "sidecar", "image": "s"},
                    ]
                },
            },
            **spec,
        },
    }


def test_new_ephemeral_runner_stamps_patch_id_and_revision() -> None:
    """The runner carries the set's patch ID and actionable revision, both finalizers and a controller ref."""
    ers = runner_set()
    runner = new_ephemeral_runner(ers, options=OPTIONS)
    meta = runner["metadata"]
    assert runner["apiVersion"] == "actions.github.com/v1alpha1"
    assert runner["kind"] == "EphemeralRunner"
    assert meta["generateName"] == "set-runner-"
    assert meta["namespace"] == "ns"
    assert meta["labels"] == {
        "actions.github.com/scale-set-name": "set",
        "actions.github.com/scale-set-namespace": "ns",
        "app.kubernetes.io/component": "runner",
    }
    assert meta["annotations"] == {
        "actions.github.com/runner-group-name": "default",
        "actions.github.com/patch-id": "4",
        "actions.github.com/actionable-revision": "2",
    }
    assert meta["finalizers"] == [
        "ephemeralrunner.actions.github.com/finalizer",
        "ephemeralrunner.actions.github.com/runner-registration-finalizer",
    ]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "name": "set",
            "uid": "set-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert runner["spec"] == ers["spec"]["ephemeralRunnerSpec"]


def test_new_ephemeral_runner_deep_copies_the_spec() -> None:
    """Runners built concurrently never share nested values with the set or each other."""
    ers = runner_set()
    before = copy.deepcopy(ers)
    a = new_ephemeral_runner(ers, options=OPTIONS)
    b = new_ephemeral_runner(ers, options=OPTIONS)
    a["spec"]["spec"]["containers"][0]["env"].append({"name": "X"})
    a["metadata"]["labels"]["x"] = "y"
    assert ers == before
    assert b["spec"] == ers["spec"]["ephemeralRunnerSpec"]


# Upstream: ephemeralrunnerset_metadata_test.go TestScaleUpWithOptionalRunnerMetadata (builder part)
@pytest.mark.parametrize(
    "metadata",
    [None, {}, {"labels": {"u": "l"}}, {"annotations": {"u": "a"}}, {"labels": {"u": "l"}, "annotations": {"u": "a"}}],
)
def test_runner_metadata_is_optional_and_derived_keys_win(metadata: dict[str, Any] | None) -> None:
    """User metadata may be absent or partial; user keys land, a user patch-id is overridden."""
    md = (
        None
        if metadata is None
        else {**metadata, "annotations": {**metadata.get("annotations", {}), "actions.github.com/patch-id": "999"}}
    )
    ers = runner_set(ephemeralRunnerMetadata=md)
    before = copy.deepcopy(ers)
    runner = new_ephemeral_runner(ers, options=OPTIONS)
    assert runner["metadata"]["annotations"]["actions.github.com/patch-id"] == "4"
    assert runner["metadata"]["labels"]["app.kubernetes.io/component"] == "runner"
    for key, value in ((metadata or {}).get("labels") or {}).items():
        assert runner["metadata"]["labels"][key] == value
    for key, value in ((metadata or {}).get("annotations") or {}).items():
        assert runner["metadata"]["annotations"][key] == value
    assert ers == before


def test_excluded_label_prefixes_drop_user_labels_only() -> None:
    ers = runner_set(ephemeralRunnerMetadata={"labels": {"skip.io/x": "1", "keep": "2"}})
    runner = new_ephemeral_runner(ers, options=RunnerBuildOptions(exclude_label_propagation_prefixes=("skip.io/",)))
    assert "skip.io/x" not in runner["metadata"]["labels"]
    assert runner["metadata"]["labels"]["keep"] == "2"


def test_missing_revision_and_patch_id_stamp_zero() -> None:
    ers = runner_set()
    del ers["spec"]["patchID"], ers["spec"]["actionableRevision"]
    annotations = new_ephemeral_runner(ers, options=OPTIONS)["metadata"]["annotations"]
    assert annotations["actions.github.com/patch-id"] == "0"
    assert annotations["actions.github.com/actionable-revision"] == "0"


def named_runner() -> dict[str, Any]:
    runner = new_ephemeral_runner(runner_set(), options=OPTIONS)
    runner["metadata"]["name"] = "set-runner-abc"
    runner["metadata"]["uid"] = "runner-uid"
    runner["metadata"].pop("generateName")
    return runner


def jit_secret(runner: dict[str, Any]) -> dict[str, Any]:
    jit = JitRunnerConfig(
        encoded_jit_config="c2VjcmV0", runner_id=11, runner_name="set-runner-abc", runner_scale_set_id=7
    )
    return new_ephemeral_runner_jit_secret(runner, jit, options=OPTIONS)


def test_jit_secret_shape() -> None:
    runner = named_runner()
    secret = jit_secret(runner)
    assert secret["metadata"]["name"] == "set-runner-abc"
    assert secret["metadata"]["namespace"] == "ns"
    assert "labels" not in secret["metadata"]
    assert "annotations" not in secret["metadata"]
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {"jitToken": "c2VjcmV0", "runnerName": "set-runner-abc", "runnerId": "11", "scaleSetId": "7"}
    [ref] = secret["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "EphemeralRunner",
        "set-runner-abc",
        "runner-uid",
        True,
    )


def test_jit_secret_takes_config_secret_metadata() -> None:
    runner = named_runner()
    runner["spec"]["ephemeralRunnerConfigSecretMetadata"] = {"labels": {"l": "1"}, "annotations": {"a": "2"}}
    secret = jit_secret(runner)
    assert secret["metadata"]["labels"] == {"l": "1"}
    assert secret["metadata"]["annotations"] == {"a": "2"}


def test_jit_config_is_redacted_in_repr() -> None:
    jit = JitRunnerConfig(encoded_jit_config="c2VjcmV0", runner_id=1, runner_name="n", runner_scale_set_id=1)
    assert "c2VjcmV0" not in repr(jit)


def test_runner_pod_shape_and_env() -> None:
    """Only the runner container gets the JIT, user-agent, exit-code and extra env, after the user's."""
    runner = named_runner()
    secret = jit_secret(runner)
    extra = {"name": "http_proxy", "valueFrom": {"secretKeyRef": {"name": "p", "key": "http_proxy"}}}
    pod = new_ephemeral_runner_pod(runner, secret, extra, options=OPTIONS)
    meta = pod["metadata"]
    assert (meta["name"], meta["namespace"]) == ("set-runner-abc", "ns")
    assert meta["annotations"] == {**runner["metadata"]["annotations"], "tmpl": "a"}
    labels = dict(meta["labels"])
    pod_hash = labels.pop("pod-template-hash")
    assert labels == {**runner["metadata"]["labels"], "tmpl": "l", "actions-ephemeral-runner": "True"}
    assert pod_hash
    assert len(pod_hash) <= 10
    [ref] = meta["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("EphemeralRunner", "set-runner-abc", "runner-uid")
    runner_c, sidecar = pod["spec"]["containers"]
    assert runner_c["env"] == [
        {"name": "USER", "value": "u"},
        {
            "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
            "valueFrom": {"secretKeyRef": {"name": "set-runner-abc", "key": "jitToken"}},
        },
        {"name": "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", "value": "actions-runner-controller/1.2.3"},
        {"name": "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "value": "1"},
        extra,
    ]
    assert "env" not in sidecar
    # the runner's own spec is untouched
    assert runner["spec"]["spec"]["containers"][0]["env"] == [{"name": "USER", "value": "u"}]


def test_pod_template_hash_follows_inputs_but_ignores_runner_template_hash() -> None:
    runner = named_runner()
    secret = jit_secret(runner)
    base = new_ephemeral_runner_pod(runner, secret, options=OPTIONS)["metadata"]["labels"]["pod-template-hash"]
    runner["metadata"]["labels"]["runner-template-hash"] = "zzz"
    same = new_ephemeral_runner_pod(runner, secret, options=OPTIONS)["metadata"]["labels"]["pod-template-hash"]
    runner["spec"]["spec"]["containers"][0]["image"] = "other"
    other = new_ephemeral_runner_pod(runner, secret, options=OPTIONS)["metadata"]["labels"]["pod-template-hash"]
    assert base == same != other


def test_fnv_hash_string_matches_go() -> None:
    """FNV-1a 32 of "" is 2166136261; safe-encoded digit by digit."""
    assert fnv_hash_string("") == "".join("bcdfghjklmnpqrstvwxz2456789"[ord(c) % 27] for c in "2166136261")


def test_proxy_secret_name_and_shape() -> None:
    ers = runner_set()
    name = proxy_ephemeral_runner_set_secret_name(ers)
    assert name == f"set-{fnv_hash_string('ns')[:8]}-runner-proxy"
    secret = new_ephemeral_runner_set_proxy_secret(
        ers, {"http_proxy": b"http://p", "https_proxy": b"", "no_proxy": b"a,b"}
    )
    assert secret["metadata"]["name"] == name
    assert secret["metadata"]["labels"] == {
        "actions.github.com/scale-set-name": "set",
        "actions.github.com/scale-set-namespace": "ns",
    }
    assert secret["metadata"]["annotations"] == {}
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "EphemeralRunnerSet"
    assert base64.b64decode(secret["data"]["no_proxy"]) == b"a,b"


def test_proxy_secret_data_embeds_credentials() -> None:
    proxy = {
        "http": {"url": "http://proxy:3128", "credentialSecretRef": "creds"},
        "https": {"url": "https://proxy:3129"},
        "noProxy": ["example.com", "10.0.0.1"],
    }
    data = proxy_secret_data(proxy, {"creds": {"username": b"user", "password": b"p@ss"}})
    assert data == {
        "http_proxy": b"http://user:p%40ss@proxy:3128",
        "https_proxy": b"https://proxy:3129",
        "no_proxy": b"example.com,10.0.0.1",
    }
    with pytest.raises(ValueError, match="creds"):
        proxy_secret_data(proxy, {})


def test_proxy_env_only_for_configured_parts() -> None:
    assert proxy_env({"http": {"url": "x"}}, "") == []
    env = proxy_env({"https": {"url": "x"}, "noProxy": ["a"]}, "ref")
    assert [e["name"] for e in env] == ["https_proxy", "no_proxy"]
    assert env[0]["valueFrom"] == {"secretKeyRef": {"name": "ref", "key": "https_proxy"}}
