"""A "process kubelet": realizes Deployments and Pods as local processes on loopback, as a cluster runs pods.

It plays the kubelet and the Deployment controller for the operator's integration tests and the
e2e harness, so a real JobManager and real TaskManagers run from exactly the pod templates the
operator built, and (with `bare_pods=True`) a batch FlinkJob's Spark driver from its driver Pod:

* each Deployment keeps `spec.replicas` pods; each pod is a Pod object (the template's labels,
  owned by its Deployment) and one process running the first container's `command`/`args`
  (`strom` as `python -m strom.cli`) in its own process group;
* the container's env is resolved as the kubelet does: `value`, `valueFrom.secretKeyRef` /
  `configMapKeyRef`, `envFrom` (`secretRef`, `configMapRef`, with `prefix`); ConfigMap volumes
  are written to a directory, and an env value naming the mount path points there. A missing
  Secret or ConfigMap (not `optional`) keeps the pod Pending in `CreateContainerConfigError`;
* a container that exits is restarted in the same pod (restartPolicy Always): the whole process
  group is killed first (a container dies with its children), `restartCount` goes up, and the
  pod waits in `CrashLoopBackOff` for a back-off that doubles from `restart_backoff_s` up to
  `max_restart_backoff_s` (Kubernetes: 10 s to 5 min), reset after a run of `BACKOFF_RESET_S`;
* replica changes add or remove pods (the newest go first) without touching the others; a
  template change replaces all pods (Recreate: the old ones are gone before new ones start);
  a deleted Pod object is replaced; a deleted Deployment takes its processes with it;
* Services are stable loopback addresses: the first time a JobManager Service is needed it gets
  free REST and RPC ports, which every JobManager pod behind it binds (`-D rest.port=...`) and a
  TaskManager's `--jobmanager <service>:6123` is rewritten to. A restarted or replaced JobManager
  is therefore found again at the same address, as through a Service. The REST URLs are written
  to a JSON map `"namespace/service" -> URL`, which the operator reads (`--jobmanager-url-map`)
  instead of resolving the Service;
* bare Pods (`bare_pods=True`): every Pod that no Deployment owns and whose first container has a
  `command` runs once, with the same command, env and ConfigMap-volume resolution, and its
  `restartPolicy` decides what follows an exit: Never ends the pod (phase Succeeded on exit 0,
  else Failed), OnFailure restarts it only after a non-zero exit, Always like a Deployment's pod.
  A Pod without a command would run its image's entry point; there are no images here, so such a
  Pod is left alone (a test that creates one plays its kubelet, as tests/operator's batch
  integration test does for driver pods: its kubelet is made without `bare_pods`). Deleting the
  Pod kills its container's process group. The ended container's `state.terminated` has exit
  code, reason and, under `terminationMessagePolicy: FallbackToLogsOnError` after a failure, the
  message Kubernetes takes from the log: its last 80 lines, at most their last 2048 bytes (the
  `terminationMessagePath` file is not read: a process has no container filesystem);
* a Spark driver of Kubernetes (`--spark-master k8s://...`, a batch FlinkJob's driver Pod) runs
  Spark in **local mode**: there is no container runtime for the executor pods Spark would create,
  so `--spark-master` is rewritten to `local[2]`, and the driver's network to loopback (`-D
  spark.driver.host/bindAddress=127.0.0.1`, free-chosen driver, block manager and UI ports,
  SPARK_LOCAL_IP), exactly as a TaskManager's `--jobmanager <service>:6123` is rewritten to a
  loopback address. Everything else of the pod is real: its command, args, env, mounted config;
* pod status reports phase (Pending until the container first ran, then Running; Succeeded or
  Failed once a container that is not restarted has ended), readiness, `restartCount`, `state`
  (running, waiting with its reason, or terminated) and `lastState.terminated` (exit code; reason
  `Completed`, `Error`, or `Killed` for SIGKILL); the Deployment's status reports replicas, ready
  and available replicas.

It polls the API (every `POLL_S`), in a thread with its own event loop. Not emulated: probes (a
running process is Ready), resource limits, RollingUpdate (the operator uses Recreate), init
containers and any container but the first.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from strom_operator.kube_api import KubeApi, KubeApiError

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.2
BACKOFF_RESET_S = 60.0  # a container that ran this long starts its back-off over (Kubernetes: 10 min)
TERMINATION_GRACE_S = 15.0  # Kubernetes' terminationGracePeriodSeconds default is 30 s
TERMINATION_LOG_LINES, TERMINATION_LOG_BYTES = 80, 2048  # the kubelet's FallbackToLogsOnError tail
LOCAL_SPARK_MASTER = "local[2]"
# A Spark driver's network on loopback: its pod would have an IP of its own, fixed ports and a Service
# name for executors to dial; here every port is free-chosen and nothing leaves 127.0.0.1.
SPARK_LOOPBACK = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                  "spark.driver.port": "0", "spark.driver.blockManager.port": "0", "spark.ui.port": "0"}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ContainerConfigError(Exception):
    """The container cannot be configured (a missing Secret or ConfigMap key): the pod stays Pending."""


@dataclass
class PodProcess:
    """One pod: its container's process, restarts and what was last reported of it."""

    name: str
    log_path: Path
    container: str = "main"  # the container's name, for its containerStatuses entry
    restart_policy: str = "Always"  # Always | OnFailure | Never (a Deployment's pods: Always)
    fallback_to_logs: bool = False  # terminationMessagePolicy FallbackToLogsOnError
    uid: str = ""  # a bare Pod's uid: a Pod deleted and created again under its name is another pod
    proc: subprocess.Popen[bytes] | None = None
    started_at: str = ""
    started_mono: float = 0.0
    restarts: int = 0
    backoff_s: float = 0.0
    next_start: float = 0.0  # monotonic time before which the container waits (back-off)
    last_exit: dict[str, Any] | None = None
    waiting: tuple[str, str] | None = ("ContainerCreating", "")
    reported: str = ""
    log_offset: int = 0  # where the current container's own output starts in log_path
    terminated: dict[str, Any] | None = None  # the container's end when it is not restarted: the pod ended

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Realized:
    """The pods of one Deployment as realized from one version of its template."""

    uid: str
    fingerprint: str
    component: str
    pods: list[PodProcess] = field(default_factory=list)
    reported: str = ""


