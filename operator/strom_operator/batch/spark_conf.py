"""The configuration a batch job's driver runs with: engine keys and Spark's, from the spec.

Spark-on-Kubernetes in client mode (Spark's "Running on Kubernetes", client mode): the driver
runs in its own pod, so executors must reach it by a routable name (`spark.driver.host`, the
headless Service) on fixed ports (`spark.driver.port`, `spark.driver.blockManager.port`), and
`spark.kubernetes.driver.pod.name` makes every executor pod owned by the driver pod, so that
Kubernetes deletes executors with their driver. Keys the operator derives from spec fields are
rejected in `spec.spark.sparkConf` (OWNED_KEYS), as flinkConfiguration rejects Flink's.
"""

from __future__ import annotations

import re

from strom_operator.batch.names import DRIVER_POD_LABEL, EXECUTOR, batch_labels, driver_service_name
from strom_operator.crd.operator_options import OPERATOR_PREFIX
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import CONF_DIR, FlinkJobRef

KUBERNETES_MASTER = "k8s://https://kubernetes.default.svc"
DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
UI_PORT = 4040
CONFIG_FILE = "config.yaml"  # in the ConfigMap, mounted at CONF_DIR in driver and executor pods
EXECUTOR_TEMPLATE_FILE = "executor-pod-template.yaml"
EXECUTOR_CONTAINER = "executor"
MIN_OVERHEAD_MIB = 384  # Spark's minimum memory overhead of a driver or executor pod
OVERHEAD_FACTOR = 0.1  # Spark's spark.driver.memoryOverheadFactor default

_FROM_OPERATOR = "the operator (Spark-on-Kubernetes in client mode)"
OWNED_KEYS = {
    "spark.master": _FROM_OPERATOR,
    "spark.submit.deployMode": _FROM_OPERATOR,
    "spark.driver.host": _FROM_OPERATOR,
    "spark.driver.port": _FROM_OPERATOR,
    "spark.driver.bindAddress": _FROM_OPERATOR,
    "spark.driver.blockManager.port": _FROM_OPERATOR,
    "spark.kubernetes.driver.pod.name": _FROM_OPERATOR,
    "spark.kubernetes.executor.podNamePrefix": _FROM_OPERATOR,
    "spark.kubernetes.namespace": "metadata.namespace",
    "spark.kubernetes.container.image": "spec.image",
    "spark.kubernetes.container.image.pullPolicy": "spec.imagePullPolicy",
    "spark.driver.cores": "spec.spark.driver.cores",
    "spark.driver.memory": "spec.spark.driver.memory",
    "spark.executor.instances": "spec.spark.executor.instances",
    "spark.executor.cores": "spec.spark.executor.cores",
    "spark.executor.memory": "spec.spark.executor.memory",
    "spark.kubernetes.executor.podTemplateFile": "spec.spark.executor.podTemplate",
    "spark.kubernetes.executor.podTemplateContainerName": "spec.spark.executor.podTemplate",
    "spark.dynamicAllocation.enabled": "spec.spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.minExecutors": "spec.spark.dynamicAllocation.minExecutors",
    "spark.dynamicAllocation.maxExecutors": "spec.spark.dynamicAllocation.maxExecutors",
    "spark.dynamicAllocation.initialExecutors": "spec.spark.dynamicAllocation.initialExecutors",
}

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
_MIB_PER_UNIT = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024, "": 1}  # a bare number is MiB


def memory_mib(value: str) -> int:
    """MiB of a Spark memory string ('512m', '2g', '1024'); ValueError names the expected form."""
    m = _SIZE.match(value)
    if m is None:
        raise ValueError(f"{value!r} is not a Spark memory size; expected e.g. '512m' or '2g'")
    return max(1, int(int(m.group(1)) * _MIB_PER_UNIT[m.group(2).lower()]))


def driver_pod_memory_mib(spec: FlinkJobSpec) -> int:
    """The driver pod's memory: the JVM heap plus Spark's overhead (spark.driver.memoryOverhead, else
    10% of the heap, at least 384 MiB), which Python, the JVM's off-heap and native buffers use."""
    heap = memory_mib(spec.spark.driver.memory)
    explicit = spec.spark.spark_conf.get("spark.driver.memoryOverhead")
    overhead = memory_mib(explicit) if explicit else max(MIN_OVERHEAD_MIB, int(heap * OVERHEAD_FACTOR))
    return heap + overhead


def engine_configuration(ref: FlinkJobRef, spec: FlinkJobSpec) -> dict[str, str]:
    """config.yaml of the driver: engine keys, then every Spark key shared by all its driver pods."""
    sp = spec.spark
    conf: dict[str, str] = {
        "execution.runtime-mode": "BATCH",
        "parallelism.default": str(spec.job.parallelism),
        "pipeline.max-parallelism": str(spec.job.max_parallelism),
    }
    if spec.s3.endpoint:
        conf["s3.endpoint"] = spec.s3.endpoint
    for key, value in spec.flink_configuration.items():
        if not key.startswith(OPERATOR_PREFIX):
            conf[key] = value
    conf.update({
        "spark.master": KUBERNETES_MASTER,
        "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": ref.namespace,
        "spark.kubernetes.container.image": spec.image,
        "spark.kubernetes.container.image.pullPolicy": spec.image_pull_policy,
        # Executors dial the driver through its headless Service, on ports the Service exposes.
        "spark.driver.host": f"{driver_service_name(ref)}.{ref.namespace}.svc",
        "spark.driver.port": str(DRIVER_PORT),
        "spark.driver.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.cores": str(sp.driver.cores),
        "spark.driver.memory": sp.driver.memory,
        "spark.executor.cores": str(sp.executor.cores),
        "spark.executor.memory": sp.executor.memory,
        # The image's entry point is `strom`: the template gives executors a command of their own.
        "spark.kubernetes.executor.podTemplateFile": f"{CONF_DIR}/{EXECUTOR_TEMPLATE_FILE}",
        "spark.kubernetes.executor.podTemplateContainerName": EXECUTOR_CONTAINER,
    })
    for key, value in batch_labels(ref, EXECUTOR).items():
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    da = sp.dynamic_allocation
    if da.enabled:
        # Kubernetes has no external shuffle service: executors holding shuffle data are kept instead.
        conf["spark.dynamicAllocation.enabled"] = "true"
        conf["spark.dynamicAllocation.shuffleTracking.enabled"] = "true"
        conf["spark.dynamicAllocation.minExecutors"] = str(da.min_executors)
        initial = da.initial_executors if da.initial_executors is not None else sp.executor.instances
        conf["spark.dynamicAllocation.initialExecutors"] = str(max(initial, da.min_executors))
        if da.max_executors is not None:
            conf["spark.dynamicAllocation.maxExecutors"] = str(da.max_executors)
    else:
        conf["spark.executor.instances"] = str(sp.executor.instances)
    conf.update(sp.spark_conf)
    return conf


def driver_pod_configuration(pod_name: str) -> dict[str, str]:
    """What differs between driver pods of one job: their name, which executors are owned by and
    labelled with (-D options of that pod's command line, over config.yaml)."""
    return {
        "spark.kubernetes.driver.pod.name": pod_name,
        "spark.kubernetes.executor.podNamePrefix": pod_name,
        f"spark.kubernetes.executor.label.{DRIVER_POD_LABEL}": pod_name,
    }
