"""The FlinkJob CRD: generated from the Python schema, documented, and validating manifests with paths."""

from __future__ import annotations

import os

import jsonschema
import pytest
import yaml
from strom_operator.crd.definition import CHART_CRD_FILE, CRD_FILE, build_crd, openapi_schema, render_crd_yaml
from strom_operator.crd.schema_spec import SPEC
from strom_operator.crd.schema_types import apply_defaults, missing_descriptions
from strom_operator.crd.spec import FlinkJobSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "k8s", "flinkjob-wordcount.yaml")


def _read(rel: str) -> str:
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def _errors(manifest: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(openapi_schema())
    return ["/".join(str(p) for p in e.absolute_path) + ": " + e.message for e in validator.iter_errors(manifest)]


def _example() -> dict:
    with open(EXAMPLE, encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("rel", [CRD_FILE, CHART_CRD_FILE])
def test_committed_crd_equals_the_generated_one(rel):
    assert _read(rel) == render_crd_yaml(), f"run `python -m strom_operator.crd.definition` to regenerate {rel}"


def test_crd_names_and_subresources():
    crd = build_crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "flinkjobs.strom.io"
    assert spec["group"] == "strom.io" and spec["names"]["kind"] == "FlinkJob"
    assert spec["names"]["plural"] == "flinkjobs" and spec["names"]["shortNames"] == ["fj"]
    version = spec["versions"][0]
    assert version["name"] == "v1beta1"
    assert version["subresources"]["status"] == {}
    assert version["subresources"]["scale"] == {"specReplicasPath": ".spec.job.parallelism",
                                                "statusReplicasPath": ".status.scaling.parallelism",
                                                "labelSelectorPath": ".status.selector"}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Job State", "Lifecycle", "Parallelism", "Last Savepoint", "Age"]


def test_every_field_has_a_description():
    assert missing_descriptions(openapi_schema()) == []


def test_every_schema_node_has_a_type_as_structural_schemas_require():
    def untyped(node, path):
        found = [] if "type" in node else [path]
        for name, sub in node.get("properties", {}).items():
            found += untyped(sub, f"{path}.{name}")
        if "items" in node:
            found += untyped(node["items"], path + "[]")
        return found

    assert untyped(openapi_schema(), "") == []


def test_example_manifest_validates_and_parses():
    manifest = _example()
    assert manifest["apiVersion"] == "strom.io/v1beta1" and manifest["kind"] == "FlinkJob"
    assert _errors(manifest) == []
    spec = FlinkJobSpec.from_dict(manifest["spec"])
    assert spec.job.upgrade_mode == "savepoint" and spec.savepoints.dir.startswith("s3://")


@pytest.mark.parametrize("path, value, where", [
    (("job", "parallelism"), 0, "spec/job/parallelism"),
    (("job", "upgradeMode"), "snapshot", "spec/job/upgradeMode"),
    (("job", "state"), "paused", "spec/job/state"),
    (("taskManager", "slots"), 0, "spec/taskManager/slots"),
    (("checkpointing", "interval"), "soon", "spec/checkpointing/interval"),
    (("savepoints", "maxHistory"), "ten", "spec/savepoints/maxHistory"),
    (("mode",), "micro-batch", "spec/mode"),
])
def test_invalid_manifests_are_rejected_with_the_field_path(path, value, where):
    manifest = _example()
    node = manifest["spec"]
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    errors = _errors(manifest)
    assert errors and errors[0].startswith(where + ":"), errors


def test_missing_required_fields_are_rejected():
    manifest = _example()
    del manifest["spec"]["job"]["entry"]  # none of entry, sql, sqlFrom (oneOf)
    assert any(e.startswith("spec/job:") and "is not valid under any of the given schemas" in e
               for e in _errors(manifest))
    del manifest["spec"]["image"]
    assert any("'image' is a required property" in e for e in _errors(manifest))


def test_api_server_defaults_equal_the_parsed_spec_defaults():
    defaulted = apply_defaults(SPEC, {"image": "i", "job": {"entry": "/j.py"}})
    assert defaulted["job"]["parallelism"] == 1 and defaulted["job"]["upgradeMode"] == "stateless"
    assert defaulted["savepoints"] == {"maxHistory": 10, "maxAge": "24 h", "onDeletion": False}
    assert defaulted["taskManager"]["slots"] == 1
    assert FlinkJobSpec.from_dict(defaulted) == FlinkJobSpec.from_dict({"image": "i", "job": {"entry": "/j.py"}})


def test_spec_round_trips_through_to_dict():
    spec = FlinkJobSpec.from_dict(_example()["spec"])
    assert FlinkJobSpec.from_dict(spec.to_dict()) == spec
