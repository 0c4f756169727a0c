"""The whole platform on one machine, for the end-to-end scenarios: API, kubelet, S3, operator.

* the Kubernetes API: the emulator (tests/operator/k8s_emulator.py, kmock with the fixes it
  needs) on loopback, or the cluster of `KUBECONFIG` when that is set;
* the process kubelet (tests/operator/kubelet.py): realizes the operator's Deployments and Pods
  as local processes, each pod in a network namespace with its own IP, Service names resolving to
  the ready pods they select, and keeps them running like a Deployment. Against a real cluster
  without nodes (an API server with its controller-manager, ../shared/tools/real-apiserver) it
  plays the node instead: it runs the Pods the server's Deployment and ReplicaSet controllers make
  and the batch drivers' Pods (`process_kubelet`; STROM_TEST_PROCESS_KUBELET=1/0 forces it on or
  off). Not used against a cluster with nodes, which run the pods from the image;
* a real S3 server: `weed mini` (tests/engine/s3_server.py) for checkpoints and savepoints, bound
  to the pods' network gateway (conftest.py), or the S3 endpoint a real run names
  (`STROM_E2E_S3_ENDPOINT`, see README.md);
* the operator: the `strom-operator` command as a process, which a scenario may kill and start
  again; against a real cluster with `STROM_E2E_OPERATOR=in-cluster`, the operator the Helm chart
  installed (killing it deletes its pod).

`Platform` is what a scenario holds: synchronous helpers over the API (apply, patch, status,
events), waits with a deadline that report the FlinkJob's status and the process logs on timeout.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strom_operator.clients.kube_api import KubeApi, KubeApiError

from tests.engine.s3_server import S3Server
from tests.operator.kubelet import ROOT, ProcessKubelet, free_port
from tests.operator.operator_harness import CLEANED_KINDS as OPERATOR_TEST_KINDS
from tests.operator.operator_harness import clean_up, events_of, left_behind

E2E_DIR = Path(__file__).resolve().parent
OPERATOR_LABELS = {"app.kubernetes.io/name": "strom-operator"}
# What the scenarios and the kubelet tests create, deleted at the end of a session (FlinkJobs first)
CLEANED_KINDS = (*OPERATOR_TEST_KINDS, "Deployment", "Service", "ConfigMap", "Pod")


@dataclass(frozen=True, slots=True)
class E2EConfig:
    """How a run is set up; everything has a local default, a real cluster sets it from the environment."""

    kubeconfig: str | None
    namespace: str
    image: str
    jobs_dir: str  # where the pods find e2e/jobs
    operator_mode: str  # process | in-cluster
    operator_namespace: str
    shared_dir: str | None  # a real cluster: a host directory mounted at the same path into the pods
    soak: bool
    process_kubelet: bool = True  # the process kubelet runs the pods (the emulator's, or a node-less cluster's)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, process_kubelet: bool = False) -> E2EConfig:
        """`process_kubelet`: a real cluster whose node the process kubelet plays (the pods run here,
        so the local image name and jobs directory); always so without KUBECONFIG (the emulator)."""
        env = os.environ if env is None else env
        real = env.get("KUBECONFIG") or None
        local = real is None or process_kubelet
        namespace = env.get("STROM_E2E_NAMESPACE", "default")
        return cls(
            kubeconfig=real,
            namespace=namespace,
            image=env.get("STROM_E2E_IMAGE", "strom/runtime:e2e" if local else "strom/strom-runtime:0.1.0"),
            jobs_dir=env.get("STROM_E2E_JOBS_DIR", str(E2E_DIR / "jobs") if local else "/opt/strom/e2e/jobs"),
            operator_mode=env.get("STROM_E2E_OPERATOR", "process"),
            operator_namespace=env.get("STROM_E2E_OPERATOR_NAMESPACE", namespace),
            shared_dir=env.get("STROM_E2E_SHARED_DIR") or None,
            soak=env.get("STROM_E2E_SOAK") == "1",
            process_kubelet=local,
        )

    @property
    def emulated(self) -> bool:
        return self.kubeconfig is None


def wait_until(condition: Callable[[], Any], *, timeout: float, what: str,
               details: Callable[[], str] = lambda: "") -> Any:
    """The condition's first truthy value; TimeoutError naming `what`, with details, at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not reached within {timeout:g} s\n{details()}")
        time.sleep(0.2)  # poll interval of the condition, not a guess at how long it takes


