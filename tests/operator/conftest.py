"""Fixtures of the operator integration tests (operator_harness.py): an API, the pods' network, one S3 server
(weed mini, on that network's gateway) for every test of the package that keeps savepoints in S3, the operator
and the process kubelet; every test that uses the API leaves it as it found it."""

from tests.operator.operator_harness import (  # noqa: F401 - registers the fixtures
    api_left_as_found,
    k8s,
    kubelet,
    operator,
    own_namespace,
    pod_network,
    s3_server_on_pod_network,
    url_map,
)
