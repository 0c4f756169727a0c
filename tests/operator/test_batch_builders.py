"""Builders of a batch FlinkJob's objects, its Spark configuration and validation.

Expected values are written out by hand from Spark's "Running on Kubernetes" client-mode rules
(driver host/port, driver pod name for executor ownerReferences) and Spark's memory overhead rule.
"""

from __future__ import annotations

import os

import pytest
import yaml
from strom_operator.batch.batch_validation import validate_batch_spec
from strom_operator.batch.driver import build_driver_pod, build_driver_service, driver_objects
from strom_operator.batch.spark_conf import driver_pod_memory_mib, engine_configuration, memory_mib
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import FlinkJobRef

REF = FlinkJobRef("count", "jobs", "uid-1")


def spec(**overrides) -> FlinkJobSpec:
    body = {"image": "strom/runtime:test", "mode": "batch",
            "job": {"entry": "/opt/jobs/count.py", "args": ["--input", "s3://b/in"], "parallelism": 4}}
    body.update(overrides)
    return FlinkJobSpec.from_dict(body)


def test_objects_in_apply_order_all_owned_by_the_flinkjob():
    objects = driver_objects(REF, spec(), submission=3)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "count-spark"), ("Role", "count-spark"), ("RoleBinding", "count-spark"),
        ("ConfigMap", "count-spark"), ("Service", "count-driver"), ("Pod", "count-driver-3")]
    for o in objects:
        assert [(r["kind"], r["name"], r["uid"]) for r in o["metadata"]["ownerReferences"]] == [
            ("FlinkJob", "count", "uid-1")]
        assert o["metadata"]["namespace"] == "jobs"
        assert o["metadata"]["labels"]["app.kubernetes.io/instance"] == "count"


def test_a_given_service_account_replaces_the_operators_rbac():
    objects = driver_objects(REF, spec(serviceAccount="spark"), submission=1)
    assert [o["kind"] for o in objects] == ["ConfigMap", "Service", "Pod"]
    assert objects[-1]["spec"]["serviceAccountName"] == "spark"


def test_driver_role_lets_the_driver_manage_executor_pods():
    role = driver_objects(REF, spec(), submission=1)[1]
    rule = role["rules"][0]
    assert {"pods", "configmaps"} <= set(rule["resources"])
    assert {"create", "delete", "deletecollection", "list", "watch"} <= set(rule["verbs"])
    binding = driver_objects(REF, spec(), submission=1)[2]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "count-spark", "namespace": "jobs"}]


def test_driver_pod_runs_strom_in_batch_mode_against_the_kubernetes_master_with_its_own_name():
    pod = build_driver_pod(REF, spec(), submission=2)
    assert pod["spec"]["restartPolicy"] == "Never"
    c = pod["spec"]["containers"][0]
    assert c["command"] == ["strom"]
    assert c["args"] == [
        "run", "--runtime-mode", "batch", "--spark-master", "k8s://https://kubernetes.default.svc",
        "-D", "spark.kubernetes.driver.pod.name=count-driver-2",
        "-D", "spark.kubernetes.executor.podNamePrefix=count-driver-2",
        "-D", "spark.kubernetes.executor.label.strom.io/driver-pod=count-driver-2",
        "/opt/jobs/count.py", "--", "--input", "s3://b/in"]
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    # 1g heap + max(384, 10%) MiB overhead = 1024 + 384
    assert c["resources"] == {"requests": {"cpu": "1", "memory": "1408Mi"}, "limits": {"memory": "1408Mi"}}
    assert {p["containerPort"] for p in c["ports"]} == {7078, 7079, 4040}
    assert pod["metadata"]["labels"]["strom.io/driver-pod"] == "count-driver-2"
    assert {"name": "STROM_CONF_DIR", "value": "/opt/strom/conf"} in c["env"]