class OperatorProcess:
    """`strom-operator` as a child process against the platform's API; kill and start it at will."""

    def __init__(self, kubeconfig: Path, namespace: str, work_dir: Path, url_map: Path | None) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.work_dir = work_dir
        self.url_map = url_map
        self.log_path = work_dir / "operator.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.metrics_port = 0
        self.starts = 0

    def command(self) -> list[str]:
        installed = Path(sys.executable).parent / "strom-operator"
        base = [str(installed)] if installed.exists() else (
            [found] if (found := shutil.which("strom-operator")) else [sys.executable, "-m", "strom_operator.main"])
        args = ["--namespace", self.namespace, "--metrics-port", "0", "--liveness",
                f"http://127.0.0.1:{free_port()}/healthz", "--max-requeue", "1", "--log-level", "INFO"]
        if self.url_map is not None:
            args += ["--jobmanager-url-map", str(self.url_map)]
        return base + args

    def start(self) -> OperatorProcess:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), STROM_OPERATOR_WATCH_TIMEOUT_SECONDS="60",
                   PYTHONPATH=os.pathsep.join([str(ROOT / "operator"), str(ROOT / "runtime-image"),
                                               os.environ.get("PYTHONPATH", "")]))
        self.starts += 1
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            log.write(f"=== operator start {self.starts}\n".encode())
            self.proc = subprocess.Popen(self.command(), env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.work_dir, start_new_session=True)

        def started() -> int | None:
            m = re.search(r"operator metrics on port (\d+)", self.log_path.read_text(errors="replace")[offset:])
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the operator exited with {self.proc.returncode}:\n{self.log()}")
            return int(m.group(1)) if m else None

        self.metrics_port = wait_until(started, timeout=60, what="the operator's start", details=self.log)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill it (SIGKILL by default: no cleanup, no finalizer handling, as a crashed pod)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self, tail: int = 6000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:] if self.log_path.exists() else ""


class InClusterOperator:
    """The operator installed in a real cluster (Helm chart): killing it deletes its pods."""

    def __init__(self, platform_call: Callable[[Callable[[KubeApi], Any]], Any], namespace: str) -> None:
        self._call = platform_call
        self.namespace = namespace

    def pods(self) -> list[dict[str, Any]]:
        return self._call(lambda k: k.list("Pod", self.namespace, labels=OPERATOR_LABELS))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        for pod in self.pods():
            path = f"/api/v1/namespaces/{self.namespace}/pods/{pod['metadata']['name']}"
            self._call(lambda k, p=path: k.request("DELETE", p, body={"gracePeriodSeconds": 0}))

    def start(self) -> InClusterOperator:
        """Its Deployment starts a new pod by itself: wait for one that runs."""
        wait_until(lambda: any((p.get("status") or {}).get("phase") == "Running" and
                               not p["metadata"].get("deletionTimestamp") for p in self.pods()),
                   timeout=120, what="the in-cluster operator running again")
        return self

    def stop(self) -> None:
        pass

    def log(self, tail: int = 6000) -> str:
        return "(the in-cluster operator's log: kubectl logs -l app.kubernetes.io/name=strom-operator)"


