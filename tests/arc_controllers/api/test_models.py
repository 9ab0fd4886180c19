"""The v1alpha1 models: stored objects round-trip unchanged, and the helpers behave as upstream's."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from arc_controllers.api.v1alpha1 import (
    KINDS,
    AutoscalingListener,
    AutoscalingListenerPhase,
    AutoscalingRunnerSet,
    EphemeralRunner,
    EphemeralRunnerSet,
    EphemeralRunnerSetSpec,
    ListenerConfig,
    ProxyConfig,
    ResourceMeta,
    ScalerConfig,
    TLSConfig,
)
from reconcilekit.client import GroupVersionKind

# What the gha-runner-scale-set chart renders (ARC's quickstart values), as stored by the API server.
ARS: dict[str, Any] = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "AutoscalingRunnerSet",
    "metadata": {
        "name": "arc-runner-set",
        "namespace": "arc-runners",
        "uid": "6f0c1d7e-0000-4000-8000-000000000001",
        "resourceVersion": "1234",
        "generation": 3,
        "creationTimestamp": "2026-06-30T12:00:00Z",
        "labels": {
            "app.kubernetes.io/component": "autoscaling-runner-set",
            "app.kubernetes.io/name": "arc-runner-set",
            "app.kubernetes.io/version": "0.13.0",
            "actions.github.com/scale-set-name": "arc-runner-set",
            "actions.github.com/scale-set-namespace": "arc-runners",
        },
        "annotations": {
            "actions.github.com/cleanup-github-secret-name": "arc-runner-set-gha-rs-github-secret",
            "actions.github.com/cleanup-manager-role-binding": "arc-runner-set-gha-rs-manager",
            "actions.github.com/values-hash": "3c4b8d9e",
            "runner-scale-set-id": "7",
        },
        "finalizers": ["autoscalingrunnerset.actions.github.com/finalizer"],
        "managedFields": [{"manager": "helm", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {}}],
    },
    "spec": {
        "githubConfigUrl": "https://github.com/my-org",
        "githubConfigSecret": "arc-runner-set-gha-rs-github-secret",
        "runnerScaleSetName": "arc-runner-set",
        "minRunners": 0,
        "maxRunners": 5,
        "proxy": {"https": {"url": "http://proxy:3128", "credentialSecretRef": "proxy-creds"}, "noProxy": ["a"]},
        "listenerConfig": {"scaler": {"qps": 20}},
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "serviceAccountName": "arc-runner-set-gha-rs-no-permission",
                "containers": [
                    {
                        "name": "runner",
                        "image": "ghcr.io/actions/actions-runner:latest",
                        "command": ["/home/runner/run.sh"],
                        "env": [],
                        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                        "aFieldFromKubernetes1_40": {"x": 1},
                    }
                ],
                "nodeSelector": {},
            }
        },
    },
    "status": {"phase": "Running", "observedGeneration": 3},
}

ER: dict[str, Any] = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "EphemeralRunner",
    "metadata": {
        "name": "arc-runner-set-abcde-runner-x7k2p",
        "namespace": "arc-runners",
        "annotations": {"actions.github.com/patch-id": "4", "actions.github.com/actionable-revision": "2"},
        "finalizers": [
            "ephemeralrunner.actions.github.com/finalizer",
            "ephemeralrunner.actions.github.com/runner-registration-finalizer",
        ],
        "ownerReferences": [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunnerSet",
                "name": "arc-runner-set-abcde",
                "uid": "u",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "githubConfigUrl": "https://github.com/my-org",
        "githubConfigSecret": "arc-runner-set-gha-rs-github-secret",
        "runnerScaleSetId": 7,
        "metadata": {"creationTimestamp": None, "labels": {"app": "runner"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "side", "image": "busybox", "env": [{"name": "ACTIONS_RUNNER_CONTAINER_HOOKS"}]},
                {
                    "name": "runner",
                    "image": "ghcr.io/actions/actions-runner:latest",
                    "command": ["/home/runner/run.sh"],
                    "resources": {},
                },
            ],
        },
    },
    "status": {
        "ready": False,
        "phase": "Running",
        "runnerId": 1234,
        "runnerName": "arc-runner-set-abcde-runner-x7k2p",
        "failures": {"uid-1": "2026-06-30T12:00:00Z", "uid-2": "2026-06-30T12:05:00Z"},
        "jobRequestId": 9007199254740993,
        "jobId": "job-1",
        "jobRepositoryName": "my-org/my-repo",
        "jobWorkflowRef": "my-org/my-repo/.github/workflows/ci.yaml@refs/heads/main",
        "workflowRunId": 77,
        "jobDisplayName": "build",
    },
}

ERS: dict[str, Any] = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "EphemeralRunnerSet",
    "metadata": {"name": "arc-runner-set-abcde", "namespace": "arc-runners", "generation": 5},
    "spec": {
        "replicas": 0,
        "patchID": 0,
        "actionableRevision": 2,
        "ephemeralRunnerMetadata": {},
        "ephemeralRunnerSpec": copy.deepcopy(ER["spec"]),
    },
    "status": {"phase": "Running", "appliedActionableRevision": 2, "finishedRunnerCleanupPatchID": 4},
}

LISTENER: dict[str, Any] = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "AutoscalingListener",
    "metadata": {"name": "arc-runner-set-754b578d-listener", "namespace": "arc-systems"},
    "spec": {
        "githubConfigUrl": "https://github.com/my-org",
        "githubConfigSecret": "arc-runner-set-gha-rs-github-secret",
        "runnerScaleSetId": 7,
        "autoscalingRunnerSetNamespace": "arc-runners",
        "autoscalingRunnerSetName": "arc-runner-set",
        "ephemeralRunnerSetName": "arc-runner-set-abcde",
        "maxRunners": 2147483647,
        "minRunners": 0,
        "image": "ghcr.io/actions/gha-runner-scale-set-controller:0.13.0",
        "imagePullSecrets": [{"name": "regcred"}],
        "metrics": {"histograms": {"gha_job_startup_duration_seconds": {"labels": ["repository"], "buckets": [0.5]}}},
        "vaultConfig": {
            "type": "azure_key_vault",
            "azureKeyVault": {"url": "https://v", "tenantId": "t", "clientId": "c", "certificatePath": "/p"},
            "proxy": {"http": {"url": "http://vault-proxy"}},
        },
        "phase": "Stopped",
    },
    "status": {},
}


@pytest.mark.parametrize(
    ("model", "obj"),
    [(AutoscalingRunnerSet, ARS), (EphemeralRunner, ER), (EphemeralRunnerSet, ERS), (AutoscalingListener, LISTENER)],
)
def test_stored_objects_round_trip_unchanged(model: type[Any], obj: dict[str, Any]) -> None:
    original = copy.deepcopy(obj)
    decoded = model.model_validate(obj)
    # JSON nulls inside embedded Kubernetes JSON (``creationTimestamp: null``) are kept as they came
    assert decoded.model_dump(by_alias=True, exclude_none=True) == original
    assert decoded.to_json_dict() == original
    assert obj == original, "decoding must not touch its input"
    again = model.model_validate(decoded.to_json_dict())
    assert again == decoded


def test_gvk_on_every_kind() -> None:
    assert [k.GVK for k in KINDS] == [  # type: ignore[attr-defined]
        GroupVersionKind("actions.github.com", "v1alpha1", "AutoscalingRunnerSet"),
        GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunnerSet"),
        GroupVersionKind("actions.github.com", "v1alpha1", "EphemeralRunner"),
        GroupVersionKind("actions.github.com", "v1alpha1", "AutoscalingListener"),
    ]
    assert AutoscalingRunnerSet.GVK.api_version == ARS["apiVersion"]


def test_absent_stays_absent_and_python_names_work() -> None:
    ers = EphemeralRunnerSet.model_validate({"spec": {"ephemeralRunnerSpec": {}}})
    assert ers.status is None
    assert ers.spec.replicas is None
    assert ers.spec.patch_id is None
    built = EphemeralRunnerSetSpec(replicas=3, patch_id=0, actionable_revision=1)
    assert built.to_json_dict() == {"replicas": 3, "patchID": 0, "actionableRevision": 1, "ephemeralRunnerSpec": {}}
    assert EphemeralRunnerSetSpec.model_validate({"patchID": 5}).patch_id == 5


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="minRunners"):
        AutoscalingRunnerSet.model_validate({"spec": {"minRunners": "many"}})
    with pytest.raises(ValidationError, match="template"):
        AutoscalingRunnerSet.model_validate({"spec": {"template": ["not", "an", "object"]}})


def test_field_docstrings_become_descriptions() -> None:
    assert EphemeralRunnerSetSpec.model_fields["patch_id"].description
    assert all(
        info.description
        for info in AutoscalingRunnerSet.model_fields["spec"].annotation.model_fields.values()  # type: ignore[union-attr]
    )


def test_the_four_kinds_read_their_github_config_fields() -> None:
    """The fields upstream's ActionsGitHubObject accessors return, read from the models' specs."""
    ars = AutoscalingRunnerSet.model_validate(ARS)
    ers = EphemeralRunnerSet.model_validate(ERS)
    er = EphemeralRunner.model_validate(ER)
    listener = AutoscalingListener.model_validate(LISTENER)
    for spec in (ars.spec, ers.spec.ephemeral_runner_spec, er.spec, listener.spec):
        assert spec.github_config_url == "https://github.com/my-org"
        assert spec.github_config_secret == "arc-runner-set-gha-rs-github-secret"
        assert spec.github_server_tls is None
    proxy = ars.spec.proxy
    assert proxy is not None
    assert proxy.https is not None
    assert proxy.https.credential_secret_ref == "proxy-creds"
    assert ars.spec.vault_config is None
    vault = listener.spec.vault_config
    assert vault is not None
    assert vault.proxy is not None
    assert vault.proxy.http is not None
    assert vault.proxy.http.url == "http://vault-proxy"
    assert listener.spec.phase == AutoscalingListenerPhase.STOPPED
    assert EphemeralRunnerSet().spec.ephemeral_runner_spec.github_config_url is None


def test_tls_config_requires_a_config_map_key_ref() -> None:
    with pytest.raises(ValueError, match="certificateFrom not specified"):
        TLSConfig().config_map_key_ref_or_raise()
    with pytest.raises(ValueError, match="configMapKeyRef not specified"):
        TLSConfig.model_validate({"certificateFrom": {}}).config_map_key_ref_or_raise()
    tls = TLSConfig.model_validate({"certificateFrom": {"configMapKeyRef": {"name": "ca", "key": "ca.crt"}}})
    assert tls.config_map_key_ref_or_raise() == ("ca", "ca.crt")


def test_scaler_defaults() -> None:
    scaler = ScalerConfig(qps=20, burst=0)
    assert (scaler.effective_qps(), scaler.effective_burst(), scaler.effective_workers()) == (20, 100, 10)
    assert ListenerConfig().get_scaler() is None
    assert AutoscalingRunnerSet.model_validate(ARS).spec.listener_config == ListenerConfig(scaler=ScalerConfig(qps=20))


def test_resource_meta_maps_are_independently_optional() -> None:
    assert ResourceMeta.model_validate({"labels": {"a": "b"}}).annotations is None
    assert ResourceMeta(annotations={"x": "y"}).to_json_dict() == {"annotations": {"x": "y"}}


# Upstream: apis/actions.github.com/v1alpha1/proxy_config_test.go TestProxyConfig_ToSecret
def test_proxy_config_to_secret() -> None:
    proxy = ProxyConfig.model_validate(
        {
            "http": {"url": "http://proxy.example.com:8080", "credentialSecretRef": "my-secret"},
            "https": {"url": "https://proxy.example.com:8080", "credentialSecretRef": "my-secret"},
            "noProxy": ["noproxy.example.com", "noproxy2.example.com"],
        }
    )
    result = proxy.to_secret_data({"my-secret": {"username": b"username", "password": b"password"}})
    assert result["http_proxy"] == b"http://username:password@proxy.example.com:8080"
    assert result["https_proxy"] == b"https://username:password@proxy.example.com:8080"
    assert result["no_proxy"] == b"noproxy.example.com,noproxy2.example.com"


# Python only: userinfo escaping as Go's url.UserPassword does it
def test_proxy_secret_data_escapes_credentials() -> None:
    proxy = ProxyConfig.model_validate(
        {
            "http": {"url": "http://proxy.example.com:3128", "credentialSecretRef": "creds"},
            "https": {"url": "https://proxy.example.com:3129/p", "credentialSecretRef": "creds"},
            "noProxy": ["example.com", "10.0.0.0/8"],
        }
    )
    assert proxy.credential_secret_names() == ["creds"]
    data = proxy.to_secret_data({"creds": {"username": b"us@er", "password": b"p:ss/w?rd$"}})
    assert data == {
        "http_proxy": b"http://us%40er:p%3Ass%2Fw%3Frd$@proxy.example.com:3128",
        "https_proxy": b"https://us%40er:p%3Ass%2Fw%3Frd$@proxy.example.com:3129/p",
        "no_proxy": b"example.com,10.0.0.0/8",
    }


def test_proxy_secret_data_without_credentials_or_parts() -> None:
    proxy = ProxyConfig.model_validate({"https": {"url": "http://p:1"}})
    assert proxy.credential_secret_names() == []
    assert proxy.to_secret_data({}) == {"http_proxy": b"", "https_proxy": b"http://p:1", "no_proxy": b""}
    with pytest.raises(KeyError, match="failed to get secret missing for http proxy"):
        ProxyConfig.model_validate({"http": {"url": "http://p", "credentialSecretRef": "missing"}}).to_secret_data({})
    with pytest.raises(ValueError, match="failed to parse proxy http url"):
        ProxyConfig.model_validate({"http": {"url": "http://p:notaport"}}).to_secret_data({})
