"""Semantic equality: nil and empty alike, quantities by value, everything else exact, never raises."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from arc_controllers.api.v1alpha1 import EphemeralRunnerSpec, ResourceMeta
from arc_controllers.api.v1alpha1.equality import (
    QUANTITY_KEYS,
    QUANTITY_MAP_KEYS,
    parse_quantity,
    semantic_derivative,
    semantic_equal,
)
from arc_controllers.api.v1alpha1.k8sschema import embedded_schema


def _omit_empty(value: Any) -> Any:
    """What a write and read-back does to a Go object: empty slices and maps (omitempty) vanish."""
    if isinstance(value, dict):
        return {k: _omit_empty(v) for k, v in value.items() if v not in ([], {}, None)}
    if isinstance(value, list):
        return [_omit_empty(v) for v in value]
    return value


def _round_trip_through_api_server(spec: EphemeralRunnerSpec) -> EphemeralRunnerSpec:
    raw = json.dumps(_omit_empty(spec.to_json_dict()))
    return EphemeralRunnerSpec.from_json_dict(json.loads(raw))


# Upstream: controllers/actions.github.com/helpers_drift_test.go
#   TestEphemeralRunnerSetActionableSpecChanged_EmptySliceRoundTrip
def test_empty_slices_dropped_on_round_trip_are_not_drift() -> None:
    desired = EphemeralRunnerSpec.from_json_dict(
        {
            "githubConfigUrl": "https://github.com/owner/repo",
            "githubConfigSecret": "gh-config",
            "runnerScaleSetId": 42,
            "spec": {
                "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:2.337.0", "env": []}],
                "nodeSelector": {},
                "tolerations": [],
            },
        }
    )
    current = _round_trip_through_api_server(desired)
    # the round trip really split empty from absent, or this test would pass vacuously
    assert desired.spec is not None
    assert current.spec is not None
    assert desired.spec["containers"][0]["env"] == []
    assert "env" not in current.spec["containers"][0]
    assert "nodeSelector" in desired.spec
    assert "nodeSelector" not in current.spec
    assert desired.to_json_dict() != current.to_json_dict()

    assert semantic_equal(current, desired)
    assert semantic_equal(desired, current)
    assert semantic_equal(current.to_json_dict(), desired.to_json_dict())


def _base() -> EphemeralRunnerSpec:
    return EphemeralRunnerSpec.from_json_dict(
        {
            "githubConfigUrl": "https://github.com/owner/repo",
            "runnerScaleSetId": 42,
            "spec": {
                "containers": [
                    {
                        "name": "runner",
                        "image": "ghcr.io/actions/actions-runner:2.337.0",
                        "env": [{"name": "A", "value": "1"}],
                    }
                ]
            },
        }
    )


def _runner(spec: EphemeralRunnerSpec) -> dict[str, Any]:
    assert spec.spec is not None
    container: dict[str, Any] = spec.spec["containers"][0]
    return container


def _set_image(s: EphemeralRunnerSpec) -> None:
    _runner(s)["image"] = "ghcr.io/actions/actions-runner:2.338.0"


def _set_env_value(s: EphemeralRunnerSpec) -> None:
    _runner(s)["env"][0]["value"] = "2"


def _remove_env(s: EphemeralRunnerSpec) -> None:
    _runner(s)["env"] = None


def _add_env(s: EphemeralRunnerSpec) -> None:
    _runner(s)["env"].append({"name": "B", "value": "2"})


def _set_scale_set_id(s: EphemeralRunnerSpec) -> None:
    s.runner_scale_set_id = 43


def _set_config_url(s: EphemeralRunnerSpec) -> None:
    s.github_config_url = "https://github.com/owner/other"


def _remove_containers(s: EphemeralRunnerSpec) -> None:
    assert s.spec is not None
    s.spec["containers"] = None


# Upstream: controllers/actions.github.com/helpers_drift_test.go
#   TestEphemeralRunnerSetActionableSpecChanged_RealChangeStillDetected
@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(_set_image, id="image changed"),
        pytest.param(_set_env_value, id="env value changed"),
        pytest.param(_remove_env, id="env var removed"),
        pytest.param(_add_env, id="env var added"),
        pytest.param(_set_scale_set_id, id="scale set id changed"),
        pytest.param(_set_config_url, id="config url changed"),
        pytest.param(_remove_containers, id="container removed"),
    ],
)
def test_genuine_changes_are_reported(mutate: Callable[[EphemeralRunnerSpec], None]) -> None:
    current, desired = _base(), _base()
    mutate(desired)
    assert not semantic_equal(current, desired)
    assert not semantic_equal(desired, current)
    assert not semantic_equal(current.to_json_dict(), desired.to_json_dict())


def test_identical_specs_and_none_handling() -> None:
    assert semantic_equal(_base(), _base())
    assert semantic_equal(None, None)
    assert not semantic_equal(None, _base())
    assert not semantic_equal(_base(), None)


# Upstream: TestEphemeralRunnerSetDesiredSpecChanged_Metadata (#4695): absent metadata vs {} is a change,
# inside a present metadata nil and empty maps are alike.
def test_resource_meta_pointer_semantics() -> None:
    assert not semantic_equal(None, ResourceMeta())
    assert not semantic_equal(ResourceMeta(), None)
    assert semantic_equal(ResourceMeta(), ResourceMeta(labels={}))
    assert semantic_equal(ResourceMeta(labels={}), ResourceMeta(annotations={}))
    assert not semantic_equal(ResourceMeta(labels={"a": "1"}), ResourceMeta())
    assert not semantic_equal(ResourceMeta(labels={"a": "1"}), ResourceMeta(labels={"a": "2"}))
    with_meta = EphemeralRunnerSpec(ephemeral_runner_config_secret_metadata=ResourceMeta())
    assert not semantic_equal(with_meta, EphemeralRunnerSpec())


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1000m", "1"),
        ("1", 1),
        ("1Gi", "1024Mi"),
        ("1k", "1000"),
        ("1e3", "1k"),
        ("0.5", "500m"),
        ("1E3", 1000),
        ("0.1n", "1n"),  # rounded up to nano precision, as the API server does
        ("+2", 2),
        (0.5, "500m"),
    ],
)
def test_quantities_compare_by_value(a: Any, b: Any) -> None:
    assert parse_quantity(a) == parse_quantity(b)
    pod_a = {"containers": [{"name": "r", "resources": {"limits": {"cpu": a}, "requests": {"memory": a}}}]}
    pod_b = {"containers": [{"name": "r", "resources": {"limits": {"cpu": b}, "requests": {"memory": b}}}]}
    assert semantic_equal(pod_a, pod_b)
    assert semantic_equal({"overhead": {"cpu": a}}, {"overhead": {"cpu": b}})
    assert semantic_equal({"emptyDir": {"sizeLimit": a}}, {"emptyDir": {"sizeLimit": b}})


def test_quantity_semantics_only_where_quantities_live() -> None:
    assert not semantic_equal({"resources": {"limits": {"cpu": "1"}}}, {"resources": {"limits": {"cpu": "2"}}})
    assert not semantic_equal({"image": "1000m"}, {"image": "1"})
    assert not semantic_equal({"value": "1Gi"}, {"value": "1024Mi"})
    assert not semantic_equal({"labels": {"sizeLimit": "1Gi"}}, {"labels": {"sizeLimit": "1024Mi"}})
    assert not semantic_equal({"limits": {"cpu": "garbage"}}, {"limits": {"cpu": "1"}})
    assert semantic_equal({"limits": {"cpu": "garbage"}}, {"limits": {"cpu": "garbage"}})


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (None, [], True),
        (None, {}, True),
        ([], {}, True),
        ({"a": None}, {}, True),
        ({"a": []}, {"a": {}}, True),
        ({"a": [None]}, {"a": []}, False),
        ({"a": ""}, {}, False),
        ({"a": 0}, {}, False),
        ({"a": False}, {}, False),
        (True, 1, False),
        (False, 0, False),
        (1, 1.0, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": ""}, {"a": None}, False),
        (["a"], [None], False),
        ("1", 1, False),
        ([1, 2], [2, 1], False),
        ({"a": {"b": []}}, {"a": {}}, True),
        ({"a": {"b": [1]}}, {"a": {}}, False),
        (float("nan"), float("nan"), True),
        ("x", b"x", False),
    ],
)
def test_json_rules(a: Any, b: Any, equal: bool) -> None:
    assert semantic_equal(a, b) is equal
    assert semantic_equal(b, a) is equal


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(10 if depth < 5 else 6)
    keys = ["a", "env", "limits", "requests", "sizeLimit", "labels", "cpu", "name", "overhead", "divisor"]
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice([0, 1, -1, 10**30, 2**63])
    if choice == 3:
        return rng.choice([0.5, -0.0, 1e308, float("inf"), float("nan")])
    if choice in (4, 5):
        return rng.choice(["", "1", "1000m", "1Gi", "1e99999", "e", "-", ".5", "1Ki", "\x00", "🙂", "1" * 200])
    if choice in (6, 7):
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ({"metadata": {"labels": {}}}, {}, True),
        ({}, {"metadata": {"labels": {}}}, True),
        ({"metadata": {"labels": {}}}, {"metadata": {}}, True),
        ({"a": {"b": {"c": [], "d": None}}}, {}, True),
        (None, {"a": {"b": {}}}, True),
        ({"resources": {"limits": {}}}, {}, True),
        ({"a": {"b": {"c": ["x"]}}}, {}, False),
        ({}, {"a": {"b": ""}}, False),
        ({"a": {"b": 0}}, {}, False),
        ({}, {"a": {"labels": {"k": "v"}}}, False),
    ],
)
def test_absent_equals_an_object_empty_at_every_depth(a: Any, b: Any, equal: bool) -> None:
    """An absent object equals one whose fields are all empty, however deep, and the rule is transitive.

    Go ARC omits empty maps when it writes (``metadata: {}``), a user's manifest may spell
    ``metadata: {labels: {}}``; the two once compared equal to ``{metadata: {}}`` but not to each
    other through an absent key, which made the result depend on which side held the key.
    """
    assert semantic_equal(a, b) is equal
    assert semantic_equal(b, a) is equal


def test_never_raises_on_random_json() -> None:
    rng = random.Random(20260630)
    for _ in range(3000):
        a, b = _random_json(rng), _random_json(rng)
        result = semantic_equal(a, b)
        assert result is semantic_equal(b, a)
        assert semantic_equal(a, copy.deepcopy(a))


def test_never_raises_on_deep_or_odd_input() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert semantic_equal(deep, deep)
    other: Any = []
    for _ in range(100_000):
        other = [other]
    assert semantic_equal(deep, other)  # innermost [] on both sides
    assert not semantic_equal({"a": {1, 2}}, {"a": [1, 2]})
    assert semantic_equal({"a": object}, {"a": object})
    assert not semantic_equal({1: "x"}, {"1": "x"})


def _quantity_keys(schema: dict[str, Any], key: str, found: set[str], maps: set[str]) -> None:
    if schema.get("x-kubernetes-int-or-string") and "pattern" in schema:
        found.add(key)
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict) and additional.get("x-kubernetes-int-or-string") and "pattern" in additional:
        maps.add(key)
    for name, sub in schema.get("properties", {}).items():
        _quantity_keys(sub, name, found, maps)
    if isinstance(schema.get("items"), dict):
        _quantity_keys(schema["items"], key, found, maps)


def test_quantity_keys_match_the_kubernetes_schema() -> None:
    scalars: set[str] = set()
    maps: set[str] = set()
    _quantity_keys(embedded_schema("PodTemplateSpec"), "", scalars, maps)
    assert scalars == set(QUANTITY_KEYS)
    assert maps == set(QUANTITY_MAP_KEYS)


def test_semantic_derivative_ignores_what_desired_leaves_unset() -> None:
    desired = {
        "containers": [{"name": "listener", "image": "c:1", "env": [], "resources": {"limits": {"memory": "1Gi"}}}],
        "serviceAccountName": "",
    }
    live = {
        "containers": [
            {
                "name": "listener",
                "image": "c:1",
                "resources": {"limits": {"memory": "1024Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "serviceAccountName": "default",
        "dnsPolicy": "ClusterFirst",
    }
    assert semantic_derivative(desired, live)
    assert not semantic_derivative(live, desired)
    changed = copy.deepcopy(desired)
    changed["containers"][0]["image"] = "c:2"
    assert not semantic_derivative(changed, live)
    more = copy.deepcopy(desired)
    more["containers"].append({"name": "extra"})
    assert not semantic_derivative(more, live)
    assert semantic_derivative(None, live)
    assert semantic_derivative({"a": 0}, {"a": 0})
    assert not semantic_derivative({"a": 0}, {})  # zero is a value, not "unset"
    assert semantic_derivative(ResourceMeta(labels={"a": "b"}), {"labels": {"a": "b", "c": "d"}})


def test_semantic_derivative_never_raises() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        a, b = _random_json(rng), _random_json(rng)
        assert isinstance(semantic_derivative(a, b), bool)
        assert semantic_derivative(a, copy.deepcopy(a))
