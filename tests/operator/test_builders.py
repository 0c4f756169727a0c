"""Builders of the Kubernetes objects: labels, owners, replicas, config, secrets, pod templates."""

from __future__ import annotations

import pytest
import yaml
from strom_operator.resources.builders import build_job_objects, scaling_of
from strom_operator.resources.configmap import build_configmap
from strom_operator.resources.jobmanager_deployment import build_jobmanager_deployment, build_jobmanager_service
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment, taskmanager_replicas

from tests.operator.fakes import make_spec

REF = FlinkJobRef("wordcount", "streams", "uid-1")


def _container(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]["containers"][0]


def _config(spec) -> dict:
    return yaml.safe_load(build_configmap(REF, spec)["data"]["config.yaml"])


def test_every_object_has_labels_and_a_controller_owner_reference():
    objects = build_job_objects(REF, make_spec())
    assert [o["kind"] for o in objects] == ["ConfigMap", "NetworkPolicy", "Service", "Deployment", "Deployment"]
    components = [o["metadata"]["labels"]["app.kubernetes.io/component"] for o in objects]
    assert components == ["config", "config", "jobmanager", "jobmanager", "taskmanager"]
    for o in objects:
        labels = o["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "strom"
        assert labels["app.kubernetes.io/instance"] == "wordcount"
        assert labels["app.kubernetes.io/managed-by"] == "strom-operator"
        assert o["metadata"]["namespace"] == "streams"
        assert o["metadata"]["ownerReferences"] == [{
            "apiVersion": "strom.io/v1beta1", "kind": "FlinkJob", "name": "wordcount", "uid": "uid-1",
            "controller": True, "blockOwnerDeletion": True}]


@pytest.mark.parametrize("parallelism, slots, replicas", [(1, 1, 1), (4, 2, 2), (5, 2, 3), (7, 8, 1), (64, 3, 22)])
def test_taskmanager_replicas_are_ceil_of_parallelism_over_slots(parallelism, slots, replicas):
    spec = make_spec(job__parallelism=parallelism, taskManager__slots=slots)
    assert build_taskmanager_deployment(REF, spec)["spec"]["replicas"] == replicas
    assert taskmanager_replicas(parallelism, slots) == -(-parallelism // slots)
    assert scaling_of(spec).slots_total == replicas * slots


def test_configmap_has_the_flink_keys():
    conf = _config(make_spec(job__parallelism=4, taskManager__slots=2,
                             flinkConfiguration={"execution.buffer-timeout": "50 ms",
                                                 "kubernetes.operator.savepoint.timeout": "1 min"}))
    assert conf["parallelism.default"] == "4" and conf["taskmanager.numberOfTaskSlots"] == "2"
    assert conf["pipeline.max-parallelism"] == "128"
    assert conf["execution.checkpointing.interval"] == "10 s" and conf["execution.checkpointing.mode"] == "EXACTLY_ONCE"
    assert conf["state.checkpoints.dir"] == "s3://bucket/chk" and conf["state.savepoints.dir"] == "s3://bucket/sp"
    assert (conf["rest.port"], conf["jobmanager.rpc.port"], conf["metrics.reporter.prom.port"]) == ("8081", "6123",
                                                                                                     "9249")
    assert conf["execution.buffer-timeout"] == "50 ms"
    assert "kubernetes.operator.savepoint.timeout" not in conf  # the operator's, not the engine's


def test_configmap_keys_are_accepted_by_the_engine_registry():
    from strom.common.configuration import Configuration

    Configuration(_config(make_spec(s3={"endpoint": "http://minio:9000"})))  # raises on an unknown key


def test_s3_credentials_come_from_the_secret_and_never_reach_the_configmap():
    spec = make_spec(s3={"credentialsSecret": "s3-creds", "endpoint": "http://minio:9000"})
    configmap_text = yaml.safe_dump(build_configmap(REF, spec))
    assert "AWS_" not in configmap_text and "s3-creds" not in configmap_text
    for deployment in (build_jobmanager_deployment(REF, spec), build_taskmanager_deployment(REF, spec)):
        env = {e["name"]: e for e in _container(deployment)["env"]}
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            assert env[key]["valueFrom"] == {"secretKeyRef": {"name": "s3-creds", "key": key}}
            assert "value" not in env[key]
        assert env["AWS_ENDPOINT_URL"]["value"] == "http://minio:9000"
        assert env["STROM_CONF_DIR"]["value"] == "/opt/strom/conf"


def test_jobmanager_runs_the_entry_point_in_application_mode():
    dep = build_jobmanager_deployment(REF, make_spec(job__args=["--topic", "words"]))
    c = _container(dep)
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    assert c["command"] == ["strom"]
    assert c["args"] == ["jobmanager", "--job", "/opt/jobs/wc.py", "--", "--topic", "words"]
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"rest": 8081, "rpc": 6123, "metrics": 9249}
    assert c["readinessProbe"]["httpGet"]["port"] == "rest" and c["livenessProbe"]["tcpSocket"]["port"] == "rest"
    assert c["volumeMounts"][0]["mountPath"] == "/opt/strom/conf"
    volume = dep["spec"]["template"]["spec"]["volumes"][0]
    assert volume["configMap"]["name"] == "wordcount-config"


def test_jobmanager_restore_flags():
    dep = build_jobmanager_deployment(REF, make_spec(), restore_from="s3://b/sp/savepoint-1",
                                      allow_non_restored_state=True)
    assert _container(dep)["args"] == ["jobmanager", "--from-savepoint", "s3://b/sp/savepoint-1",
                                       "--allow-non-restored-state", "--job", "/opt/jobs/wc.py"]


def test_jobmanager_service_ports_and_selector():
    svc = build_jobmanager_service(REF)
    assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {"rest": 8081, "rpc": 6123, "metrics": 9249}
    assert svc["spec"]["selector"]["app.kubernetes.io/component"] == "jobmanager"


def test_taskmanager_dials_the_jobmanager_service_and_advertises_its_pod_ip():
    c = _container(build_taskmanager_deployment(REF, make_spec()))
    assert c["args"] == ["taskmanager", "--jobmanager", "wordcount-jobmanager:6123", "-D", "taskmanager.host=$(POD_IP)"]
    pod_ip = next(e for e in c["env"] if e["name"] == "POD_IP")
    assert pod_ip == {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}
    # first, so that later variables (the user's too) may refer to it as $(POD_IP)
    assert c["env"][0]["name"] == "POD_IP"


def test_configmap_addresses_are_the_service_and_servers_bind_every_interface():
    conf = _config(make_spec())
    assert conf["jobmanager.rpc.address"] == conf["rest.address"] == "wordcount-jobmanager"
    for key in ("jobmanager.bind-host", "rest.bind-address", "taskmanager.bind-host", "metrics.reporter.prom.host"):
        assert conf[key] == "0.0.0.0", key
    assert conf["taskmanager.data.port"] == "6121"
    assert "taskmanager.host" not in conf  # per pod: the TaskManager's -D, not the shared file


def test_user_flink_configuration_wins_over_the_address_keys():
    spec = make_spec(flinkConfiguration={"rest.bind-address": "127.0.0.1", "taskmanager.data.port": "7000",
                                         "taskmanager.host": "tm.example"})
    conf = _config(spec)
    assert (conf["rest.bind-address"], conf["taskmanager.data.port"], conf["taskmanager.host"]) == (
        "127.0.0.1", "7000", "tm.example")
    # a -D would win over the config file, so the user's taskmanager.host leaves it out
    assert _container(build_taskmanager_deployment(REF, spec))["args"] == [
        "taskmanager", "--jobmanager", "wordcount-jobmanager:6123"]


@pytest.mark.parametrize("slots", [1, 3])
def test_taskmanager_declares_metrics_and_one_data_port_per_slot(slots):
    spec = make_spec(taskManager__slots=slots)
    c = _container(build_taskmanager_deployment(REF, spec))
    data_port = int(_config(spec)["taskmanager.data.port"])
    expected = {"metrics": 9249, **{f"data-{i}": data_port + i for i in range(slots)}}
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == expected
    assert all(p["protocol"] == "TCP" for p in c["ports"])
    # Kubernetes' IANA_SVC_NAME: at most 15 characters, lower-case letters, digits and '-'
    assert all(len(p["name"]) <= 15 and p["name"].replace("-", "").isalnum() and p["name"].islower()
               for p in c["ports"])
    assert c["readinessProbe"]["tcpSocket"] == {"port": "metrics"}


def test_pods_carry_prometheus_scrape_annotations_for_the_exporter_port():
    spec = make_spec(podTemplate={"metadata": {"annotations": {"team/owner": "data"}}})
    conf = _config(spec)
    for deployment in (build_jobmanager_deployment(REF, spec), build_taskmanager_deployment(REF, spec)):
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/path"] == "/metrics"
        assert annotations["prometheus.io/port"] == conf["metrics.reporter.prom.port"]
        metrics = next(p for p in _container(deployment)["ports"] if p["name"] == "metrics")
        assert str(metrics["containerPort"]) == annotations["prometheus.io/port"]
        assert annotations["team/owner"] == "data" and "strom.io/config-hash" in annotations


def test_a_user_template_may_turn_scraping_off():
    spec = make_spec(taskManager__podTemplate={"metadata": {"annotations": {"prometheus.io/scrape": "false"}}})
    tm = build_taskmanager_deployment(REF, spec)["spec"]["template"]["metadata"]["annotations"]
    jm = build_jobmanager_deployment(REF, spec)["spec"]["template"]["metadata"]["annotations"]
    assert (tm["prometheus.io/scrape"], jm["prometheus.io/scrape"]) == ("false", "true")


def test_resources_from_spec():
    c = _container(build_taskmanager_deployment(REF, make_spec(taskManager__resources={"cpu": "2", "memory": "4Gi"})))
    assert c["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}


def test_user_pod_templates_merge_into_the_pods_and_cannot_break_the_selector():
    spec = make_spec(
        podTemplate={"metadata": {"labels": {"team": "data", "app.kubernetes.io/instance": "other"}},
                     "spec": {"nodeSelector": {"pool": "streams"},
                              "containers": [{"name": "flink-main-container",
                                              "env": [{"name": "LOG_LEVEL", "value": "DEBUG"}]}]}},
        taskManager__podTemplate={"spec": {"containers": [{"name": "taskmanager", "imagePullPolicy": "Always"},
                                                          {"name": "sidecar", "image": "envoy"}]}},
    )
    tm = build_taskmanager_deployment(REF, spec)
    pod = tm["spec"]["template"]
    assert pod["metadata"]["labels"]["team"] == "data"
    assert pod["metadata"]["labels"]["app.kubernetes.io/instance"] == "wordcount"
    assert pod["spec"]["nodeSelector"] == {"pool": "streams"}
    main, sidecar = pod["spec"]["containers"]
    assert main["name"] == "taskmanager" and main["imagePullPolicy"] == "Always"
    assert [e["name"] for e in main["env"]] == ["POD_IP", "STROM_CONF_DIR", "STROM_CLUSTER_SECRET", "LOG_LEVEL"]
    assert main["args"][-1] == "taskmanager.host=$(POD_IP)"
    assert sidecar["name"] == "sidecar"
    jm = build_jobmanager_deployment(REF, spec)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in jm] == ["jobmanager"]  # the TaskManager's template stays with the TaskManager


def test_config_change_changes_the_pod_annotation():
    a = build_jobmanager_deployment(REF, make_spec())["spec"]["template"]["metadata"]["annotations"]
    b = build_jobmanager_deployment(REF, make_spec(flinkConfiguration={"execution.buffer-timeout": "5 ms"}))
    assert a["strom.io/config-hash"] != b["spec"]["template"]["metadata"]["annotations"]["strom.io/config-hash"]
