"""BATCH FlinkJobs as Spark-on-Kubernetes: `spec.mode: batch` runs the bounded job on Spark.

The operator creates a driver pod running `strom run --runtime-mode batch` against the Kubernetes
master in client mode (the pod is the driver; Spark creates the executor pods itself), with a
headless Service that gives the driver a routable name, a ConfigMap with the engine/Spark
configuration and the executor pod template, and, unless `spec.serviceAccount` names one, a
ServiceAccount allowed to manage executor pods. The status follows the driver pod.

Modules: spark_spec (the typed `spec.spark` and `spec.restartPolicy`, and their schema),
batch_validation, names (names and labels), spark_conf (Spark's configuration), driver (pure
builders; executor pods run the runtime image's `strom spark-executor`), observed_driver (what was
seen of the pods), batch_status (status.batch), batch_lifecycle (the pure state machine),
batch_reconciler (performs its steps through kube_api).
"""
