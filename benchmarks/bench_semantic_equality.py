"""Per-call cost of semantic_equal on a realistic runner spec, against plain ``==`` on the same data.

The spec is what the resource builder makes for a dind-mode scale set (runner and
dind containers, an init container, env, volumes, resources, tolerations,
affinity), compared with an independent deep copy (so ``==`` cannot stop at
identity) and with the copy the API server hands back (empty lists dropped).

Run: ``python -m benchmarks bench_semantic_equality`` (or ``make bench``).
"""

from __future__ import annotations

import copy
import json
import timeit
from collections.abc import Callable
from typing import Any

from arc_controllers.api.v1alpha1 import EphemeralRunnerSpec
from arc_controllers.api.v1alpha1.equality import semantic_equal


def runner_spec() -> dict[str, Any]:
    """A dind-mode EphemeralRunnerSpec as JSON (about 3 KB)."""
    runner_env = [
        {"name": "DOCKER_HOST", "value": "unix:///var/run/docker.sock"},
        {"name": "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS", "value": "120"},
        {"name": "ACTIONS_RUNNER_INPUT_JITCONFIG", "valueFrom": {"secretKeyRef": {"name": "r", "key": "jitToken"}}},
        {"name": "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", "value": "actions-runner-controller/0.13.0"},
        {"name": "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "value": "1"},
    ]
    return {
        "githubConfigUrl": "https://github.com/my-org/my-repo",
        "githubConfigSecret": "arc-runner-set-gha-rs-github-secret",
        "runnerScaleSetId": 7,
        "proxy": {"https": {"url": "http://proxy:3128"}, "noProxy": ["10.0.0.0/8", ".svc"]},
        "metadata": {"labels": {"app": "runner", "team": "ci"}, "annotations": {"cluster-autoscaler/safe": "true"}},
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "arc-runner-set-gha-rs-no-permission",
            "initContainers": [
                {
                    "name": "init-dind-externals",
                    "image": "ghcr.io/actions/actions-runner:2.337.0",
                    "command": ["cp", "-r", "/home/runner/externals/.", "/home/runner/tmpDir/"],
                    "volumeMounts": [{"name": "dind-externals", "mountPath": "/home/runner/tmpDir"}],
                }
            ],
            "containers": [
                {
                    "name": "runner",
                    "image": "ghcr.io/actions/actions-runner:2.337.0",
                    "command": ["/home/runner/run.sh"],
                    "env": runner_env,
                    "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
                    "securityContext": {"runAsUser": 1001, "runAsGroup": 123},
                    "volumeMounts": [
                        {"name": "work", "mountPath": "/home/runner/_work"},
                        {"name": "dind-sock", "mountPath": "/var/run"},
                    ],
                    "envFrom": [],
                    "ports": [],
                },
                {
                    "name": "dind",
                    "image": "docker:dind",
                    "args": ["dockerd", "--host=unix:///var/run/docker.sock", "--group=$(DOCKER_GROUP_GID)"],
                    "env": [{"name": "DOCKER_GROUP_GID", "value": "123"}],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [
                        {"name": "work", "mountPath": "/home/runner/_work"},
                        {"name": "dind-sock", "mountPath": "/var/run"},
                        {"name": "dind-externals", "mountPath": "/home/runner/externals"},
                    ],
                },
            ],
            "volumes": [
                {"name": "work", "emptyDir": {"sizeLimit": "20Gi"}},
                {"name": "dind-sock", "emptyDir": {}},
                {"name": "dind-externals", "emptyDir": {}},
            ],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "ci", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["ci", "ci-large"]}]}
                        ]
                    }
                }
            },
            "imagePullSecrets": [],
        },
    }


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v not in ([], {}, None)}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


def _per_call(fn: Callable[[], object]) -> float:
    """Seconds per call: the best of 5 runs of enough calls to take about 0.2 s."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=5, number=number)) / number


def main() -> None:
    desired = runner_spec()
    same = copy.deepcopy(desired)
    persisted = _drop_empty(copy.deepcopy(desired))  # what a write and read-back returns
    desired_model = EphemeralRunnerSpec.model_validate(desired)
    persisted_model = EphemeralRunnerSpec.model_validate(persisted)
    checks = (
        desired == same,
        desired != persisted,
        semantic_equal(desired, same),
        semantic_equal(desired, persisted),
        semantic_equal(desired_model, persisted_model),
    )
    if not all(checks):
        raise RuntimeError(f"benchmark data is not what it claims: {checks}")

    size = len(json.dumps(desired))
    baseline = _per_call(lambda: desired == same)
    cases = [
        ("semantic_equal, JSON, identical copy", lambda: semantic_equal(desired, same)),
        ("semantic_equal, JSON, read-back copy", lambda: semantic_equal(desired, persisted)),
        ("semantic_equal, models, read-back copy", lambda: semantic_equal(desired_model, persisted_model)),
        ("EphemeralRunnerSpec.model_validate (decode)", lambda: EphemeralRunnerSpec.model_validate(persisted)),
    ]
    print(f"runner spec: {size} bytes of JSON")
    print(f"  {'baseline: plain == on the JSON (identical copy)':<48} {baseline * 1e6:8.2f} us/call   1.0x")
    for label, fn in cases:
        seconds = _per_call(fn)
        print(f"  {label:<48} {seconds * 1e6:8.2f} us/call {seconds / baseline:6.1f}x")


if __name__ == "__main__":
    main()
