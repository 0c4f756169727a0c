"""The Ingress of a FlinkJob (spec.ingress): its dashboard and REST API from outside the cluster.

As the Flink Kubernetes Operator reads `template`: `{{name}}` and `{{namespace}}` are replaced, then what
comes before the first '/' is the rule's host (none when the template starts with '/') and the rest its
path (pathType ImplementationSpecific, so controllers that take regular expressions, such as
ingress-nginx with a rewrite-target annotation, can strip the prefix). The backend is the JobManager
Service's REST port. Pure: spec in, object out.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec, IngressSpec
from strom_operator.resources.labels import REST_PORT, FlinkJobRef, jobmanager_name, object_meta

_DNS_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*")


def ingress_name(ref: FlinkJobRef) -> str:
    return jobmanager_name(ref)


def ingress_host_and_path(ref: FlinkJobRef, ingress: IngressSpec) -> tuple[str | None, str]:
    text = ingress.template.replace("{{name}}", ref.name).replace("{{namespace}}", ref.namespace)
    host, slash, path = text.partition("/")
    return host or None, slash + path if slash else "/"


def ingress_problem(ingress: IngressSpec) -> str | None:
    """Why spec.ingress cannot become an Ingress (checked with placeholder values), or None."""
    if not ingress.template.strip():
        return "spec.ingress.template: required: a host and/or path such as '{{name}}.{{namespace}}.example.com'"
    host, _ = ingress_host_and_path(FlinkJobRef("name", "namespace", ""), ingress)
    if host is not None and not _DNS_NAME.fullmatch(host.removeprefix("*.")):
        return (f"spec.ingress.template: host {host!r} (with placeholders filled) is not a lowercase DNS name; "
                "start the template with '/' for a path-only rule")
    return None


def build_ingress(ref: FlinkJobRef, ingress: IngressSpec) -> dict[str, Any]:
    host, path = ingress_host_and_path(ref, ingress)
    rule: dict[str, Any] = {"http": {"paths": [{
        "path": path,
        "pathType": "ImplementationSpecific",
        "backend": {"service": {"name": jobmanager_name(ref), "port": {"number": REST_PORT}}},
    }]}}
    if host is not None:
        rule["host"] = host
    meta = object_meta(ref, ingress_name(ref), "jobmanager")
    if ingress.annotations:
        meta["annotations"] = dict(ingress.annotations)
    spec: dict[str, Any] = {"rules": [rule]}
    if ingress.class_name:
        spec["ingressClassName"] = ingress.class_name
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def with_default_ingress(spec: FlinkJobSpec, default: IngressSpec | None) -> FlinkJobSpec:
    """`spec` with the chart's `jobIngress` (the operator's default) when it sets no spec.ingress itself;
    batch jobs have no JobManager to lead to."""
    if spec.ingress is not None or default is None or spec.mode == "batch":
        return spec
    return replace(spec, ingress=default)
