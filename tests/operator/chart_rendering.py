"""Rendering the Helm chart offline (helm-python-sdk), for the chart, RBAC and list-key tests."""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "charts", "strom-operator")
RELEASE, RELEASE_NAMESPACE = "strom", "ops"


def helm_sdk() -> Any:
    """helm-python-sdk, or the calling test skipped (it is in the [test] extra on Linux x86_64 only)."""
    return pytest.importorskip("helm_python", reason="helm-python-sdk is in the [test] extra (Linux x86_64)")


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart's manifests for these values, as release `strom` in namespace `ops`."""
    helm = helm_sdk()
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values, name=RELEASE, namespace=RELEASE_NAMESPACE)
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]