class Platform:
    """The running platform and the synchronous helpers the scenarios use."""

    def __init__(self, config: E2EConfig, *, api: KubeApi, kubeconfig: Path, s3: S3Server, work_dir: Path,
                 kubelet: ProcessKubelet | None) -> None:
        self.config = config
        self.namespace = config.namespace
        self.api = api
        self.kubeconfig = kubeconfig
        self.s3 = s3
        self.work_dir = work_dir
        self.kubelet = kubelet
        self.loop = asyncio.new_event_loop()
        self._found = {kind: left_behind(self, kind) for kind in CLEANED_KINDS}  # what close() keeps
        self.operator: OperatorProcess | InClusterOperator
        if config.operator_mode == "in-cluster":
            self.operator = InClusterOperator(self.call, config.operator_namespace)
        else:
            # a real cluster: STROM_TEST_OPERATOR_KUBECONFIG gives the operator other credentials than the
            # scenarios' (e.g. the Helm chart's ServiceAccount token, to run under the chart's RBAC)
            own = os.environ.get("STROM_TEST_OPERATOR_KUBECONFIG") if not config.emulated else None
            self.operator = OperatorProcess(Path(own) if own else kubeconfig, self.namespace, work_dir,
                                            kubelet.url_map if kubelet is not None else None)

    def close(self) -> None:
        """Delete what the scenarios left (FlinkJobs first, while the operator still runs to remove
        their finalizers), then stop the operator."""
        try:
            clean_up(self, self._found)
        finally:
            self.operator.stop()
        self.loop.run_until_complete(self.api.close())
        self.loop.close()

    # -- the API ---------------------------------------------------------------------------------

    def call(self, make: Callable[[KubeApi], Any]) -> Any:
        return self.loop.run_until_complete(make(self.api))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.call(lambda k: k.get(kind, self.namespace, name))

    def list(self, kind: str, **labels: str) -> list[dict[str, Any]]:
        return self.call(lambda k: k.list(kind, self.namespace, labels=labels or None))

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create `obj` in the platform's namespace unless it names its own."""
        obj = {**obj, "metadata": {"namespace": self.namespace, **obj["metadata"]}}
        return self.call(lambda k: k.create(obj))

    def patch_spec(self, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        return self.call(lambda k: k.merge_patch("FlinkJob", self.namespace, name, {"spec": spec}))

    def delete(self, kind: str, name: str) -> None:
        try:
            self.call(lambda k: k.delete(kind, self.namespace, name))
        except KubeApiError as e:
            if e.status != 404:
                raise

    def status(self, name: str) -> dict[str, Any]:
        body = self.get("FlinkJob", name)
        assert body is not None, f"FlinkJob {name} is gone"
        return body.get("status") or {}

    def conditions(self, name: str) -> dict[str, dict[str, Any]]:
        return {c["type"]: c for c in self.status(name).get("conditions") or ()}

    def events(self, name: str) -> list[dict[str, Any]]:
        """The Events of FlinkJob `name` (the current one's when it exists), oldest first (operator_harness)."""
        return events_of(self.list("Event"), name, self.get("FlinkJob", name))

    def owned_objects(self, name: str) -> list[tuple[str, str]]:
        """(kind, name) of every object labelled as belonging to the FlinkJob."""
        found = []
        for kind in ("Deployment", "Pod", "Service", "ConfigMap", "NetworkPolicy"):
            for obj in self.list(kind, **{"app.kubernetes.io/instance": name}):
                found.append((kind, obj["metadata"]["name"]))
        return found

    # -- S3 --------------------------------------------------------------------------------------

    def s3_keys(self, prefix: str) -> list[str]:
        client = self.s3.client()
        keys: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.s3.bucket, Prefix=prefix):
            keys += [o["Key"] for o in page.get("Contents") or ()]
        return keys

    # -- processes (emulated pods) ---------------------------------------------------------------

    def kill_pod_process(self, deployment: str, *, sig: int = signal.SIGKILL, group: bool = False) -> int:
        """kill -9 the main process of the deployment's first running pod (`group`: its whole process
        group, every process of the container); its pid. A real cluster: delete that pod with no grace
        period (the nearest an API client gets to kill -9)."""
        if self.kubelet is None:
            pods = [p for p in self.list("Pod") if p["metadata"]["name"].startswith(deployment + "-")]
            path = f"/api/v1/namespaces/{self.namespace}/pods/{pods[0]['metadata']['name']}"
            self.call(lambda k: k.request("DELETE", path, body={"gracePeriodSeconds": 0}))
            return 0
        kubelet = self.kubelet
        pids = wait_until(lambda: kubelet.pids_of(deployment), timeout=30, what=f"a running pod of {deployment}")
        if group:
            os.killpg(pids[0], sig)
        else:
            os.kill(pids[0], sig)
        return int(pids[0])

    def pod_ips(self, deployment: str) -> dict[str, str]:
        """Pod name -> status.podIP of the deployment's pods that have one."""
        return {p["metadata"]["name"]: ip for p in self.list("Pod") if p["metadata"]["name"].startswith(
            deployment + "-") and (ip := (p.get("status") or {}).get("podIP"))}

    def restart_counts(self, deployment: str) -> list[int]:
        out = []
        for pod in self.list("Pod"):
            if pod["metadata"]["name"].startswith(deployment + "-"):
                statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
                out.append(int(statuses[0].get("restartCount", 0)))
        return out

    # -- waiting ---------------------------------------------------------------------------------

    def details(self, name: str) -> Callable[[], str]:
        def text() -> str:
            body = self.get("FlinkJob", name)
            status = (body or {}).get("status")
            parts = [f"FlinkJob {name} status: {status}", "--- operator log", self.operator.log()]
            if self.kubelet is not None:
                parts += ["--- pods", self.kubelet.logs(tail=1500)]
            return "\n".join(parts)
        return text

    def wait(self, name: str, condition: Callable[[], Any], *, timeout: float, what: str) -> Any:
        return wait_until(condition, timeout=timeout, what=f"{name}: {what}", details=self.details(name))

    def wait_lifecycle(self, name: str, *states: str, timeout: float = 90) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            status = self.status(name)
            return status if status.get("lifecycleState") in states else None
        return self.wait(name, reached, timeout=timeout, what=f"lifecycle {' or '.join(states)}")

    def wait_running(self, name: str, *, timeout: float = 90) -> dict[str, Any]:
        """STABLE with the JobManager reporting the job RUNNING."""
        def running() -> dict[str, Any] | None:
            status = self.status(name)
            ok = status.get("lifecycleState") == "STABLE" and (status.get("jobStatus") or {}).get("state") == "RUNNING"
            return status if ok else None
        return self.wait(name, running, timeout=timeout, what="STABLE with the job RUNNING")

    def wait_gone(self, name: str, *, timeout: float = 60) -> None:
        self.wait(name, lambda: self.get("FlinkJob", name) is None and not self.owned_objects(name),
                  timeout=timeout, what="the FlinkJob and everything it owns gone")


def jobmanager_rest(platform: Platform, name: str, path: str) -> Any:
    """GET a path of the FlinkJob's JobManager REST API (at its ready pod's IP, as the kubelet gives it to
    the operator); None when it does not answer, has no ready pod, or the cluster is real (its pods are
    not reachable from here)."""
    import json
    import urllib.error
    import urllib.request

    if platform.kubelet is None:
        return None
    url = platform.kubelet.rest_url(f"{name}-jobmanager")
    if url is None:
        return None
    try:
        with urllib.request.urlopen(url + path, timeout=5) as r:
            return json.loads(r.read())
    except (OSError, urllib.error.URLError, ValueError):
        return None
