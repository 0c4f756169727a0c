"""spec.ingress becomes the Flink Kubernetes Operator's Ingress, and status.jobManagerUrl names the Service.

Expected objects are written out by hand from the template rules (host before the first '/', the rest
the path) and the JobManager Service the builder names; the status URL must be that Service's DNS name.
"""

from __future__ import annotations

import json

import pytest
from strom_operator.config import JOB_INGRESS_ENV, job_ingress_from
from strom_operator.crd.spec import FlinkJobSpec, IngressSpec
from strom_operator.lifecycle.validation import validate_flinkjob_spec
from strom_operator.observe.derived_status import with_derived_fields
from strom_operator.resources.builders import build_job_objects
from strom_operator.resources.ingress import build_ingress, with_default_ingress
from strom_operator.resources.jobmanager_deployment import build_jobmanager_service
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.chart_rendering import render
from tests.operator.fakes import T0, deploy_stable, make_spec, spec_dict

REF = FlinkJobRef("orders", "team-a", "uid-1")


def _spec(ingress: dict[str, object], **overrides: object) -> FlinkJobSpec:
    return FlinkJobSpec.from_dict({**spec_dict(**overrides), "ingress": ingress})


def _backend_service(ingress: dict[str, object]) -> str:
    return ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]  # type: ignore[index]


def test_a_host_template_gives_a_host_rule_to_the_jobmanager_rest_port() -> None:
    spec = _spec({"template": "{{name}}.{{namespace}}.flink.example.com", "className": "nginx",
                  "annotations": {"a/b": "c"}})
    ingress = build_ingress(REF, spec.ingress)  # type: ignore[arg-type]
    service = build_jobmanager_service(REF)
    assert ingress["spec"] == {
        "ingressClassName": "nginx",
        "rules": [{"host": "orders.team-a.flink.example.com", "http": {"paths": [{
            "path": "/", "pathType": "ImplementationSpecific",
            "backend": {"service": {"name": service["metadata"]["name"], "port": {"number": 8081}}}}]}}],
    }
    rest_ports = [p["port"] for p in service["spec"]["ports"] if p["name"] == "rest"]
    assert rest_ports == [8081]
    assert ingress["metadata"]["annotations"] == {"a/b": "c"}
    assert ingress["metadata"]["ownerReferences"][0]["uid"] == "uid-1"  # deleted with the FlinkJob


def test_a_path_template_gives_a_path_rule_with_or_without_a_host() -> None:
    with_host = build_ingress(REF, _spec({"template": "flink.example.com/{{namespace}}/{{name}}(/|$)(.*)"}).ingress)  # type: ignore[arg-type]
    rule = with_host["spec"]["rules"][0]
    assert (rule["host"], rule["http"]["paths"][0]["path"]) == ("flink.example.com", "/team-a/orders(/|$)(.*)")
    path_only = build_ingress(REF, _spec({"template": "/{{namespace}}/{{name}}"}).ingress)  # type: ignore[arg-type]
    rule = path_only["spec"]["rules"][0]
    assert "host" not in rule and rule["http"]["paths"][0]["path"] == "/team-a/orders"
    assert "ingressClassName" not in path_only["spec"]


def test_the_ingress_is_among_the_deployed_objects_only_when_the_spec_asks() -> None:
    kinds = [o["kind"] for o in build_job_objects(REF, make_spec())]
    assert "Ingress" not in kinds
    kinds = [o["kind"] for o in build_job_objects(REF, _spec({"template": "/{{name}}"}))]
    assert kinds.index("Service") < kinds.index("Ingress") < kinds.index("Deployment")


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("Flink.Example.com/{{name}}", "not a lowercase DNS name"),
        ("{{name}}_x.example.com", "not a lowercase DNS name"),
        ("  ", "spec.ingress.template: required"),
    ],
)
def test_a_template_that_gives_no_valid_host_is_refused_naming_the_field(template: str, error: str) -> None:
    problem = validate_flinkjob_spec(_spec({"template": template}))
    assert problem is not None and problem.startswith("spec.ingress.template") and error in problem


def test_a_batch_job_has_no_ingress() -> None:
    problem = validate_flinkjob_spec(_spec({"template": "/{{name}}"}, mode="batch"))
    assert problem is not None and problem.startswith("spec.ingress:")


