"""The process kubelet's `$(VAR)` expansion and downward API (container_env.py), against Kubernetes' rules.

Expected values are worked by hand from Kubernetes' documented behaviour ("Define dependent
environment variables", `third_party/forked/golang/expansion`): a defined variable's reference is
replaced, `$$` is an escaped `$`, an undefined or unclosed reference stays as written.
"""

from __future__ import annotations

import pytest

from tests.operator.container_env import ContainerConfigError, PodFields, expand_references, field_value

ENV = {"POD_IP": "198.18.1.2", "EMPTY": "", "NAME": "tm-1"}


@pytest.mark.parametrize(("text", "expanded"), [
    ("$(POD_IP)", "198.18.1.2"),
    ("taskmanager.host=$(POD_IP)", "taskmanager.host=198.18.1.2"),
    ("$(NAME).$(POD_IP):6121", "tm-1.198.18.1.2:6121"),
    ("$$(POD_IP)", "$(POD_IP)"),  # escaped
    ("$$$(POD_IP)", "$198.18.1.2"),  # an escaped $ then a reference
    ("$(UNKNOWN)", "$(UNKNOWN)"),  # undefined: kept
    ("a$(EMPTY)b", "ab"),  # defined as empty: replaced by nothing
    ("$(POD_IP", "$(POD_IP"),  # unclosed: kept
    ("$POD_IP", "$POD_IP"),  # not a reference
    ("cost: 5$", "cost: 5$"),  # a trailing $
    ("$()", "$()"),
    ("no references", "no references"),
])
def test_references_expand_as_kubernetes_expands_them(text: str, expanded: str):
    assert expand_references(text, ENV) == expanded


FIELDS = PodFields(name="job-taskmanager-0001", namespace="flink", uid="u-1", node_name="node-a",
                   pod_ip="198.18.1.5", host_ip="198.18.1.1", service_account="default",
                   labels={"app": "job"}, annotations={"prometheus.io/port": "9249"})


@pytest.mark.parametrize(("path", "value"), [
    ("status.podIP", "198.18.1.5"), ("status.hostIP", "198.18.1.1"), ("metadata.name", "job-taskmanager-0001"),
    ("metadata.namespace", "flink"), ("spec.nodeName", "node-a"), ("metadata.labels['app']", "job"),
    ("metadata.annotations['prometheus.io/port']", "9249"), ("metadata.labels['absent']", ""),
])
def test_field_refs_read_the_pods_fields(path: str, value: str):
    assert field_value(path, FIELDS) == value


def test_an_unknown_field_path_keeps_the_pod_from_starting_with_the_path_named():
    with pytest.raises(ContainerConfigError, match=r"unsupported fieldRef fieldPath 'status\.phase'"):
        field_value("status.phase", FIELDS)