def test_driver_pod_templates_merge_and_our_labels_and_restart_policy_stay():
    s = spec(podTemplate={"metadata": {"labels": {"team": "a"}}},
             spark={"driver": {"podTemplate": {"metadata": {"labels": {"app.kubernetes.io/instance": "x"}},
                                               "spec": {"restartPolicy": "Always", "nodeSelector": {"pool": "b"},
                                                        "containers": [{"name": "flink-main-container",
                                                                        "env": [{"name": "X", "value": "1"}]}]}}}})
    pod = build_driver_pod(REF, s, submission=1)
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["labels"]["app.kubernetes.io/instance"] == "count"
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["nodeSelector"] == {"pool": "b"}
    assert {"name": "X", "value": "1"} in pod["spec"]["containers"][0]["env"]


def test_headless_service_selects_exactly_the_current_driver_pod():
    svc = build_driver_service(REF, submission=5)
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"]["strom.io/driver-pod"] == "count-driver-5"
    assert {p["port"] for p in svc["spec"]["ports"]} == {7078, 7079, 4040}


def test_spark_configuration_for_client_mode_and_static_executors():
    conf = engine_configuration(REF, spec(spark={"executor": {"instances": 3, "cores": 2, "memory": "2g"},
                                                 "sparkConf": {"spark.sql.shuffle.partitions": "8"}}))
    expected = {
        "execution.runtime-mode": "BATCH", "parallelism.default": "4",
        "spark.master": "k8s://https://kubernetes.default.svc", "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": "jobs", "spark.kubernetes.container.image": "strom/runtime:test",
        "spark.driver.host": "count-driver.jobs.svc", "spark.driver.port": "7078",
        "spark.driver.blockManager.port": "7079",
        "spark.executor.instances": "3", "spark.executor.cores": "2", "spark.executor.memory": "2g",
        "spark.kubernetes.executor.podTemplateFile": "/opt/strom/conf/executor-pod-template.yaml",
        "spark.kubernetes.executor.label.app.kubernetes.io/instance": "count",
        "spark.kubernetes.executor.label.app.kubernetes.io/component": "spark-executor",
        "spark.sql.shuffle.partitions": "8",
    }
    assert {k: conf.get(k) for k in expected} == expected
    assert "spark.dynamicAllocation.enabled" not in conf


def test_dynamic_allocation_uses_shuffle_tracking_and_no_fixed_instances():
    conf = engine_configuration(REF, spec(spark={"executor": {"instances": 2},
                                                 "dynamicAllocation": {"enabled": True, "minExecutors": 1,
                                                                       "maxExecutors": 6}}))
    assert "spark.executor.instances" not in conf
    assert {k: conf[k] for k in conf if k.startswith("spark.dynamicAllocation.")} == {
        "spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "1", "spark.dynamicAllocation.maxExecutors": "6",
        "spark.dynamicAllocation.initialExecutors": "2"}


@pytest.mark.parametrize("text, mib", [("512m", 512), ("2g", 2048), ("2G", 2048), ("1024", 1024), ("3gb", 3072),
                                       ("1t", 1024 * 1024), ("2048k", 2)])
def test_spark_memory_sizes(text, mib):
    assert memory_mib(text) == mib


def test_driver_memory_overhead_is_ten_percent_at_least_384_mib_or_as_configured():
    assert driver_pod_memory_mib(spec(spark={"driver": {"memory": "8g"}})) == 8192 + 819
    assert driver_pod_memory_mib(spec(spark={"driver": {"memory": "8g"},
                                             "sparkConf": {"spark.driver.memoryOverhead": "1g"}})) == 8192 + 1024


