"""The process kubelet plays a Deployment and runs bare Pods: restarts, replicas, env references, pod status.

Against the emulator, or a real cluster without nodes whose node the process kubelet plays (a
cluster with nodes has its own kubelet: skipped). The container is a tiny Python
process that writes its environment to a file and sleeps, so what it was given can be read back.
Bare Pods (no Deployment owns them, as a batch FlinkJob's driver) end by their restartPolicy:
Never -> Succeeded or Failed with the exit code and, under FallbackToLogsOnError, the log's tail.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.platform import Platform, wait_until
from tests.netns import TEST_BLOCK

pytestmark = pytest.mark.timeout(120)
IMAGE = "strom/runtime:e2e"  # a real server requires one; the process kubelet runs the command, not the image

SLEEPER = ("import json, os, sys, time; "
           "json.dump(dict(os.environ), open(os.path.join(sys.argv[1], os.environ['POD_MARK'] + '-' + "
           "str(os.getpid()) + '.json'), 'w')); time.sleep(3600)")


def deployment(name: str, out: Path, *, replicas: int, env: list[dict[str, Any]],
               env_from: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    labels = {"app": name}
    container: dict[str, Any] = {"name": "main", "image": IMAGE, "command": [sys.executable, "-c", SLEEPER, str(out)],
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
        pytest.skip("the cluster's own nodes run the pods (the process kubelet plays none of them)")
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
    main = {"name": "worker", "image": IMAGE, "command": [sys.executable, "-c", code, *args],
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
    assert not container.get("lastState")  # never restarted (a real server defaults it to {})
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
    # the kubelet forgets the pod once it has reaped the group, a moment after the processes are gone
    wait_until(lambda: platform.kubelet.bare_pod("bare-sleeper") is None,  # type: ignore[union-attr]
               timeout=30, what="the kubelet to forget the deleted pod")
    platform.delete("Pod", "bare-imageonly")
    platform.delete("ConfigMap", "bare-config")


# -- networking: every pod its own IP, Services resolving to ready pods, nothing rewritten ---------------------

# Binds its pod IP (argv[2]) on port 7000, writes its environment and argv once listening, then answers every
# connection with its pod name and the address the connection came from.
LISTENER = ("import json, os, socket, sys; out, ip = sys.argv[1], sys.argv[2]; s = socket.socket(); "
            "s.bind((ip, 7000)); s.listen(); name = os.environ['POD_NAME']; tmp = os.path.join(out, name + '.tmp'); "
            "json.dump({'env': dict(os.environ), 'argv': sys.argv}, open(tmp, 'w')); "
            "os.replace(tmp, os.path.join(out, name + '.json'))\n"
            "while True:\n"
            "    c, peer = s.accept(); c.sendall(f'{name} {peer[0]}'.encode()); c.close()")
# Connects to argv[1]:argv[2] and prints the answer.
DIAL = ("import socket, sys; s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
        "print(s.recv(200).decode())")
CONNECT = "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()"
# Serves HTTP on 8080: /ready answers 200 while the file argv[1] exists, else 503; / answers with the pod name.
WEB = ("import http.server, os, sys\n"
       "class H(http.server.BaseHTTPRequestHandler):\n"
       "    def do_GET(self):\n"
       "        ok = self.path != '/ready' or os.path.exists(sys.argv[1])\n"
       "        body = os.environ['POD_NAME'].encode()\n"
       "        self.send_response(200 if ok else 503); self.send_header('Content-Length', str(len(body)))\n"
       "        self.end_headers(); self.wfile.write(body)\n"
       "    def log_message(self, *args): pass\n"
       "http.server.HTTPServer(('0.0.0.0', 8080), H).serve_forever()")
# Resolves the name argv[1] every 0.2 s; once it resolves, fetches http://<name>:8080/ and writes the address
# and the answer to argv[2], with how many lookups had failed before (a dependent pod that waits, not crashes).
RESOLVER = ("import socket, sys, time, urllib.request\n"
            "failed = 0\n"
            "while True:\n"
            "    try:\n"
            "        ip = socket.gethostbyname(sys.argv[1])\n"
            "        body = urllib.request.urlopen(f'http://{sys.argv[1]}:8080/', timeout=5).read().decode()\n"
            "        open(sys.argv[2], 'w').write(f'{ip} {body} {failed}'); break\n"
            "    except OSError:\n"
            "        failed += 1; time.sleep(0.2)\n"
            "time.sleep(3600)")
DOWNWARD_ENV = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]


def pod_deployment(name: str, command: list[str], *, replicas: int = 1, args: list[str] | None = None,
                   env: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
                   **container: Any) -> dict[str, Any]:
    labels = {"app": name, **(labels or {})}
    main: dict[str, Any] = {"name": "main", "image": IMAGE, "command": command, "args": args or [],
                            "env": env or DOWNWARD_ENV, **container}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [main]}}}}


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or ()}
    return conditions.get("Ready") == "True" and container_status(pod).get("ready") is True


def cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode().split("\0")[:-1]


def in_pod(platform: Platform, pod: str, argv: list[str]) -> Any:
    """Run argv in the pod's network namespace (the machine's filesystem): the completed process."""
    realized = platform.kubelet.pod(pod)  # type: ignore[union-attr]
    assert realized is not None and realized.host is not None, f"the kubelet runs no pod {pod}"
    return realized.host.run(argv, timeout=30)


def resolves(platform: Platform, pod: str, name: str) -> list[str]:
    """The addresses `name` resolves to inside the pod (its hosts file); [] when it does not resolve."""
    done = in_pod(platform, pod, [sys.executable, "-c", "import socket, sys; print(' '.join(sorted({a[4][0] for a "
                                  "in socket.getaddrinfo(sys.argv[1], 80, socket.AF_INET)})))", name])
    return done.stdout.split() if done.returncode == 0 else []


def test_each_pod_has_its_own_ip_reached_from_another_pod_and_its_argv_is_the_template_expanded(
        emulated: Platform, tmp_path: Path):
    platform, name = emulated, "kubelet-net"
    env = [*DOWNWARD_ENV, {"name": "ADDR", "value": "$(POD_IP):7000"}]
    # labelled as a TaskManager with a --jobmanager argument: what the kubelet once rewrote to loopback
    args = [str(tmp_path), "$(POD_IP)", "--jobmanager", "kubelet-net-jm:6123", "-D", "rest.address=$(ADDR)",
            "$$(POD_IP)", "$(UNDEFINED)", "$(POD_NAME).$(POD_NAMESPACE)@$(NODE)", "$(POD_IP"]
    platform.create(pod_deployment(name, [sys.executable, "-c", LISTENER], replicas=2, args=args, env=env,
                                   labels={"app.kubernetes.io/component": "taskmanager"},
                                   readinessProbe={"tcpSocket": {"port": 7000}, "periodSeconds": 5}))
    running = wait_until(lambda: len(p := pods(platform, name)) == 2 and all(map(is_ready, p)) and p, timeout=30,
                         what="two pods Ready (tcpSocket probe on their port 7000)")
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in running}
    assert len(set(ips.values())) == 2, f"two pods share an IP: {ips}"
    assert all(ipaddress.ip_address(p["status"]["podIP"]) in TEST_BLOCK and p["status"]["podIP"] != p["status"][
        "hostIP"] for p in running), ips
    dep = wait_until(lambda: (d := platform.get("Deployment", name)) and (d.get("status") or {}).get(
        "readyReplicas") == 2 and d, timeout=30, what="the Deployment's status: 2 ready")
    assert dep["status"]["availableReplicas"] == 2

    for pod in running:
        pod_name, ip = pod["metadata"]["name"], pod["status"]["podIP"]
        seen = json.loads((tmp_path / f"{pod_name}.json").read_text())
        assert (seen["env"]["POD_IP"], seen["env"]["POD_NAME"], seen["env"]["POD_NAMESPACE"]) == (
            ip, pod_name, platform.namespace)
        assert seen["env"]["NODE"] == pod["spec"]["nodeName"] and seen["env"]["ADDR"] == f"{ip}:7000"
        # Kubernetes' expansion, worked by hand: $(VAR) of a defined variable replaced, $$ an escaped $,
        # an undefined or unclosed reference kept as written; nothing added, nothing rewritten
        expected = [str(tmp_path), ip, "--jobmanager", "kubelet-net-jm:6123", "-D", f"rest.address={ip}:7000",
                    "$(POD_IP)", "$(UNDEFINED)", f"{pod_name}.{platform.namespace}@{pod['spec']['nodeName']}",
                    "$(POD_IP"]
        assert seen["argv"][1:] == expected
        process = platform.kubelet.pod(pod_name)  # type: ignore[union-attr]
        assert process is not None and process.pid is not None
        assert cmdline(process.pid) == [sys.executable, "-c", LISTENER, *expected]

    # each pod dials the other's IP; the other sees the connection come from the dialer's own IP
    (a, ip_a), (b, ip_b) = sorted(ips.items())
    for src, dst, src_ip, dst_ip in ((a, b, ip_a, ip_b), (b, a, ip_b, ip_a)):
        done = in_pod(platform, src, [sys.executable, "-c", DIAL, dst_ip, "7000"])
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [dst, src_ip]
    # the listener bound its pod IP only: its own loopback has nothing on 7000
    done = in_pod(platform, a, [sys.executable, "-c", DIAL, "127.0.0.1", "7000"])
    assert done.returncode != 0 and "refused" in done.stderr.lower()

    platform.delete("Deployment", name)
    wait_until(lambda: not pods(platform, name), timeout=30, what="pods gone")


def test_a_service_name_resolves_to_its_ready_pod_only_while_the_readiness_probe_passes(
        emulated: Platform, tmp_path: Path):
    platform, svc = emulated, "kweb"
    marker = tmp_path / "ready"
    platform.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc},
                     "spec": {"selector": {"app": svc}, "ports": [{"name": "http", "port": 8080,
                                                                    "targetPort": "http"}]}})
    platform.create(pod_deployment(svc, [sys.executable, "-c", WEB, str(marker)],
                                   ports=[{"name": "http", "containerPort": 8080}],
                                   readinessProbe={"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5,
                                                   "failureThreshold": 1}))
    platform.create(pod_deployment("kclient", [sys.executable, "-c", RESOLVER, svc, str(tmp_path / "resolved")]))
    web = wait_until(lambda: [p for p in pods(platform, svc) if container_status(p).get("started")], timeout=30,
                     what="the web pod's container running")[0]
    web_name, web_ip = web["metadata"]["name"], web["status"]["podIP"]
    client = wait_until(lambda: [p for p in pods(platform, "kclient") if container_status(p).get("started")],
                        timeout=30, what="the client pod's container running")[0]["metadata"]["name"]

    # running, serving, but its readiness probe fails: not Ready, no endpoint, the name resolves to nothing
    wait_until(lambda: in_pod(platform, client, [sys.executable, "-c", CONNECT, web_ip, "8080"]).returncode == 0
               or None, timeout=30, what="the web server listening")
    probed = platform.kubelet.pod(web_name)  # type: ignore[union-attr]
    assert probed is not None
    wait_until(lambda: probed.probe_failures >= 2, timeout=30, what="two failed readiness probes")
    web = pods(platform, svc)[0]
    assert not is_ready(web) and web["status"]["phase"] == "Running"
    assert (platform.get("Deployment", svc) or {}).get("status", {}).get("readyReplicas", 0) == 0
    for name in (svc, f"{svc}.{platform.namespace}", f"{svc}.{platform.namespace}.svc"):
        assert resolves(platform, client, name) == []
    assert not (tmp_path / "resolved").exists()

    # the probe passes: Ready, and every form of the name resolves to the pod's IP in the client's pod
    marker.touch()
    wait_until(lambda: is_ready(pods(platform, svc)[0]), timeout=30, what="the web pod Ready")
    for name in (svc, f"{svc}.{platform.namespace}", f"{svc}.{platform.namespace}.svc",
                 f"{svc}.{platform.namespace}.svc.cluster.local"):
        assert resolves(platform, client, name) == [web_ip]
    # the client, running all along, saw the name appear and reached the pod through it
    written = wait_until(lambda: (tmp_path / "resolved").exists() and (tmp_path / "resolved").read_text(),
                         timeout=30, what="the client reached the Service by name")
    ip, body, failed = written.split()
    assert (ip, body) == (web_ip, web_name) and int(failed) > 0
    assert container_status(pods(platform, "kclient")[0])["restartCount"] == 0
    assert (platform.get("Deployment", svc) or {})["status"]["readyReplicas"] == 1

    # the probe fails again (failureThreshold 1): the endpoint goes, the name resolves to nothing again
    marker.unlink()
    wait_until(lambda: not is_ready(pods(platform, svc)[0]), timeout=30, what="the web pod not Ready")
    wait_until(lambda: resolves(platform, client, svc) == [], timeout=10, what="the name gone from the hosts file")

    for kind, obj in (("Deployment", svc), ("Deployment", "kclient"), ("Service", svc)):
        platform.delete(kind, obj)
    wait_until(lambda: not pods(platform, svc) and not pods(platform, "kclient"), timeout=30, what="pods gone")
