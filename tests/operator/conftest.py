"""Fixtures of the operator integration tests (operator_harness.py): an API, the operator, the process kubelet,
and one S3 server (weed mini) for every test of the package that keeps savepoints in S3."""

from tests.engine.s3_server import s3_server_fixture  # noqa: F401 - registers `s3_server` (session scope)
from tests.operator.operator_harness import k8s, kubelet, operator  # noqa: F401 - registers the fixtures