def test_configmap_carries_config_and_an_executor_template_that_runs_the_images_command():
    cm = driver_objects(REF, spec(s3={"credentialsSecret": "s3-creds"}), submission=1)[3]
    data = cm["data"]
    assert yaml.safe_load(data["config.yaml"])["spark.driver.host"] == "count-driver.jobs.svc"
    template = yaml.safe_load(data["executor-pod-template.yaml"])
    container = template["spec"]["containers"][0]
    assert container["name"] == "executor"
    # the runtime image's `strom spark-executor` (tests/cli/test_spark_executor_command.py); no code in the ConfigMap
    assert container["command"] == ["strom", "spark-executor"]
    assert template["spec"]["volumes"] == [{"name": "strom-spark-config", "configMap": {"name": "count-spark"}},
                                           {"name": "strom-tmp", "emptyDir": {}}]  # Spark's scratch space
    assert any(e["name"] == "AWS_ACCESS_KEY_ID" and e["valueFrom"]["secretKeyRef"]["name"] == "s3-creds"
               for e in container["env"])
    assert sorted(data) == ["config.yaml", "executor-pod-template.yaml"]


@pytest.mark.parametrize("overrides, path", [
    ({"spark": {"executor": {"instances": 0}}}, "spec.spark.executor.instances"),
    ({"spark": {"driver": {"memory": "lots"}}}, "spec.spark.driver.memory"),
    ({"spark": {"sparkConf": {"spark.executor.instances": "9"}}}, "spec.spark.sparkConf[spark.executor.instances]"),
    ({"spark": {"sparkConf": {"parallelism.default": "9"}}}, "spec.spark.sparkConf[parallelism.default]"),
    ({"spark": {"dynamicAllocation": {"enabled": True, "minExecutors": 3, "maxExecutors": 2}}},
     "spec.spark.dynamicAllocation.maxExecutors"),
    ({"spark": {"dynamicAllocation": {"enabled": True, "initialExecutors": 9, "maxExecutors": 2}}},
     "spec.spark.dynamicAllocation.initialExecutors"),
    ({"restartPolicy": {"type": "Always"}}, "spec.restartPolicy.type"),
    ({"restartPolicy": {"onFailureRetryInterval": "soon"}}, "spec.restartPolicy.onFailureRetryInterval"),
    ({"checkpointing": {"interval": "10 s", "dir": "s3://b/c"}}, "spec.checkpointing.interval"),
    ({"autoscaler": {"enabled": True}}, "spec.autoscaler.enabled"),
    ({"job": {"entry": "/opt/jobs/count.py", "state": "suspended"}}, "spec.job.state"),
    ({"job": {"entry": "count.txt"}}, "spec.job.entry"),
    ({"spark": {"executor": {"podTemplate": {"spec": {"containers": [{"image": "x"}]}}}}},
     "spec.spark.executor.podTemplate.spec.containers"),
])
def test_invalid_batch_specs_name_their_field(overrides, path):
    error = validate_batch_spec(spec(**overrides))
    assert error is not None and error.startswith(path + ":"), error


def test_a_full_batch_spec_is_valid():
    assert validate_batch_spec(spec(spark={"driver": {"cores": 2, "memory": "2g"},
                                           "executor": {"instances": 4, "cores": 2, "memory": "4g"},
                                           "sparkConf": {"spark.sql.shuffle.partitions": "16"},
                                           "dynamicAllocation": {"enabled": True, "maxExecutors": 8}},
                                    restartPolicy={"type": "OnFailure", "onFailureRetries": 2})) is None


def test_example_batch_manifest_validates_against_the_crd_and_the_batch_rules():
    import jsonschema
    from strom_operator.crd.definition import openapi_schema

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "examples", "k8s", "flinkjob-batch.yaml"), encoding="utf-8") as f:
        manifest = yaml.safe_load(f)
    assert list(jsonschema.Draft7Validator(openapi_schema()).iter_errors(manifest)) == []
    parsed = FlinkJobSpec.from_dict(manifest["spec"])
    assert parsed.mode == "batch" and parsed.restart_policy.type == "OnFailure"
    assert validate_batch_spec(parsed) is None
    assert os.path.isfile(os.path.join(root, parsed.job.entry.removeprefix("/opt/strom/")))


def test_spark_executor_pods_mount_no_service_account_token():
    """Executors never call the API (the driver manages them); a user's executor template may still ask."""
    from strom_operator.batch.driver import build_executor_pod_template

    assert build_executor_pod_template(REF, spec())["spec"]["automountServiceAccountToken"] is False
