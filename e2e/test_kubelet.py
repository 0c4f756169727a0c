"""The process kubelet plays a Deployment: restarts, replicas, env references, pod status.

Against the emulator only (a real cluster has its own kubelet). The container is a tiny Python
process that writes its environment to a file and sleeps, so what it was given can be read back.
"""

from __future__ import annotations

import base64
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.platform import Platform, wait_until

pytestmark = pytest.mark.timeout(120)

SLEEPER = ("import json, os, sys, time; "
           "json.dump(dict(os.environ), open(os.path.join(sys.argv[1], os.environ['POD_MARK'] + '-' + "
           "str(os.getpid()) + '.json'), 'w')); time.sleep(3600)")


def deployment(name: str, out: Path, *, replicas: int, env: list[dict[str, Any]],
               env_from: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    labels = {"app": name}
    container: dict[str, Any] = {"name": "main", "command": [sys.executable, "-c", SLEEPER, str(out)],
                                 "env": [{"name": "POD_MARK", "value": name}, *env]}
    if env_from:
        container["envFrom"] = env_from
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}}


def pods(platform: Platform, name: str) -> list[dict[str, Any]]:
    return sorted(platform.list("Pod", app=name), key=lambda p: p["metadata"]["name"])


def container_status(pod: dict[str, Any]) -> dict[str, Any]:
    return ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]


@pytest.fixture
def emulated(platform: Platform) -> Platform:
    if platform.kubelet is None:
        pytest.skip("the process kubelet runs only against the emulator")
    return platform


def test_kubelet_resolves_env_restarts_killed_containers_and_follows_replicas(emulated: Platform, tmp_path: Path):
    platform, name = emulated, "kubelet-probe"
    platform.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe-secret"},
                     "data": {"token": base64.b64encode(b"s3cr3t").decode()}})
    platform.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe-config"},
                     "data": {"mode": "fast", "level": "2"}})
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "probe-secret", "key": "token"}}},
           {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "probe-config", "key": "mode"}}}]
    platform.create(deployment(name, tmp_path, replicas=2, env=env,
                               env_from=[{"configMapRef": {"name": "probe-config"}, "prefix": "CFG_"}]))

    running = wait_until(lambda: len(p := pods(platform, name)) == 2 and all(
        (x.get("status") or {}).get("phase") == "Running" for x in p) and p, timeout=30, what="two pods Running")
    assert [container_status(p)["restartCount"] for p in running] == [0, 0]
    written = wait_until(lambda: len(files := list(tmp_path.glob(f"{name}-*.json"))) == 2 and files, timeout=30,
                         what="both containers started")
    seen = json.loads(written[0].read_text())
    assert (seen["TOKEN"], seen["MODE"], seen["CFG_mode"], seen["CFG_level"]) == ("s3cr3t", "fast", "fast", "2")
    dep = wait_until(lambda: (d := platform.get("Deployment", name)) and (d.get("status") or {}).get(
        "readyReplicas") == 2 and d, timeout=30, what="the Deployment's status: 2 ready")
    assert dep["status"]["replicas"] == 2

    # kill -9 one container: it is restarted in the same pod, with restartCount 1 and its last exit
    pid = platform.kill_pod_process(name)
    restarted = wait_until(lambda: [p for p in pods(platform, name) if container_status(p).get("restartCount") == 1
                                    and container_status(p).get("ready")], timeout=30,
                           what="the killed container restarted")
    assert len(restarted) == 1 and len(pods(platform, name)) == 2
    last = container_status(restarted[0])["lastState"]["terminated"]
    assert last["exitCode"] == -signal.SIGKILL and last["reason"] == "Killed"
    assert pid not in platform.kubelet.pids_of(name)  # type: ignore[union-attr]

    # replicas 2 -> 1: one pod goes, the other keeps its process
    survivors_before = set(platform.kubelet.pids_of(name))  # type: ignore[union-attr]
    platform.call(lambda k: k.merge_patch("Deployment", platform.namespace, name, {"spec": {"replicas": 1}}))
    wait_until(lambda: len(pods(platform, name)) == 1, timeout=30, what="one pod left")
    assert set(platform.kubelet.pids_of(name)) <= survivors_before  # type: ignore[union-attr]

    # a deleted pod is replaced by a new one
    only = pods(platform, name)[0]["metadata"]["name"]
    platform.delete("Pod", only)
    wait_until(lambda: [p for p in pods(platform, name) if p["metadata"]["name"] != only
                        and (p.get("status") or {}).get("phase") == "Running"], timeout=30,
               what="a replacement pod Running")

    platform.delete("Deployment", name)
    wait_until(lambda: not pods(platform, name) and not platform.kubelet.pids_of(name),  # type: ignore[union-attr]
               timeout=30, what="the Deployment's pods and processes gone")
    for obj in (("Secret", "probe-secret"), ("ConfigMap", "probe-config")):
        platform.delete(*obj)


def test_kubelet_keeps_a_pod_pending_while_its_secret_is_missing(emulated: Platform, tmp_path: Path):
    platform, name = emulated, "kubelet-nosecret"
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "absent-secret", "key": "token"}}}]
    platform.create(deployment(name, tmp_path, replicas=1, env=env))
    pod = wait_until(lambda: [p for p in pods(platform, name) if (container_status(p).get("state") or {}).get(
        "waiting", {}).get("reason") == "CreateContainerConfigError"], timeout=30,
                     what="the pod waiting in CreateContainerConfigError")[0]
    assert pod["status"]["phase"] == "Pending"
    assert 'secret "absent-secret" not found' in pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
    assert not list(tmp_path.glob("*.json"))
    # the Secret appears: the container starts
    platform.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "absent-secret"},
                     "data": {"token": base64.b64encode(b"late").decode()}})
    written = wait_until(lambda: list(tmp_path.glob(f"{name}-*.json")), timeout=30, what="the container started")
    assert json.loads(written[0].read_text())["TOKEN"] == "late"
    platform.delete("Deployment", name)
    platform.delete("Secret", "absent-secret")
    wait_until(lambda: not pods(platform, name), timeout=30, what="pods gone")
