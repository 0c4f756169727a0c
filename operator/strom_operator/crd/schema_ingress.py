"""The OpenAPI schema of `FlinkJob.spec.ingress`: an Ingress to the job's dashboard and REST API.

Shaped as the Flink Kubernetes Operator's `spec.ingress`: a `template` for the host and/or path with
`{{name}}` and `{{namespace}}` placeholders, the Ingress class, and annotations for the controller.
"""

from __future__ import annotations

from strom_operator.crd.schema_security import namespace_selector
from strom_operator.crd.schema_types import obj, string, string_map

INGRESS = obj(
    "An Ingress <name>-jobmanager to the JobManager's REST port (the web dashboard and Flink's REST API). Absent: "
    "none (a removed one is deleted). Anyone who reaches it can cancel the job unless "
    "flinkConfiguration sets web.cancel.enable: 'false'; put authentication in front of it.", {
        "template": string(
            "Host and/or path of the rule, {{name}} and {{namespace}} replaced: 'flink.example.com/{{namespace}}/"
            "{{name}}(/|$)(.*)', '{{name}}.{{namespace}}.example.com' or '/{{namespace}}/{{name}}(/|$)(.*)'."),
        "className": string("spec.ingressClassName of the Ingress (unset: the cluster's default class)."),
        "annotations": string_map("Annotations of the Ingress, e.g. nginx.ingress.kubernetes.io/rewrite-target."),
        "controllerNamespaceSelector": namespace_selector(
            "Namespaces of the ingress controller's pods, e.g. {matchLabels: {kubernetes.io/metadata.name: "
            "ingress-nginx}}: the job's NetworkPolicy (spec.security.networkPolicy) lets them reach the REST port. "
            "Unset: it does not, so with the NetworkPolicy on the Ingress gets no answer."),
    }, required=("template",))
