"""The process kubelet ends a pod as Kubernetes does (issue 16 item 14): SIGTERM to the container's
process group, the pod's terminationGracePeriodSeconds for its processes to exit, then SIGKILL; and the
Pod object goes only after every process of the group is gone. What the e2e tests may rely on after a
FlinkJob's owned Pods are gone: no process of theirs is left."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tests.operator.kubelet import ProcessKubelet
from tests.operator.operator_harness import Cluster, wait_until

# A container whose main process and its child both ignore SIGTERM: only SIGKILL ends them.
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
                          "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
print("child", child.pid, flush=True)
time.sleep(600)
"""
# A container that exits on SIGTERM at once (Python's default action), with a child that does too.
PROMPT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("child", child.pid, flush=True)
time.sleep(600)
"""


def _deployment(name: str, source: str, grace_s: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "strategy": {"type": "Recreate"},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"terminationGracePeriodSeconds": grace_s,
                                       "containers": [{"name": "main", "image": "python:3.11",
                                                       "command": [sys.executable, "-c", source]}]}}},
    }


def _group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) of the process group, read from /proc independently of the kubelet."""
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                members.append(int(name))
    return members


def _pods(k8s: Cluster, name: str) -> list[dict[str, Any]]:
    return k8s.call(lambda k: k.list("Pod", k8s.namespace, labels={"app": name}))


def _start(k8s: Cluster, kubelet: ProcessKubelet, name: str, source: str, grace_s: int) -> int:
    """The Deployment's pod running with its child; the container's process group id."""
    k8s.call(lambda k: k.create({**_deployment(name, source, grace_s),
                                 "metadata": {"name": name, "namespace": k8s.namespace, "labels": {"app": name}}}))
    pgid = wait_until(lambda: (kubelet.pids_of(name) or [None])[0], timeout=60, what=f"{name}'s pod running")
    wait_until(lambda: len(_group_members(pgid)) >= 2, timeout=60, what=f"{name}'s child process")
    return pgid


def _delete_and_watch(k8s: Cluster, name: str, pgid: int, timeout: float) -> tuple[float, float, bool]:
    """Delete the Deployment; (seconds until its processes are gone, until its Pods are gone, whether a
    Pod object was ever seen gone while a process of the group was alive)."""
    started = time.monotonic()
    k8s.call(lambda k: k.delete("Deployment", k8s.namespace, name))
    processes_gone = pods_gone = None
    early = False
    while (processes_gone is None or pods_gone is None) and time.monotonic() - started < timeout:
        alive = bool(_group_members(pgid))
        pods = _pods(k8s, name)
        now = time.monotonic() - started
        if not alive and processes_gone is None:
            processes_gone = now
        if not pods and pods_gone is None:
            pods_gone = now
        if not pods and alive:
            early = True
        time.sleep(0.05)
    assert processes_gone is not None and pods_gone is not None, f"not gone within {timeout} s"
    return processes_gone, pods_gone, early


def test_processes_that_ignore_sigterm_are_killed_after_the_grace_period_and_only_then_the_pod_goes(
        k8s: Cluster, kubelet: ProcessKubelet):
    grace_s = 3
    pgid = _start(k8s, kubelet, "stubborn", STUBBORN, grace_s)
    processes_gone, pods_gone, early = _delete_and_watch(k8s, "stubborn", pgid, timeout=60)
    assert not early, "a Pod object was gone while a process of its container still ran"
    assert processes_gone >= grace_s, f"killed after {processes_gone:.1f} s, before the {grace_s} s grace period"
    assert processes_gone < grace_s + 20  # SIGKILL follows the grace period (kubelet poll and load aside)
    assert pods_gone >= processes_gone


def test_processes_that_exit_on_sigterm_end_the_pod_long_before_the_grace_period(
        k8s: Cluster, kubelet: ProcessKubelet):
    grace_s = 60
    pgid = _start(k8s, kubelet, "prompt", PROMPT, grace_s)
    processes_gone, pods_gone, early = _delete_and_watch(k8s, "prompt", pgid, timeout=grace_s)
    assert not early
    assert processes_gone < grace_s / 2, f"SIGTERM took {processes_gone:.1f} s: was it sent to the group?"
    assert pods_gone >= processes_gone and pods_gone < grace_s / 2
