"""BATCH FlinkJobs as Spark-on-Kubernetes: `spec.mode: batch` runs the bounded job on Spark.

The operator creates a driver pod running `strom run --runtime-mode batch` against the Kubernetes
master in client mode (the pod is the driver; Spark creates the executor pods itself), with a
headless Service that gives the driver a routable name, a ConfigMap with the engine/Spark
configuration and the executor pod template, and, unless `spec.serviceAccount` names one, a
ServiceAccount allowed to manage executor pods. The status follows the driver pod.

The same phases as the streaming operator, in one package (the typed `spec.spark` is crd/spark_spec.py):
  batch_validation.py   `validate_batch_spec(spec) -> str | None`, first error wins
  names.py              names and labels of the driver pods, Service, ConfigMap, RBAC, executors
  spark_conf.py         the driver's configuration: engine keys and Spark's, from the spec
  driver.py             pure builders: RBAC, ConfigMap, driver Service and pod, the executor pod template
                        (executor pods run the runtime image's `strom spark-executor`)
  observed_driver.py    what was seen of the driver pods
  batch_status.py       status.batch
  batch_steps.py        the steps batch_lifecycle asks for
  batch_lifecycle.py    the pure state machine: `next_batch_step(spec, status, observed, now=...)`
  batch_reconciler.py   performs its steps through clients/kube_api.py
All but batch_reconciler.py are pure.
"""
