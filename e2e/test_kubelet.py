"""The process kubelet plays a Deployment and runs bare Pods: restarts, replicas, env references, pod status.

Against the emulator only (a real cluster has its own kubelet). The container is a tiny Python
process that writes its environment to a file and sleeps, so what it was given can be read back.
Bare Pods (no Deployment owns them, as a batch FlinkJob's driver) end by their restartPolicy:
Never -> Succeeded or Failed with the exit code and, under FallbackToLogsOnError, the log's tail.
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


# Prints LINES numbered lines of 40 bytes to stdout, then an error to stderr, and exits with 3.
FAILING = ("import sys; [sys.stdout.write(f'line {i:03d} ' + 'x' * 30 + '\\n') for i in range(int(sys.argv[1]))]; "
           "sys.stdout.flush(); sys.stderr.write('ValueError: bad input\\n'); sys.exit(3)")
# Fails its first run (no marker yet) and succeeds its second: OnFailure restarts it once.
FAILS_ONCE = ("import os, sys; m = os.path.join(sys.argv[1], 'retry-marker'); first = not os.path.exists(m); "
              "open(m, 'a').write('run\\n'); sys.exit(1 if first else 0)")
# Starts a child, writes both pids and the mounted config, then sleeps.
SLEEPS_WITH_CHILD = ("import os, subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
                     "'import time; time.sleep(3600)']); out = sys.argv[1]; "
                     "conf = open(os.path.join(os.environ['CONF_DIR'], 'settings.txt')).read(); "
                     "open(os.path.join(out, 'pids.tmp'), 'w').write(f'{os.getpid()} {c.pid} {conf}'); "
                     "os.replace(os.path.join(out, 'pids.tmp'), os.path.join(out, 'pids')); time.sleep(3600)")


def bare_pod(name: str, code: str, *args: str, restart_policy: str = "Never",
             **container: Any) -> dict[str, Any]:
    main = {"name": "worker", "command": [sys.executable, "-c", code, *args],
            "terminationMessagePolicy": "FallbackToLogsOnError", **container}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bare"}},
            "spec": {"restartPolicy": restart_policy, "containers": [main]}}


def pod_status(platform: Platform, name: str) -> dict[str, Any]:
    return (platform.get("Pod", name) or {}).get("status") or {}


def ended(platform: Platform, name: str) -> dict[str, Any] | None:
    status = pod_status(platform, name)
    return status if status.get("phase") in ("Succeeded", "Failed") else None


def expected_log_tail(text: str) -> str:
    """Kubernetes' FallbackToLogsOnError message, worked independently: last 80 lines, then last 2048 bytes."""
    return "".join(text.splitlines(keepends=True)[-80:]).encode()[-2048:].decode()


def process_alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_bare_pods_end_by_restart_policy_with_exit_code_and_log_tail(emulated: Platform, tmp_path: Path):
    platform = emulated
    platform.create(bare_pod("bare-fails", FAILING, "100"))
    platform.create(bare_pod("bare-succeeds", "print('all good')"))
    platform.create(bare_pod("bare-retries", FAILS_ONCE, str(tmp_path), restart_policy="OnFailure"))

    # OnFailure: restarted after its failure (back-off 1 s), then Succeeded with restartCount 1
    retried = wait_until(lambda: ended(platform, "bare-retries"), timeout=30, what="the OnFailure pod ended")
    assert retried["phase"] == "Succeeded"
    retried_container = retried["containerStatuses"][0]
    assert retried_container["restartCount"] == 1
    assert retried_container["lastState"]["terminated"]["exitCode"] == 1
    assert retried_container["state"]["terminated"]["reason"] == "Completed"
    assert (tmp_path / "retry-marker").read_text() == "run\nrun\n"

    # Never, exit 3: Failed, not restarted (the OnFailure pod's restart came and went meanwhile), and
    # the message is the tail of its log: 100 lines of 40 bytes and the error, cut to 80 lines / 2048 bytes
    failed = wait_until(lambda: ended(platform, "bare-fails"), timeout=30, what="the failing pod ended")
    assert failed["phase"] == "Failed"
    container = failed["containerStatuses"][0]
    assert (container["name"], container["restartCount"], container["ready"]) == ("worker", 0, False)
    assert "lastState" not in container
    terminated = container["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    log = "".join(f"line {i:03d} " + "x" * 30 + "\n" for i in range(100)) + "ValueError: bad input\n"
    assert terminated["message"] == expected_log_tail(log)
    assert len(terminated["message"].encode()) == 2048 and terminated["message"].endswith("ValueError: bad input\n")

    # Never, exit 0: Succeeded, Completed; no message (the log is a message only on error)
    done = wait_until(lambda: ended(platform, "bare-succeeds"), timeout=30, what="the succeeding pod ended")
    terminated = done["containerStatuses"][0]["state"]["terminated"]
    assert (done["phase"], terminated["exitCode"], terminated["reason"]) == ("Succeeded", 0, "Completed")
    assert "message" not in terminated
    assert pod_status(platform, "bare-fails")["containerStatuses"][0]["restartCount"] == 0
    for name in ("bare-fails", "bare-succeeds", "bare-retries"):
        platform.delete("Pod", name)


def test_deleting_a_bare_pod_kills_its_process_group(emulated: Platform, tmp_path: Path):
    platform = emulated
    platform.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bare-config"},
                     "data": {"settings.txt": "mounted"}})
    pod = bare_pod("bare-sleeper", SLEEPS_WITH_CHILD, str(tmp_path), env=[{"name": "CONF_DIR", "value": "/etc/bare"}],
                   volumeMounts=[{"name": "conf", "mountPath": "/etc/bare"}])
    pod["spec"]["volumes"] = [{"name": "conf", "configMap": {"name": "bare-config"}}]
    platform.create(pod)
    # a Pod without a command (its image's entry point) is left to whoever created it
    platform.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare-imageonly"},
                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}})

    written = wait_until(lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text(), timeout=30,
                         what="the container and its child started")
    leader, child, conf = written.split(" ", 2)
    assert conf == "mounted"  # the ConfigMap volume, found at its mount path through the env
    running = wait_until(lambda: pod_status(platform, "bare-sleeper").get("phase") == "Running"
                         and pod_status(platform, "bare-sleeper"), timeout=30, what="the pod Running")
    assert running["containerStatuses"][0]["ready"] is True
    assert platform.kubelet.bare_pod("bare-imageonly") is None  # type: ignore[union-attr]
    assert "containerStatuses" not in pod_status(platform, "bare-imageonly")

    platform.delete("Pod", "bare-sleeper")
    wait_until(lambda: not process_alive(int(leader)) and not process_alive(int(child)), timeout=30,
               what="the container and its child killed with the pod")
    assert platform.kubelet.bare_pod("bare-sleeper") is None  # type: ignore[union-attr]
    platform.delete("Pod", "bare-imageonly")
    platform.delete("ConfigMap", "bare-config")
