"""KubeApi.apply is server-side apply: what the operator stops setting goes, what others set stays.

Against the `k8s` API (the emulator's simplified apply, k8s_emulator.py, or a real server when
KUBECONFIG is set; the expectations hold for both).
"""

from __future__ import annotations

import uuid
from typing import Any

from strom_operator.clients.kube_api import KubeApi

from tests.operator.operator_harness import Cluster


def _configmap(name: str, namespace: str, labels: dict[str, str], data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": data}


def test_apply_creates_then_removes_what_it_stopped_setting_and_keeps_others_edits(k8s: Cluster) -> None:
    name = f"ssa-{uuid.uuid4().hex[:6]}"
    ns = k8s.namespace
    try:
        created = k8s.call(lambda k: k.apply(_configmap(name, ns, {"a": "1", "b": "2"}, {"x": "1", "y": "2"})))
        assert created["data"] == {"x": "1", "y": "2"}
        # Another writer (a user's kubectl edit, another controller) adds a key and changes one of ours.
        k8s.call(lambda k: k.merge_patch("ConfigMap", ns, name, {"data": {"theirs": "t", "y": "edited"},
                                                                 "metadata": {"labels": {"c": "3"}}}))
        after = k8s.call(lambda k: k.apply(_configmap(name, ns, {"a": "1"}, {"x": "3"})))
        # b and x's old value: ours, so b goes and x follows; theirs, c and the edited y stay theirs.
        assert after["data"] == {"x": "3", "y": "edited", "theirs": "t"}
        assert after["metadata"]["labels"] == {"a": "1", "c": "3"}
        assert k8s.get("ConfigMap", name)["data"] == after["data"]
    finally:
        k8s.call(lambda k: k.delete("ConfigMap", ns, name))


def test_apply_of_an_unchanged_deployment_does_not_bump_its_generation(k8s: Cluster) -> None:
    name = f"ssa-{uuid.uuid4().hex[:6]}"
    ns = k8s.namespace
    labels = {"app": name}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
                  "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
                      "metadata": {"labels": labels},
                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}

    def apply(k: KubeApi) -> Any:
        return k.apply(deployment)

    try:
        first = k8s.call(apply)["metadata"]["generation"]
        assert k8s.call(apply)["metadata"]["generation"] == first
        deployment["spec"]["replicas"] = 1
        assert k8s.call(apply)["metadata"]["generation"] == first + 1
    finally:
        k8s.call(lambda k: k.delete("Deployment", ns, name))