@dataclass(frozen=True, slots=True)
class ServiceAddress:
    rest_port: int
    rpc_port: int

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"


class ProcessKubelet:
    def __init__(self, api_url: str, namespace: str, work_dir: Path, *, url_map: Path | None = None,
                 restart_backoff_s: float = 1.0, max_restart_backoff_s: float = 10.0,
                 bare_pods: bool = False) -> None:
        self.api_url = api_url
        self.namespace = namespace
        self.work_dir = work_dir
        self.url_map = url_map or work_dir / "jobmanager-urls.json"
        self.url_map.write_text("{}")
        self.restart_backoff_s = restart_backoff_s
        self.max_restart_backoff_s = max_restart_backoff_s
        self.realized: dict[str, Realized] = {}
        self.bare_pods = bare_pods
        self.bare: dict[str, PodProcess] = {}  # Pods no Deployment owns, by name
        self.services: dict[str, ServiceAddress] = {}
        self.errors: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-kubelet", daemon=True)
        self._counter = 0
        self._lock = threading.Lock()  # guards `realized` between the kubelet thread and test threads

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ProcessKubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        with self._lock:
            for name in list(self.realized):
                _terminate([p for p in self.realized.pop(name).pods])
            _terminate(list(self.bare.values()))
            self.bare.clear()

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

    # -- what tests ask --------------------------------------------------------------------------

    def pods_of(self, deployment: str) -> list[PodProcess]:
        with self._lock:
            realized = self.realized.get(deployment)
            return list(realized.pods) if realized is not None else []

    def pids_of(self, deployment: str) -> list[int]:
        """The process ids of the deployment's running containers (the process group leaders)."""
        return [pid for pod in self.pods_of(deployment) if (pid := pod.pid) is not None]

    def bare_pod(self, name: str) -> PodProcess | None:
        """The realization of a Pod no Deployment owns (bare_pods=True), while its Pod object exists."""
        with self._lock:
            return self.bare.get(name)

    # -- reconciliation of Deployments into processes --------------------------------------------

    async def _sync(self, kube: KubeApi) -> None:
        # Pods before Deployments: a Deployment deleted in between is then seen gone, never as one
        # whose pods vanished (which would start a replacement pod from the deleted template).
        pods = await kube.list("Pod", self.namespace)
        pod_names = {p["metadata"]["name"] for p in pods}
        deployments = {d["metadata"]["name"]: d for d in await kube.list("Deployment", self.namespace)}
        # Deleted Deployments, and replaced ones (Recreate: old pods gone before new ones start), all
        # terminated together: an upgrade replaces the JobManager and the TaskManagers at once.
        stale = [n for n, r in self.realized.items() if n not in deployments or r.uid != deployments[n]["metadata"][
            "uid"] or r.fingerprint != _fingerprint(deployments[n])]
        await self._remove_deployments(kube, stale)
        await self._forget_services(kube)
        for d in deployments.values():
            name = d["metadata"]["name"]
            current = self.realized.get(name)
            if current is None:
                current = Realized(d["metadata"]["uid"], _fingerprint(d), _component(d))
                with self._lock:
                    self.realized[name] = current
            await self._scale(kube, d, current, pod_names)
            for pod in list(current.pods):
                await self._run_container(kube, pod, d["spec"]["template"], component=current.component, owner=name)
                await self._report_pod(kube, pod)
            await self._report_deployment(kube, d, current)
        if self.bare_pods:
            await self._sync_bare_pods(kube, pods)

    async def _sync_bare_pods(self, kube: KubeApi, pods: list[dict[str, Any]]) -> None:
        """Run the Pods no Deployment owns, once each (their restartPolicy decides what follows an exit)."""
        wanted = {p["metadata"]["name"]: p for p in pods if _is_bare(p)}
        for name, pod in list(self.bare.items()):
            obj = wanted.get(name)
            if obj is None or obj["metadata"]["uid"] != pod.uid:
                _terminate([pod])  # the Pod object was deleted: its container goes with it
                with self._lock:
                    del self.bare[name]
        for name, obj in wanted.items():
            pod = self.bare.get(name)
            if pod is None:
                pod = _pod_process(name, self.work_dir, obj["spec"], uid=obj["metadata"]["uid"])
                with self._lock:
                    self.bare[name] = pod
            await self._run_container(kube, pod, obj, component=_component(obj), owner=name)
            await self._report_pod(kube, pod)

    async def _scale(self, kube: KubeApi, deployment: dict[str, Any], realized: Realized,
                     pod_names: set[str]) -> None:
        for pod in [p for p in realized.pods if p.reported and p.name not in pod_names]:
            # the Pod object was deleted (kubectl delete pod): its container goes, a new pod replaces it
            _terminate([pod])
            with self._lock:
                realized.pods.remove(pod)
        wanted = int(deployment["spec"].get("replicas", 1))
        while len(realized.pods) > wanted:
            pod = realized.pods[-1]
            _terminate([pod])
            with self._lock:
                realized.pods.pop()
            await self._delete_pod(kube, pod.name)
        while len(realized.pods) < wanted:
            self._counter += 1
            name = f"{deployment['metadata']['name']}-{self._counter:04d}"
            pod = _pod_process(name, self.work_dir, deployment["spec"]["template"]["spec"])
            await kube.create(_pod_object(self.namespace, name, deployment))
            with self._lock:
                realized.pods.append(pod)

    async def _run_container(self, kube: KubeApi, pod: PodProcess, source: dict[str, Any], *, component: str,
                             owner: str) -> None:
        """Start the container if it is not running and its back-off is over; note an exit. `source` holds
        the pod's spec (a Deployment's template or a bare Pod), `owner` names the JobManager Service."""
        if pod.terminated is not None:
            return  # the pod has ended: nothing restarts it
        if pod.proc is not None:
            code = pod.proc.poll()
            if code is None:
                return
            _kill_group(pod.proc.pid)  # what the container's children would not survive
            pod.proc = None
            end: dict[str, Any] = {"exitCode": code, "reason": _exit_reason(code), "startedAt": pod.started_at,
                                   "finishedAt": _now()}
            if code != 0 and pod.fallback_to_logs:
                end["message"] = log_tail(pod.log_path, pod.log_offset)
            if pod.restart_policy == "Never" or (pod.restart_policy == "OnFailure" and code == 0):
                pod.terminated = end
                return
            ran = time.monotonic() - pod.started_mono
            pod.backoff_s = self.restart_backoff_s if ran >= BACKOFF_RESET_S or not pod.backoff_s else min(
                pod.backoff_s * 2, self.max_restart_backoff_s)
            pod.next_start = time.monotonic() + pod.backoff_s
            pod.last_exit = end
            pod.restarts += 1
            pod.waiting = ("CrashLoopBackOff", f"back-off {pod.backoff_s:g}s restarting failed container")
            return
        if time.monotonic() < pod.next_start:
            return
        try:
            command, env = await self._container_command(kube, source, component=component, owner=owner)
        except ContainerConfigError as e:
            pod.waiting = ("CreateContainerConfigError", str(e))
            pod.next_start = time.monotonic() + self.restart_backoff_s
            return
        with open(pod.log_path, "ab") as log:
            log.write(f"--- container start {_now()} (restart {pod.restarts}): {' '.join(command)}\n".encode())
            log.flush()
            pod.log_offset = log.tell()
            pod.proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.work_dir)
        pod.started_at, pod.started_mono, pod.waiting = _now(), time.monotonic(), None

    async def _container_command(self, kube: KubeApi, source: dict[str, Any], *, component: str,
                                 owner: str) -> tuple[list[str], dict[str, str]]:
        container = source["spec"]["containers"][0]
        args = list(container.get("args") or [])
        if component == "taskmanager" and "--jobmanager" in args:
            i = args.index("--jobmanager")
            service = args[i + 1].split(":")[0]
            args[i + 1] = f"127.0.0.1:{self._service(service).rpc_port}"
            args[1:1] = ["-D", "metrics.reporter.prom.port=0", "-D", "heartbeat.interval=500",
                         "-D", "heartbeat.timeout=5000"]
        elif component == "jobmanager":
            address = self._service(owner)
            args[1:1] = ["-D", "rest.address=127.0.0.1", "-D", f"rest.port={address.rest_port}",
                         "-D", "jobmanager.rpc.address=127.0.0.1", "-D", f"jobmanager.rpc.port={address.rpc_port}",
                         "-D", "metrics.reporter.prom.port=0", "-D", "heartbeat.interval=500",
                         "-D", "heartbeat.timeout=5000"]
        spark_driver = _spark_on_kubernetes(args)
        if spark_driver:
            # No container runtime for executor pods: the driver's Spark runs in local mode, on loopback.
            args[args.index("--spark-master") + 1] = LOCAL_SPARK_MASTER
            args[1:1] = [item for key, value in SPARK_LOOPBACK.items() for item in ("-D", f"{key}={value}")]
        env = await self._env(kube, source, container)
        if spark_driver:
            env["SPARK_LOCAL_IP"] = "127.0.0.1"  # what Spark binds and advertises when no host is configured
        command = [sys.executable, "-m", "strom.cli"] if container.get("command") == ["strom"] else list(
            container.get("command") or [])
        return [*command, *args], env

    def _service(self, name: str) -> ServiceAddress:
        """The stable loopback address of a JobManager Service, allocated on first use."""
        address = self.services.get(name)
        if address is None:
            address = self.services[name] = ServiceAddress(free_port(), free_port())
            self._write_url(name, address.rest_url)
        return address

    async def _forget_services(self, kube: KubeApi) -> None:
        if not self.services:
            return
        alive = {s["metadata"]["name"] for s in await kube.list("Service", self.namespace)}
        for name in [n for n in self.services if n not in alive and n not in self.realized]:
            del self.services[name]
            self._write_url(name, None)

    async def _env(self, kube: KubeApi, template: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runtime-image"), str(ROOT / "operator"),
                                             env.get("PYTHONPATH", "")])
        for source in container.get("envFrom") or ():
            prefix = source.get("prefix", "")
            for kind, ref_key in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                ref = source.get(ref_key)
                if ref is not None:
                    data = await self._data(kube, kind, ref["name"], optional=bool(ref.get("optional")))
                    env.update({prefix + k: v for k, v in data.items()})
        for item in container.get("env") or ():
            if "value" in item:
                env[item["name"]] = str(item["value"])
                continue
            value_from = item.get("valueFrom") or {}
            for kind, ref_key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                ref = value_from.get(ref_key)
                if ref is None:
                    continue
                data = await self._data(kube, kind, ref["name"], optional=bool(ref.get("optional")))
                if ref["key"] in data:
                    env[item["name"]] = data[ref["key"]]
                elif not ref.get("optional"):
                    raise ContainerConfigError(f"couldn't find key {ref['key']} in {kind} "
                                               f"{self.namespace}/{ref['name']}")
        mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or ()}
        for volume in template["spec"].get("volumes") or ():
            cm = volume.get("configMap")
            if cm is None or volume["name"] not in mounts:
                continue
            data = await self._data(kube, "ConfigMap", cm["name"], optional=bool(cm.get("optional")))
            self._counter += 1
            conf_dir = self.work_dir / f"conf-{cm['name']}-{self._counter}"
            conf_dir.mkdir()
            for key, text in data.items():
                (conf_dir / key).write_text(text)
            # the container reads its configuration where the volume is mounted
            for key, value in list(env.items()):
                if value == mounts[volume["name"]]:
                    env[key] = str(conf_dir)
        return env

    async def _data(self, kube: KubeApi, kind: str, name: str, *, optional: bool) -> dict[str, str]:
        obj = await kube.get(kind, self.namespace, name)
        if obj is None:
            if optional:
                return {}
            raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
        if kind == "Secret":
            return {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()} | {
                k: str(v) for k, v in (obj.get("stringData") or {}).items()}
        return {k: str(v) for k, v in (obj.get("data") or {}).items()}

    # -- status ----------------------------------------------------------------------------------

    async def _report_pod(self, kube: KubeApi, pod: PodProcess) -> None:
        running = pod.running
        if pod.terminated is not None:
            state: dict[str, Any] = {"terminated": pod.terminated}
        elif running:
            state = {"running": {"startedAt": pod.started_at}}
        else:
            reason, message = pod.waiting or ("ContainerCreating", "")
            state = {"waiting": {"reason": reason, "message": message}}
        container: dict[str, Any] = {"name": pod.container, "ready": running, "restartCount": pod.restarts,
                                     "started": running, "state": state}
        if pod.last_exit is not None:
            container["lastState"] = {"terminated": pod.last_exit}
        if pod.terminated is not None:  # not restarted (Never, or OnFailure after exit 0): the pod has ended
            phase = "Succeeded" if pod.terminated["exitCode"] == 0 else "Failed"
        else:  # a pod stays Running between restarts once its container has run
            phase = "Running" if running or pod.restarts else "Pending"
        status = {"phase": phase, "hostIP": "127.0.0.1", "podIP": "127.0.0.1",
                  "conditions": [{"type": "PodScheduled", "status": "True"},
                                 {"type": "Ready", "status": "True" if running else "False"},
                                 {"type": "ContainersReady", "status": "True" if running else "False"}],
                  "containerStatuses": [container]}
        digest = json.dumps(status, sort_keys=True)
        if digest == pod.reported:
            return
        if pod.started_at:
            status["startTime"] = pod.started_at
        try:
            await kube.merge_patch("Pod", self.namespace, pod.name, {"status": status}, subresource="status")
        except KubeApiError as e:
            if e.status != 404:
                raise
        pod.reported = digest

    async def _report_deployment(self, kube: KubeApi, deployment: dict[str, Any], realized: Realized) -> None:
        ready = sum(1 for p in realized.pods if p.running)
        status = {"observedGeneration": deployment["metadata"].get("generation", 1), "replicas": len(realized.pods),
                  "updatedReplicas": len(realized.pods), "readyReplicas": ready, "availableReplicas": ready,
                  "unavailableReplicas": len(realized.pods) - ready}
        digest = json.dumps(status, sort_keys=True)
        if digest == realized.reported:
            return
        try:
            await kube.merge_patch("Deployment", self.namespace, deployment["metadata"]["name"], {"status": status},
                                   subresource="status")
        except KubeApiError as e:
            if e.status != 404:
                raise
        realized.reported = digest

    # -- removal ---------------------------------------------------------------------------------

    async def _remove_deployments(self, kube: KubeApi, names: list[str]) -> None:
        if not names:
            return
        with self._lock:
            pods = [pod for name in names for pod in self.realized.pop(name).pods]
        _terminate(pods)
        for pod in pods:
            await self._delete_pod(kube, pod.name)

    async def _delete_pod(self, kube: KubeApi, name: str) -> None:
        try:
            await kube.delete("Pod", self.namespace, name)
        except KubeApiError as e:
            if e.status != 404:
                raise

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

    def logs(self, *, tail: int = 2000) -> str:
        """The tail of every process log: for a failing test's message."""
        out = []
        for path in sorted(self.work_dir.glob("*.log")):
            out.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        if self.errors:
            out.append("--- kubelet errors\n" + "\n".join(self.errors[-20:]))
        return "\n".join(out)


