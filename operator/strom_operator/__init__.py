"""The Strom Kubernetes operator: reconciles `FlinkJob` resources (group strom.io).

The phases of a pass, as the Flink Kubernetes Operator has them, one subpackage each, from the top
layer down (a layer imports only layers below it; lint-imports checks the order in pyproject.toml):

  main.py, handlers.py  `strom-operator` and the Kopf handlers: parse the body, call reconcile/
  config.py             the operator process's own settings (environment, flags)
  reconcile/            one pass: observe -> decide -> perform -> write status (the I/O lives here)
  batch/                `spec.mode: batch`: the same phases for a bounded job on Spark-on-Kubernetes
  clients/              Kubernetes API, JobManager REST API, S3: every call to a server
  lifecycle/            the pure state machine: next_step(spec, status, observed) -> Step
  autoscaler/           the pure slot autoscaler: REST metrics -> per-vertex parallelism
  observe/              what was observed (ObservedJob) and what it means (readiness, conditions)
  resources/            pure builders of the Kubernetes objects (Deployments, Services, ConfigMap, ...)
  crd/                  the CRD, the typed spec and status

lifecycle/, autoscaler/, observe/, resources/ and crd/ are the pure core: no kopf, kubernetes, aiohttp
or boto3, unit-tested without a cluster. The engine is reached only through its REST API
(clients/jobmanager_client.py); a batch job's Spark executors run the runtime image's
`strom spark-executor`.

The handlers live in `strom_operator.handlers` (`kopf run -m strom_operator.handlers`, or the
`strom-operator` command). `kopf run -m strom_operator` works too: when kopf is what imports this
package, the handlers are registered here. Otherwise importing the package does not import kopf,
so the pure modules stay usable without it.
"""

import sys

if "kopf" in sys.modules:
    from strom_operator import handlers as handlers  # registers the kopf handlers
