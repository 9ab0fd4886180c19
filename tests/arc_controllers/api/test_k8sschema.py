"""Inlining the API server's OpenAPI v3 schemas the way controller-gen writes CRD schemas."""

from __future__ import annotations

from typing import Any

import pytest

from arc_controllers.api.v1alpha1.k8sschema import (
    EMBEDDED_OBJECT_META,
    QUANTITY_PATTERN,
    embedded_schema,
    inline_schemas,
    load_embedded_schemas,
)

_REF = "#/components/schemas/"
SCHEMAS: dict[str, Any] = {
    "io.k8s.api.core.v1.Thing": {
        "type": "object",
        "description": "dropped",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "default": "", "description": "dropped"},
            "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]},
            "ref": {"allOf": [{"$ref": _REF + "io.k8s.api.core.v1.LocalObjectReference"}], "default": {}},
            "items": {
                "type": "array",
                "items": {"default": "", "type": "string"},
                "x-kubernetes-list-type": "atomic",
                "x-kubernetes-patch-strategy": "merge",
            },
            "limits": {
                "type": "object",
                "additionalProperties": {"$ref": _REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"},
            },
            "port": {"allOf": [{"$ref": _REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]},
            "when": {"allOf": [{"$ref": _REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"}]},
            "metadata": {"allOf": [{"$ref": _REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
        },
    },
    "io.k8s.api.core.v1.LocalObjectReference": {
        "type": "object",
        "properties": {"name": {"type": "string", "default": ""}},
        "x-kubernetes-map-type": "atomic",
    },
    "io.k8s.api.core.v1.Loop": {"properties": {"self": {"$ref": _REF + "io.k8s.api.core.v1.Loop"}}},
}


def test_inlines_like_controller_gen() -> None:
    (thing,) = inline_schemas(SCHEMAS, {"Thing": "io.k8s.api.core.v1.Thing"}).values()
    props = thing["properties"]
    assert "description" not in thing
    assert thing["required"] == ["name"]
    assert props["name"] == {"type": "string"}  # zero default of a required field: openapi-gen's, not a marker
    assert props["protocol"] == {"type": "string", "default": "TCP"}  # a +default marker; enum dropped
    assert props["ref"] == {
        "type": "object",
        "properties": {"name": {"type": "string", "default": ""}},
        "x-kubernetes-map-type": "atomic",
    }
    assert props["items"] == {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"}
    assert props["limits"]["additionalProperties"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }
    assert props["port"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    assert props["when"] == {"format": "date-time", "type": "string"}
    assert props["metadata"] == EMBEDDED_OBJECT_META
    assert "$ref" not in str(thing)


def test_recursive_and_missing_schemas_are_errors() -> None:
    with pytest.raises(ValueError, match="recursive schema"):
        inline_schemas(SCHEMAS, {"Loop": "io.k8s.api.core.v1.Loop"})
    with pytest.raises(KeyError):
        inline_schemas(SCHEMAS, {"Missing": "io.k8s.api.core.v1.Missing"})


def test_saved_schemas() -> None:
    saved = load_embedded_schemas()
    assert saved["kubernetesVersion"].startswith("v1.")
    assert set(saved["schemas"]) == {"PodTemplateSpec", "ConfigMapKeySelector", "LocalObjectReference"}
    pod_spec = embedded_schema("PodSpec")
    assert pod_spec["required"] == ["containers"]
    assert embedded_schema("EmbeddedObjectMeta") == EMBEDDED_OBJECT_META
    assert embedded_schema("LocalObjectReference[]")["items"] == embedded_schema("LocalObjectReference")
    assert "$ref" not in str(saved)
    assert "x-kubernetes-patch-strategy" not in str(saved)


_CORE = "io.k8s.api.core.v1."
_LOCAL_REF = {"allOf": [{"$ref": _REF + _CORE + "LocalObjectReference"}]}
CONTROLLER_GEN_RULES: dict[str, Any] = {
    _CORE + "LocalObjectReference": SCHEMAS[_CORE + "LocalObjectReference"],
    _CORE + "Root": {
        "type": "object",
        "properties": {
            "azureDisk": {"$ref": _REF + _CORE + "AzureDiskVolumeSource"},
            "configMapRef": {"$ref": _REF + _CORE + "ConfigMapEnvSource"},
            "ref": _LOCAL_REF,
            "term": {"$ref": _REF + _CORE + "Term"},
        },
    },
    # +default=ref(...) markers, evaluated by openapi-gen; +default="ext4" a literal one
    _CORE + "AzureDiskVolumeSource": {
        "type": "object",
        "required": ["diskName", "diskURI"],
        "properties": {
            "cachingMode": {"type": "string", "default": "ReadWrite"},
            "kind": {"type": "string", "default": "Shared"},
            "fsType": {"type": "string", "default": "ext4"},
            "diskName": {"type": "string", "default": ""},
            "diskURI": {"type": "string", "default": ""},
        },
    },
    # embeds LocalObjectReference inline: openapi-gen lists its fields but not its +structType
    _CORE + "ConfigMapEnvSource": {
        "type": "object",
        "properties": {"name": {"type": "string", "default": ""}, "optional": {"type": "boolean"}},
    },
    _CORE + "Term": {"type": "object", "required": ["weight", "podAffinityTerm"], "properties": {}},
}


def test_follows_controller_gen_where_the_generators_read_go_markers_differently() -> None:
    (root,) = inline_schemas(CONTROLLER_GEN_RULES, {"Root": _CORE + "Root"}).values()
    props = root["properties"]
    disk = props["azureDisk"]["properties"]
    assert "default" not in disk["cachingMode"]  # controller-gen skips +default=ref(...)
    assert "default" not in disk["kind"]
    assert disk["fsType"] == {"type": "string", "default": "ext4"}
    assert props["azureDisk"]["required"] == ["diskName", "diskURI"]
    assert props["configMapRef"]["x-kubernetes-map-type"] == "atomic"  # carried from the inline embedding
    assert props["configMapRef"]["properties"]["name"] == {"type": "string", "default": ""}
    assert props["ref"]["x-kubernetes-map-type"] == "atomic"
    assert props["term"]["required"] == ["podAffinityTerm", "weight"]  # controller-gen sorts, openapi-gen does not