def log_tail(path: Path, offset: int) -> str:
    """A failed container's termination message under FallbackToLogsOnError, as the kubelet takes it:
    the last TERMINATION_LOG_LINES lines of its log, of those the last TERMINATION_LOG_BYTES bytes."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    lines = data.splitlines(keepends=True)[-TERMINATION_LOG_LINES:]
    return b"".join(lines)[-TERMINATION_LOG_BYTES:].decode(errors="replace")


def _pod_process(name: str, work_dir: Path, spec: dict[str, Any], *, uid: str = "") -> PodProcess:
    container = spec["containers"][0]
    return PodProcess(name, work_dir / f"{name}.log", container=container.get("name", "main"),
                      restart_policy=spec.get("restartPolicy") or "Always",
                      fallback_to_logs=container.get("terminationMessagePolicy") == "FallbackToLogsOnError", uid=uid)


def _is_bare(pod: dict[str, Any]) -> bool:
    """A Pod no Deployment owns, whose container has a command to run (without one it would run its
    image's entry point, and there are no images here: whoever created it plays its kubelet)."""
    meta = pod["metadata"]
    if meta.get("deletionTimestamp") or any(o.get("kind") in ("Deployment", "ReplicaSet")
                                            for o in meta.get("ownerReferences") or ()):
        return False
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return bool(containers[0].get("command"))


def _spark_on_kubernetes(args: list[str]) -> bool:
    """A Spark driver of Kubernetes' (`--spark-master k8s://...`), which the kubelet runs in local mode."""
    if "--spark-master" not in args:
        return False
    i = args.index("--spark-master")
    return i + 1 < len(args) and args[i + 1].startswith("k8s://")


def _exit_reason(code: int) -> str:
    if code == 0:
        return "Completed"
    if code == -signal.SIGKILL or code == 128 + signal.SIGKILL:
        return "Killed"
    return "Error"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate(pods: list[PodProcess]) -> None:
    """SIGTERM each container's process group, wait the grace period, then SIGKILL what is left."""
    procs = [p.proc for p in pods if p.proc is not None]
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + TERMINATION_GRACE_S
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        _kill_group(proc.pid)
        if proc.poll() is None:
            proc.wait(10)
    for pod in pods:
        pod.proc = None


def _component(obj: dict[str, Any]) -> str:
    return (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/component", "")


def _fingerprint(deployment: dict[str, Any]) -> str:
    """The pod template's digest: a change replaces the pods (replicas do not)."""
    return hashlib.sha256(json.dumps(deployment["spec"]["template"], sort_keys=True).encode()).hexdigest()


def _pod_object(namespace: str, name: str, deployment: dict[str, Any]) -> dict[str, Any]:
    meta = deployment["metadata"]
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(template["metadata"].get("labels") or {}),
                     "annotations": dict(template["metadata"].get("annotations") or {}),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
                                          "uid": meta["uid"], "controller": True}]},
        "spec": template["spec"],
        "status": {"phase": "Pending"},
    }