def test_the_spec_round_trips_with_its_ingress() -> None:
    spec = _spec({"template": "/{{name}}", "annotations": {"x": "y"}})
    assert FlinkJobSpec.from_dict(spec.to_dict()) == spec
    assert FlinkJobSpec.from_dict(spec.to_dict()).to_dict()["ingress"] == {"template": "/{{name}}",
                                                                            "annotations": {"x": "y"}}


def test_status_names_the_jobmanager_services_rest_url() -> None:
    _, status, _ = deploy_stable()
    service = build_jobmanager_service(REF)["metadata"]
    plain = with_derived_fields(status, REF, batch=False, now=T0)
    assert plain.to_dict()["jobManagerUrl"] == f"http://{service['name']}.{service['namespace']}.svc:8081"
    assert with_derived_fields(status, REF, batch=False, now=T0, tls=True).job_manager_url.startswith("https://")
    assert "jobManagerUrl" not in with_derived_fields(status, REF, batch=True, now=T0).to_dict()


# -- the chart's jobIngress: the default for FlinkJobs without spec.ingress ---------------------------

JOB_INGRESS = {"template": "flink.example.com/{{namespace}}/{{name}}", "className": "nginx", "annotations": {"k": "v"}}


def _operator_env(values: dict[str, object]) -> dict[str, str]:
    (deployment,) = [d for d in render(values) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def test_the_charts_job_ingress_reaches_the_operator_as_the_spec_it_stands_for() -> None:
    env = _operator_env({"jobIngress": JOB_INGRESS})
    assert job_ingress_from(env[JOB_INGRESS_ENV]) == IngressSpec(
        "flink.example.com/{{namespace}}/{{name}}", "nginx", {"k": "v"}
    )
    assert JOB_INGRESS_ENV not in _operator_env({})  # the default: no Ingress for jobs that ask for none


def test_a_job_without_spec_ingress_gets_the_charts_and_one_with_keeps_its_own() -> None:
    default = job_ingress_from(json.dumps(JOB_INGRESS))
    assert with_default_ingress(make_spec(), default).ingress == default
    own = _spec({"template": "/{{name}}"})
    assert with_default_ingress(own, default) == own
    assert with_default_ingress(make_spec(mode="batch"), default).ingress is None
    assert with_default_ingress(make_spec(), None).ingress is None


@pytest.mark.parametrize(("raw", "error"), [("{", "not JSON"), ('{"template": "Upper.Case"}', "lowercase DNS"),
                                            ('{"template": "/x", "annotations": []}', "expected")])
def test_a_job_ingress_that_cannot_become_an_ingress_is_refused_naming_the_setting(raw: str, error: str) -> None:
    with pytest.raises(ValueError, match=JOB_INGRESS_ENV) as refused:
        job_ingress_from(raw)
    assert error in str(refused.value)


def test_an_empty_job_ingress_template_means_none() -> None:
    assert job_ingress_from("") is None and job_ingress_from('{"template": "", "className": ""}') is None


def _rest_peers(spec: FlinkJobSpec) -> list[dict[str, object]]:
    (policy,) = [o for o in build_job_objects(REF, spec) if o["kind"] == "NetworkPolicy"]
    return [peer for rule in policy["spec"]["ingress"] if {"port": 8081, "protocol": "TCP"} in rule["ports"]
            for peer in rule["from"]]


def test_the_network_policy_admits_the_ingress_controllers_namespaces_to_rest_only_when_named() -> None:
    controllers = {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}
    named = _spec({"template": "/{{name}}", "controllerNamespaceSelector": controllers})
    assert {"namespaceSelector": controllers} in _rest_peers(named)
    unnamed = _rest_peers(_spec({"template": "/{{name}}"}))
    assert not any("namespaceSelector" in peer and "podSelector" not in peer for peer in unnamed)
    (policy,) = [o for o in build_job_objects(REF, named) if o["kind"] == "NetworkPolicy"]
    metrics_rules = [r for r in policy["spec"]["ingress"] if {"port": 9249, "protocol": "TCP"} in r["ports"]]
    assert all({"port": 8081, "protocol": "TCP"} not in r["ports"] for r in metrics_rules)  # REST stays apart
