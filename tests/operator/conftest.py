"""Fixtures of the operator integration tests (operator_harness.py): an API, the operator, the process kubelet."""

from tests.operator.operator_harness import k8s, kubelet, operator  # noqa: F401 - registers the fixtures
