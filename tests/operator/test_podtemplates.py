"""Strategic merge of user pod templates."""

from __future__ import annotations

from strom_operator.resources.podtemplates import merge_pod_templates, strategic_merge

BASE = {
    "metadata": {"labels": {"a": "1"}},
    "spec": {
        "containers": [{"name": "jobmanager", "image": "strom:1",
                        "env": [{"name": "STROM_CONF_DIR", "value": "/opt/strom/conf"}],
                        "volumeMounts": [{"name": "conf", "mountPath": "/opt/strom/conf"}]}],
        "volumes": [{"name": "conf", "configMap": {"name": "c"}}],
        "tolerations": [{"key": "a"}],
    },
}


def test_containers_merge_by_name_and_user_scalars_win():
    user = {"spec": {"containers": [{"name": "jobmanager", "image": "strom:2"}]}}
    merged = strategic_merge(BASE, user)
    (c,) = merged["spec"]["containers"]
    assert c["image"] == "strom:2" and c["env"] == BASE["spec"]["containers"][0]["env"]


def test_env_volumes_and_mounts_merge_by_key_and_new_items_are_appended():
    user = {"spec": {
        "containers": [{"name": "jobmanager", "env": [{"name": "STROM_CONF_DIR", "value": "/x"},
                                                      {"name": "EXTRA", "value": "1"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                       {"name": "sidecar", "image": "envoy"}],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }}
    merged = strategic_merge(BASE, user)
    jm, sidecar = merged["spec"]["containers"]
    assert jm["env"] == [{"name": "STROM_CONF_DIR", "value": "/x"}, {"name": "EXTRA", "value": "1"}]
    assert [m["mountPath"] for m in jm["volumeMounts"]] == ["/opt/strom/conf", "/data"]
    assert sidecar == {"name": "sidecar", "image": "envoy"}
    assert [v["name"] for v in merged["spec"]["volumes"]] == ["conf", "data"]


def test_lists_without_merge_key_are_replaced():
    merged = strategic_merge(BASE, {"spec": {"tolerations": [{"key": "b"}]}})
    assert merged["spec"]["tolerations"] == [{"key": "b"}]


def test_inputs_are_not_modified():
    user = {"spec": {"containers": [{"name": "jobmanager", "image": "strom:2"}]}}
    strategic_merge(BASE, user)
    assert BASE["spec"]["containers"][0]["image"] == "strom:1"


def test_flink_main_container_alias_and_layering_order():
    shared = {"spec": {"containers": [{"name": "flink-main-container", "image": "shared"}]},
              "metadata": {"labels": {"team": "x"}}}
    specific = {"spec": {"containers": [{"name": "jobmanager", "image": "specific"}]}}
    merged = merge_pod_templates(BASE, shared, specific, main="jobmanager")
    assert [c["name"] for c in merged["spec"]["containers"]] == ["jobmanager"]
    assert merged["spec"]["containers"][0]["image"] == "specific"
    assert merged["metadata"]["labels"] == {"a": "1", "team": "x"}


def test_a_user_container_port_without_protocol_gets_tcp_written_out():
    """Server-side apply keys container ports by (containerPort, protocol): an element without protocol is
    refused by a real API server, so the merge writes Kubernetes' default."""
    base = {"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 9249, "protocol": "TCP"}]}]}}
    user = {"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 5005, "name": "debug"}]}],
                     "initContainers": [{"name": "init", "ports": [{"containerPort": 7000, "protocol": "UDP"}]}]}}
    merged = merge_pod_templates(base, user, main="main")
    ports = {p["containerPort"]: p["protocol"] for p in merged["spec"]["containers"][0]["ports"]}
    assert ports == {9249: "TCP", 5005: "TCP"}
    assert merged["spec"]["initContainers"][0]["ports"] == [{"containerPort": 7000, "protocol": "UDP"}]
    assert "protocol" not in user["spec"]["containers"][0]["ports"][0]  # the user's template is not changed
