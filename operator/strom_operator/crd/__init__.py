"""What a FlinkJob is: its CustomResourceDefinition, its typed spec and status (pure, no I/O).

Read in this order:
  spec.py              the typed `FlinkJob.spec` (frozen dataclasses, defaults applied) and `duration_seconds`
  status.py            the typed `FlinkJob.status`: the operator's write-ahead log, and the merge patch of two
  operator_options.py  the operator's own `kubernetes.operator.*` keys in spec.flinkConfiguration
  spark_spec.py        `spec.spark` and `spec.restartPolicy` of batch jobs (typed form and schema)
  schema_types.py      OpenAPI node builders and API-server style defaulting
  schema_spec.py, schema_security.py, schema_status.py
                       the OpenAPI schemas of spec, spec.security and status
  schema_structural.py the API server's structural-schema rules, checked without an API server
  definition.py        the CRD assembled from the schemas (`python -m strom_operator.crd.definition`
                       writes crds/ and the chart's copy)

The lowest layer: it imports nothing else of the operator.
"""
