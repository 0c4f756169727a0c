"""A "process kubelet": realizes the operator's Deployments as local `strom` processes on loopback.

It plays what a cluster does for a FlinkJob's pods, so the integration tests run a real
JobManager and TaskManagers from exactly the pod templates the operator built:

* the container's `command`/`args` run (`strom` as `python -m strom.cli`) with the container's
  env (values, and `secretKeyRef`s read from the API) and the ConfigMap volume written to a
  directory that `STROM_CONF_DIR` points at;
* addresses are rewritten to loopback: the JobManager gets free REST/RPC ports (`-D` overrides the
  ConfigMap's), and a TaskManager's `--jobmanager <service>:6123` becomes that JobManager's RPC
  port; the JobManager's REST URL is written to a JSON map `"namespace/service" -> URL`, which the
  operator reads (`--jobmanager-url-map`) instead of resolving the Service;
* each process is a Pod object (labels of the template, owned by its Deployment) whose status
  says Running, or Succeeded/Failed with the exit code once the process ended (no restarts);
* a Deployment deleted, or its template or replicas changed, stops its processes (Recreate).

It polls the API (every 0.2 s), in a thread with its own event loop.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from strom_operator.kube_api import KubeApi, KubeApiError

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.2
JM_START_DEADLINE_S = 60.0
STARTED = re.compile(r"rpc port (\d+), rest port (\d+)")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class PodProcess:
    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    reported: str = ""


@dataclass
class Realized:
    """The processes of one Deployment as realized from one version of its template."""

    uid: str
    fingerprint: str
    pods: list[PodProcess] = field(default_factory=list)
    rpc_port: int | None = None
    rest_port: int | None = None


class ProcessKubelet:
    def __init__(self, api_url: str, namespace: str, work_dir: Path, *, url_map: Path | None = None) -> None:
        self.api_url = api_url
        self.namespace = namespace
        self.work_dir = work_dir
        self.url_map = url_map or work_dir / "jobmanager-urls.json"
        self.url_map.write_text("{}")
        self.realized: dict[str, Realized] = {}
        self.errors: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-kubelet", daemon=True)
        self._counter = 0

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ProcessKubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        for name in list(self.realized):
            self._terminate(self.realized.pop(name))

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        kube = KubeApi(self.api_url)
        try:
            while not self._stop.is_set():
                try:
                    await self._sync(kube)
                except Exception as e:  # noqa: BLE001 - recorded for the test to show; the loop goes on
                    self.errors.append(f"{type(e).__name__}: {e}")
                await asyncio.sleep(POLL_S)
        finally:
            await kube.close()

    # -- reconciliation of Deployments into processes --------------------------------------------

    async def _sync(self, kube: KubeApi) -> None:
        deployments = {d["metadata"]["name"]: d for d in await kube.list("Deployment", self.namespace)}
        for name in [n for n in self.realized if n not in deployments]:
            await self._remove(kube, name)
        # JobManagers first: TaskManagers need their RPC port.
        ordered = sorted(deployments.values(), key=lambda d: _component(d) != "jobmanager")
        for d in ordered:
            fingerprint = _fingerprint(d)
            current = self.realized.get(d["metadata"]["name"])
            if current is not None and (current.uid != d["metadata"]["uid"] or current.fingerprint != fingerprint):
                await self._remove(kube, d["metadata"]["name"])
                current = None
            if current is None:
                await self._realize(kube, d, fingerprint)
        for name, realized in self.realized.items():
            for pod in realized.pods:
                await self._report(kube, name, realized, pod)

    async def _realize(self, kube: KubeApi, deployment: dict[str, Any], fingerprint: str) -> None:
        name = deployment["metadata"]["name"]
        component = _component(deployment)
        template = deployment["spec"]["template"]
        container = template["spec"]["containers"][0]
        args = list(container.get("args") or [])
        realized = Realized(deployment["metadata"]["uid"], fingerprint)
        if component == "taskmanager":
            i = args.index("--jobmanager")
            service = args[i + 1].split(":")[0]
            jm = self.realized.get(service)
            if jm is None or jm.rpc_port is None:
                return  # the JobManager is not up yet: next round
            args[i + 1] = f"127.0.0.1:{jm.rpc_port}"
            args[1:1] = ["-D", "metrics.reporter.prom.port=0", "-D", "heartbeat.interval=500",
                         "-D", "heartbeat.timeout=5000"]
        elif component == "jobmanager":
            args[1:1] = ["-D", "rest.address=127.0.0.1", "-D", "rest.port=0", "-D", "jobmanager.rpc.address=127.0.0.1",
                         "-D", "jobmanager.rpc.port=0", "-D", "metrics.reporter.prom.port=0",
                         "-D", "heartbeat.interval=500", "-D", "heartbeat.timeout=5000"]
        env = await self._env(kube, template, container)
        command = [sys.executable, "-m", "strom.cli"] if container.get("command") == ["strom"] else container["command"]
        for _ in range(int(deployment["spec"].get("replicas", 1))):
            self._counter += 1
            pod_name = f"{name}-{self._counter:04d}"
            log_path = self.work_dir / f"{pod_name}.log"
            with open(log_path, "wb") as log:
                proc = subprocess.Popen([*command, *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.work_dir)
            pod = PodProcess(pod_name, proc, log_path)
            realized.pods.append(pod)
            await kube.create(_pod_object(self.namespace, pod_name, deployment, template))
        self.realized[name] = realized
        if component == "jobmanager":
            await self._await_jobmanager(name, realized)

    async def _await_jobmanager(self, name: str, realized: Realized) -> None:
        pod = realized.pods[0]
        deadline = asyncio.get_running_loop().time() + JM_START_DEADLINE_S
        while asyncio.get_running_loop().time() < deadline:
            m = STARTED.search(pod.log_path.read_text(errors="replace"))
            if m:
                realized.rpc_port, realized.rest_port = int(m.group(1)), int(m.group(2))
                self._write_url(name, f"http://127.0.0.1:{realized.rest_port}")
                return
            if pod.proc.poll() is not None:
                return
            await asyncio.sleep(0.05)
        self.errors.append(f"JobManager {name} did not start within {JM_START_DEADLINE_S} s")

    async def _env(self, kube: KubeApi, template: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runtime-image"), str(ROOT / "operator"),
                                             env.get("PYTHONPATH", "")])
        for item in container.get("env") or ():
            if "value" in item:
                env[item["name"]] = str(item["value"])
            elif "secretKeyRef" in (item.get("valueFrom") or {}):
                ref = item["valueFrom"]["secretKeyRef"]
                secret = await kube.get("Secret", self.namespace, ref["name"])
                data = (secret or {}).get("data") or {}
                if ref["key"] in data:
                    env[item["name"]] = base64.b64decode(data[ref["key"]]).decode()
        mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or ()}
        for volume in template["spec"].get("volumes") or ():
            cm = volume.get("configMap")
            if cm is None or volume["name"] not in mounts:
                continue
            configmap = await kube.get("ConfigMap", self.namespace, cm["name"])
            self._counter += 1
            conf_dir = self.work_dir / f"conf-{cm['name']}-{self._counter}"
            conf_dir.mkdir()
            for key, text in ((configmap or {}).get("data") or {}).items():
                (conf_dir / key).write_text(text)
            # the container reads its configuration where the volume is mounted
            for key, value in list(env.items()):
                if value == mounts[volume["name"]]:
                    env[key] = str(conf_dir)
        return env

    async def _report(self, kube: KubeApi, deployment: str, realized: Realized, pod: PodProcess) -> None:
        code = pod.proc.poll()
        phase = "Running" if code is None else ("Succeeded" if code == 0 else "Failed")
        if phase == pod.reported:
            return
        state: dict[str, Any] = {"running": {"startedAt": _now()}} if code is None else {
            "terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": _now()}}
        status = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if code is None else "False"}],
                  "containerStatuses": [{"name": "main", "ready": code is None, "restartCount": 0, "state": state}]}
        try:
            await kube.merge_patch("Pod", self.namespace, pod.name, {"status": status}, subresource="status")
        except KubeApiError as e:
            if e.status != 404:
                raise
        pod.reported = phase
        if code is not None and realized.rest_port is not None and realized.pods[0] is pod:
            self._write_url(deployment, None)

    async def _remove(self, kube: KubeApi, name: str) -> None:
        realized = self.realized.pop(name)
        self._terminate(realized)
        if realized.rest_port is not None:
            self._write_url(name, None)
        for pod in realized.pods:
            await kube.delete("Pod", self.namespace, pod.name)

    def _terminate(self, realized: Realized) -> None:
        for pod in realized.pods:
            if pod.proc.poll() is None:
                try:
                    os.killpg(pod.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for pod in realized.pods:
            try:
                pod.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(pod.proc.pid, signal.SIGKILL)
                pod.proc.wait(10)

    def _write_url(self, service: str, url: str | None) -> None:
        urls = json.loads(self.url_map.read_text() or "{}")
        key = f"{self.namespace}/{service}"
        if url is None:
            urls.pop(key, None)
        else:
            urls[key] = url
        tmp = self.url_map.with_suffix(".tmp")
        tmp.write_text(json.dumps(urls))
        os.replace(tmp, self.url_map)  # the operator never reads half a file

    def logs(self) -> str:
        """The tail of every process log: for a failing test's message."""
        out = []
        for path in sorted(self.work_dir.glob("*.log")):
            out.append(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}")
        return "\n".join(out)


def _component(deployment: dict[str, Any]) -> str:
    return (deployment["metadata"].get("labels") or {}).get("app.kubernetes.io/component", "")


def _fingerprint(deployment: dict[str, Any]) -> str:
    spec = {"template": deployment["spec"]["template"], "replicas": deployment["spec"].get("replicas", 1)}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _pod_object(namespace: str, name: str, deployment: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    meta = deployment["metadata"]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(template["metadata"].get("labels") or {}),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                          "uid": meta["uid"], "controller": True}]},
        "spec": template["spec"],
        "status": {"phase": "Pending"},
    }
