"""The FlinkJob CRD passes the API server's structural-schema rules (schema_structural.py), and the
checker refuses what a real kube-apiserver refused: each rule is shown failing on a mutated copy."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from strom_operator.crd.definition import CRD_FILE, build_crd
from strom_operator.crd.schema_structural import crd_errors, prune

from tests.operator.test_crd import _read


def _crd() -> dict[str, Any]:
    return copy.deepcopy(build_crd())


def _root(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _conditions(crd: dict[str, Any]) -> dict[str, Any]:
    return _root(crd)["properties"]["status"]["properties"]["conditions"]


def test_the_generated_crd_is_structural():
    assert crd_errors(build_crd()) == []


def test_the_committed_crd_is_structural():
    assert crd_errors(yaml.safe_load(_read(CRD_FILE))) == []


def test_a_description_on_the_root_metadata_is_refused_as_the_api_server_refuses_it():
    """What v1.19 answered to the CRD before the fix: `spec.validation.openAPIV3Schema.properties[metadata]:
    Forbidden: must not specify anything other than name and generateName`."""
    crd = _crd()
    _root(crd)["properties"]["metadata"] = {"type": "object", "description": "Standard object metadata."}
    [error] = crd_errors(crd)
    assert error.startswith("spec.versions[0].schema.openAPIV3Schema.properties[metadata].description: Forbidden")
    assert "must not specify anything other than name and generateName" in error


def test_metadata_may_restrict_name_but_nothing_else():
    crd = _crd()
    _root(crd)["properties"]["metadata"] = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 45}, "labels": {"type": "object"}}}
    assert [e.split(":")[0] for e in crd_errors(crd)] == [
        "spec.versions[0].schema.openAPIV3Schema.properties[metadata].properties[labels]"]


@pytest.mark.parametrize("mutate, expected", [
    (lambda s: s["properties"]["spec"]["properties"]["image"].pop("type"),
     "properties[spec].properties[image].type: Required"),
    (lambda s: s["properties"]["spec"]["properties"]["flinkConfiguration"].update(properties={}),
     "properties[spec].properties[flinkConfiguration].additionalProperties: Forbidden: additionalProperties and "
     "properties are mutually exclusive"),
    (lambda s: s["properties"]["spec"]["properties"]["job"]["properties"]["args"].update(items=[{"type": "string"}]),
     "properties[spec].properties[job].properties[args].items: Forbidden: items must be a single schema"),
    (lambda s: s["properties"]["spec"]["properties"]["job"]["properties"]["args"].pop("items"),
     "properties[spec].properties[job].properties[args].items: Required"),
    (lambda s: s["properties"]["spec"]["properties"]["job"]["properties"]["parallelism"].update(default="one"),
     "properties[spec].properties[job].properties[parallelism].default: Invalid value: 'one' is not of type"),
    (lambda s: s["properties"]["spec"]["properties"]["jobManager"].update(default={"replicas": 2}),
     "properties[spec].properties[jobManager].default: Invalid value: must not have unknown fields"),
    (lambda s: s["properties"]["spec"]["properties"]["image"].update(default=None),
     "properties[spec].properties[image].default: Invalid value: null: only with nullable: true"),
    (lambda s: s["properties"]["spec"]["properties"]["image"].update({"x-kubernetes-validations": [
        {"rule": "self != ''"}]}), "properties[spec].properties[image].x-kubernetes-validations: Forbidden: CEL"),
    (lambda s: s["properties"]["spec"]["properties"]["image"].update(type="null"),
     "properties[spec].properties[image].type: Unsupported value"),
    (lambda s: s["properties"]["spec"].update({"anyOf": [{"properties": {"replicas": {"type": "integer"}}}]}),
     "properties[spec].anyOf[0].properties[replicas].type: Forbidden: must be empty to be structural"),
    (lambda s: s["properties"]["spec"]["properties"]["job"]["properties"]["args"].update(uniqueItems=True),
     "properties[spec].properties[job].properties[args].uniqueItems: Forbidden"),
    (lambda s: s["properties"]["spec"]["properties"]["podTemplate"].update({
        "x-kubernetes-preserve-unknown-fields": False}),
     "properties[spec].properties[podTemplate].x-kubernetes-preserve-unknown-fields: Invalid value"),
    (lambda s: s.update(description=3, examples=[]), "openAPIV3Schema.examples: Invalid value: unknown field"),
])
def test_each_structural_rule_refuses_its_violation(mutate, expected):
    crd = _crd()
    mutate(_root(crd))
    errors = crd_errors(crd)
    assert any(expected in e for e in errors), errors


def test_a_map_list_needs_keys_that_are_required_scalar_fields_of_its_items():
    crd = _crd()
    conditions = _conditions(crd)
    assert conditions["x-kubernetes-list-type"] == "map" and conditions["x-kubernetes-list-map-keys"] == ["type"]
    conditions["items"]["required"] = ["status"]
    assert any("items.properties[type]: Required: a list map key must be required or have a default" in e
               for e in crd_errors(crd))
    conditions["x-kubernetes-list-map-keys"] = ["lastSeen"]
    assert any("'lastSeen': not a property of the items" in e for e in crd_errors(crd))
    del conditions["x-kubernetes-list-map-keys"]
    assert any("x-kubernetes-list-map-keys: Required" in e for e in crd_errors(crd))


def test_the_scale_subresource_names_a_selector_an_hpa_can_read():
    crd = _crd()
    version = crd["spec"]["versions"][0]
    assert version["subresources"]["scale"]["labelSelectorPath"] == ".status.selector"
    assert _root(crd)["properties"]["status"]["properties"]["selector"]["type"] == "string"
    del _root(crd)["properties"]["status"]["properties"]["selector"]
    assert any("labelSelectorPath: Invalid value: '.status.selector': must point at a string field" in e
               for e in crd_errors(crd))
    version["subresources"]["scale"]["specReplicasPath"] = ".status.scaling.parallelism"
    assert any("specReplicasPath: Invalid value: '.status.scaling.parallelism': should be a json path under .spec"
               in e for e in crd_errors(crd))


def test_kstatus_conditions_are_declared():
    types = _conditions(build_crd())["items"]["properties"]["type"]["enum"]
    assert {"Ready", "Progressing", "Degraded", "Reconciling", "Stalled"} <= set(types)


def test_pruning_keeps_known_fields_and_preserved_subtrees_only():
    node = {"type": "object", "properties": {
        "a": {"type": "integer"},
        "t": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "m": {"type": "object", "additionalProperties": {"type": "string"}}}}
    value = {"a": 1, "b": 2, "t": {"anything": {"goes": 1}}, "m": {"k": "v"}}
    assert prune(node, value) == {"a": 1, "t": {"anything": {"goes": 1}}, "m": {"k": "v"}}
