"""A "process kubelet": realizes Deployments and Pods as local processes, each pod in a network of its own.

It plays the kubelet, the Deployment controller, the endpoints controller and cluster DNS for the
operator's integration tests and the e2e harness, so a real JobManager and real TaskManagers run
from exactly the pod templates the operator built, and (with `bare_pods=True`) a batch FlinkJob's
Spark driver from its driver Pod:

* **every pod has its own network**: a Linux network namespace with its own IP on one bridge
  (`tests/netns.py`: a `TestNetwork` in 198.18.0.0/15 that the kubelet creates at `start` and
  closes at `stop`, or one handed to it). The container runs through `ip netns exec` in it: same
  filesystem, own network. `status.podIP` is that IP (kept across container restarts, as a pod's
  sandbox keeps it), `status.hostIP` the bridge's gateway, which is this machine: the machine
  reaches every pod IP and the pods reach servers the machine binds on the gateway (S3 in the
  tests). Pods have their own ports, so fixed ports (8081, 6123, 9249) never collide. The
  machine's hostname (a pod's processes share it: there is no UTS namespace) resolves to the
  pod's own IP inside the pod, as a pod's hostname does;
* **what the pod template says is what runs**: no address or port is rewritten. The container's
  `command`/`args` (`strom` runs as `python -m strom.cli`) get Kubernetes' `$(VAR)` expansion from
  the container's env (`$$` escapes, unknown references stay as written: container_env.py);
* each Deployment keeps `spec.replicas` pods; each pod is a Pod object (the template's labels,
  owned by its Deployment) and one process running the first container in its own process group;
* the container's env is resolved as the kubelet does: `value` (with `$(VAR)` of the entries
  before it), `valueFrom.secretKeyRef` / `configMapKeyRef`, the downward API `valueFrom.fieldRef`
  (status.podIP, status.hostIP, metadata.name, metadata.namespace, metadata.uid,
  metadata.labels['k'], spec.nodeName, ...), `envFrom` (`secretRef`, `configMapRef`, with
  `prefix`); HOSTNAME is the pod's name. ConfigMap and Secret volumes are written to a directory
  each (their `items` and `defaultMode` honoured), and an env value naming a path under a mount
  path points there, as do the files of a ConfigMap volume (config.yaml naming the TLS Secret's
  files under /opt/strom/tls: there is no container filesystem to mount them at). emptyDir volumes
  are the machine's own directories (/tmp), and securityContext is not enforced: the processes run
  as this test's user. A missing Secret or ConfigMap (not `optional`) keeps the pod Pending in
  `CreateContainerConfigError`;
* **Services resolve to the pods they select**: a Service's endpoints are the pods its
  `spec.selector` matches that are Running and Ready (or only Running under
  `publishNotReadyAddresses`). Every pod's hosts file maps `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`
  and `<svc>.<ns>.svc.cluster.local` to those pod IPs (rewritten in place when they change, so
  running processes see it, as they see DNS change). This is headless resolution: there is no
  ClusterIP and no kube-proxy, a client dials the pod IP on the port it names, which for the
  operator's Services equals the targetPort. A Service without endpoints resolves to nothing (the
  name is unknown), so a dependent process waits and retries until the pod behind it is ready;
* **readiness**: the container's `readinessProbe` (`httpGet` path/port, the port a number or a
  name from `ports`; `tcpSocket`) runs from this machine against the pod IP every
  `periodSeconds`, capped at `max_probe_period_s` (1 s) as is `initialDelaySeconds`, with
  `timeoutSeconds`, `failureThreshold` and `successThreshold`; a container without one is ready
  while it runs (`exec`/`grpc` probes are not run: such a pod too). Readiness is reported in the
  pod's Ready/ContainersReady conditions and `containerStatuses[].ready`, and as the Deployment's
  ready and available replicas. Liveness and startup probes are not run;
* **the operator**, a process on the machine, reaches a JobManager's REST API through a JSON map
  `"namespace/service" -> "http://<pod IP>:<port>"` (`--jobmanager-url-map`): every Service with a
  port named `rest` maps to its first ready pod's IP and that port's targetPort, and leaves the
  map while it has no ready pod;
* a container that exits is restarted in the same pod (restartPolicy Always): the whole process
  group is killed first (a container dies with its children), `restartCount` goes up, and the
  pod waits in `CrashLoopBackOff` for a back-off that doubles from `restart_backoff_s` up to
  `max_restart_backoff_s` (Kubernetes: 10 s to 5 min), reset after a run of `BACKOFF_RESET_S`;
* replica changes add or remove pods (the newest go first) without touching the others; a
  template change replaces all pods (Recreate: the old ones are gone before new ones start);
  a deleted Pod object is replaced; a deleted Deployment takes its processes with it;
* a pod ends as Kubernetes ends one (graceful termination): SIGTERM to its container's process
  group, up to `terminationGracePeriodSeconds` (default 30; a deletion's `deletionGracePeriodSeconds`
  wins) for the processes to exit, then SIGKILL to the group; its Pod object goes only after every
  process of the group is gone (the emulator marks a deleted Pod, k8s_emulator.py, and the kubelet
  deletes it with grace period 0 once its processes ended, as a real server and kubelet do). While a
  pod terminates, `pids_of` still lists it;
* bare Pods (`bare_pods=True`): every Pod that no Deployment owns and whose first container has a
  `command` runs once, with the same command, env and ConfigMap-volume resolution and a network
  of its own, and its `restartPolicy` decides what follows an exit: Never ends the pod (phase
  Succeeded on exit 0, else Failed), OnFailure restarts it only after a non-zero exit, Always like
  a Deployment's pod. A Pod without a command would run its image's entry point; there are no
  images here, so such a Pod is left alone (a test that creates one plays its kubelet, as
  tests/operator's batch integration test does for driver pods: its kubelet is made without
  `bare_pods`). Deleting the Pod kills its container's process group. The ended container's
  `state.terminated` has exit code, reason and, under `terminationMessagePolicy:
  FallbackToLogsOnError` after a failure, the message Kubernetes takes from the log: its last 80
  lines, at most their last 2048 bytes (the `terminationMessagePath` file is not read: a process
  has no container filesystem);
* a Spark driver of Kubernetes (`--spark-master k8s://...`, a batch FlinkJob's driver Pod) runs
  Spark in **local mode**: there is no container runtime for the executor pods Spark would create,
  so `--spark-master` is rewritten to `local[2]`, the one rewrite left. Its executors are then
  threads of the driver, so the driver advertises and binds its pod IP (`-D spark.driver.host` and
  `spark.driver.bindAddress` = pod IP, SPARK_LOCAL_IP) rather than the headless Service name its
  executor pods would dial; its ports are the ones the operator set (the pod's own). Everything
  else of the pod is real: its command, args, env, mounted config, network;
* pod status reports phase (Pending until the container first ran, then Running; Succeeded or
  Failed once a container that is not restarted has ended), podIP/hostIP, readiness,
  `restartCount`, `state` (running, waiting with its reason, or terminated) and
  `lastState.terminated` (exit code; reason `Completed`, `Error`, or `Killed` for SIGKILL); the
  Deployment's status reports replicas, ready and available replicas.

**Node mode** (`controller_pods=True`), for a real API server whose kube-controller-manager runs
the Deployment and ReplicaSet controllers but which has no node: the kubelet creates no Pod and
writes no Deployment status. It plays the node (and the scheduler) instead: every Pod of its
namespace bound to no node (or to `NODE_NAME`) whose first container has a `command`, owned by a
ReplicaSet (or any such Pod with `bare_pods`, as above), is bound to
`NODE_NAME` (the `binding` subresource, as a scheduler does) and runs as above with its
`restartPolicy`, its status reported through `pods/status`; the ReplicaSet and Deployment
controllers count it from there. A Pod bound to the node is deleted gracefully by the server
(`deletionTimestamp`): the kubelet ends its container and then removes the object (grace period
0), as a kubelet confirms a deletion; so a Recreate rollout waits for the old pods' processes to
end. Pods that had ended (Succeeded or Failed) before the kubelet saw them are left alone. Its
client comes from `api` (a factory called in the kubelet's own loop), e.g. with KUBECONFIG's
credentials and CA (`KubeApi.from_connection_info` with kopf's login).

It polls the API (every `POLL_S`), in a thread with its own event loop. Needs root for the
network namespaces (`tests.netns.unavailable_reason()` says why not; the fixtures skip with it).
Not emulated: resource limits, RollingUpdate (the operator uses Recreate), init containers and
any container but the first, ClusterIP/NodePort addressing, Service environment variables.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from strom_operator.clients.kube_api import KubeApi, KubeApiError

from tests.netns import TestHost, TestNetwork
from tests.operator.container_env import ContainerConfigError, PodFields, expand_references, field_value
from tests.operator.pod_network import container_ports, hosts_entries, probe, probe_kind, selects, target_port

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.2
BACKOFF_RESET_S = 60.0  # a container that ran this long starts its back-off over (Kubernetes: 10 min)
DEFAULT_GRACE_S = 30.0  # Kubernetes' default terminationGracePeriodSeconds
GROUP_EXIT_WAIT_S = 10.0  # after SIGKILL: how long until the group's last process is gone (reaped)
TERMINATION_LOG_LINES, TERMINATION_LOG_BYTES = 80, 2048  # the kubelet's FallbackToLogsOnError tail
LOCAL_SPARK_MASTER = "local[2]"
NODE_NAME = "process-kubelet"  # spec.nodeName of the pods it runs
REST_PORT_NAME = "rest"  # a Service port of this name goes into the operator's URL map

__all__ = ["ROOT", "ContainerConfigError", "PodProcess", "ProcessKubelet", "free_port", "log_tail"]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rewrite_paths(text: str, local: Mapping[str, str]) -> str:
    """`text` with each mount path (followed by '/' or its end) replaced by the directory standing in for it."""
    for mount, directory in sorted(local.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(re.escape(mount.rstrip("/")) + r"(?=/|$|\s|['\"])", lambda _, d=directory: d, text)
    return text


@dataclass
class PodProcess:
    """One pod: its network, its container's process, restarts, readiness and what was last reported."""

    name: str
    log_path: Path
    container: str = "main"  # the container's name, for its containerStatuses entry
    restart_policy: str = "Always"  # Always | OnFailure | Never (a Deployment's pods: Always)
    grace_s: float = DEFAULT_GRACE_S  # terminationGracePeriodSeconds (a deletion's own period replaces it)
    fallback_to_logs: bool = False  # terminationMessagePolicy FallbackToLogsOnError
    uid: str = ""  # a bare Pod's uid: a Pod deleted and created again under its name is another pod
    owner: str = ""  # node mode: the Deployment whose ReplicaSet owns the Pod
    labels: dict[str, str] = field(default_factory=dict)  # what Service selectors match
    ports: dict[str, int] = field(default_factory=dict)  # the container's named ports
    readiness_probe: dict[str, Any] | None = None
    host: TestHost | None = None  # the pod's network namespace and IP
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
    # readiness probe state of the running container
    probe_ready: bool = False
    probe_successes: int = 0
    probe_failures: int = 0
    next_probe: float = 0.0
    probing: bool = False
    names_written: dict[str, list[str]] | None = None  # the Service names last written to its hosts file

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def ready(self) -> bool:
        """Running, and its readiness probe (if it has one) passed as often as successThreshold asks."""
        return self.running and (self.readiness_probe is None or self.probe_ready)

    @property
    def ip(self) -> str:
        return self.host.ip if self.host is not None else ""


@dataclass
class Realized:
    """The pods of one Deployment as realized from one version of its template."""

    uid: str
    fingerprint: str
    pods: list[PodProcess] = field(default_factory=list)
    reported: str = ""


class ProcessKubelet:
    def __init__(self, api_url: str, namespace: str, work_dir: Path, *, url_map: Path | None = None,
                 network: TestNetwork | None = None, restart_backoff_s: float = 1.0,
                 max_restart_backoff_s: float = 10.0, max_probe_period_s: float = 1.0,
                 bare_pods: bool = False, controller_pods: bool = False,
                 api: Callable[[], KubeApi] | None = None) -> None:
        self.api_url = api_url
        self._make_api = api or (lambda: KubeApi(api_url))  # called in the kubelet's loop (its own session)
        self.controller_pods = controller_pods  # node mode: the server's controllers create the Pods
        self.namespace = namespace
        self.work_dir = work_dir
        self.url_map = url_map or work_dir / "jobmanager-urls.json"
        self.url_map.write_text("{}")
        self.network = network  # None: made at start, closed at stop
        self._owns_network = network is None
        self.restart_backoff_s = restart_backoff_s
        self.max_restart_backoff_s = max_restart_backoff_s
        self.max_probe_period_s = max_probe_period_s
        self.realized: dict[str, Realized] = {}
        self.bare_pods = bare_pods
        self.bare: dict[str, PodProcess] = {}  # Pods no Deployment owns, by name
        self.terminating: list[PodProcess] = []  # pods whose processes are being ended (still listed by pids_of)
        self.urls: dict[str, str] = {}  # "namespace/service" -> REST URL, as written to url_map
        self.names: dict[str, list[str]] = {}  # pod IP -> Service names, as in every pod's hosts file
        self.errors: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-kubelet", daemon=True)
        self._counter = 0
        self._lock = threading.Lock()  # guards `realized` and `bare` between the kubelet thread and test threads
        self._probes: set[asyncio.Task[None]] = set()
        self._hostname = socket.gethostname()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ProcessKubelet:
        if self.network is None:
            self.network = TestNetwork.create()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        with self._lock:
            pods = [p for name in list(self.realized) for p in self.realized.pop(name).pods]
            pods += list(self.bare.values())
            self.bare.clear()
        self._discard(pods)  # processes first: a namespace goes only once nothing runs in it
        if self._owns_network and self.network is not None:
            self.network.close()

    @property
    def gateway(self) -> str:
        """This machine's address on the pods' network: where pods reach servers on the machine."""
        assert self.network is not None, "the kubelet's network exists from start() on"
        return self.network.gateway

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        kube = self._make_api()
        try:
            while not self._stop.is_set():
                try:
                    await self._sync(kube)
                except Exception as e:  # noqa: BLE001 - recorded for the test to show; the loop goes on
                    self.errors.append(f"{type(e).__name__}: {e}")
                await asyncio.sleep(POLL_S)
        finally:
            for task in list(self._probes):  # probes in flight end with the kubelet
                task.cancel()
            await asyncio.gather(*self._probes, return_exceptions=True)
            await kube.close()

    # -- what tests ask --------------------------------------------------------------------------

    def pods_of(self, deployment: str) -> list[PodProcess]:
        with self._lock:
            realized = self.realized.get(deployment)
            pods = list(realized.pods) if realized is not None else []
            owned = [*self.bare.values(), *self.terminating]
            return pods + [p for p in owned if p.owner == deployment and p.owner and p not in pods]

    def pids_of(self, deployment: str) -> list[int]:
        """The process ids of the deployment's running containers (the process group leaders)."""
        return [pid for pod in self.pods_of(deployment) if (pid := pod.pid) is not None]

    def bare_pod(self, name: str) -> PodProcess | None:
        """The realization of a Pod no Deployment owns (bare_pods=True), while its Pod object exists."""
        with self._lock:
            return self.bare.get(name)

    def pod(self, name: str) -> PodProcess | None:
        """Any pod the kubelet runs, by its Pod name."""
        with self._lock:
            return next((p for p in self._all_pods() if p.name == name), None)

    def rest_url(self, service: str) -> str | None:
        """The REST URL the operator is given for a Service of the kubelet's namespace (a ready pod's)."""
        return self.urls.get(f"{self.namespace}/{service}")

    def _all_pods(self) -> list[PodProcess]:
        return [p for r in self.realized.values() for p in r.pods] + list(self.bare.values())

    # -- reconciliation of Deployments into processes --------------------------------------------

    async def _sync(self, kube: KubeApi) -> None:
        if self.controller_pods:
            await self._sync_node(kube)
            return
        # Pods before Deployments: a Deployment deleted in between is then seen gone, never as one
        # whose pods vanished (which would start a replacement pod from the deleted template).
        pods = await kube.list("Pod", self.namespace)
        # a Pod being deleted (deletionTimestamp) counts as gone: its processes end, then its object goes
        marked = {p["metadata"]["name"]: p for p in pods if p["metadata"].get("deletionTimestamp")}
        pod_names = {p["metadata"]["name"] for p in pods} - set(marked)
        self._take_deletion_grace(marked)
        deployments = {d["metadata"]["name"]: d for d in await kube.list("Deployment", self.namespace)}
        services = await kube.list("Service", self.namespace)
        # Deleted Deployments, and replaced ones (Recreate: old pods gone before new ones start), all
        # terminated together: an upgrade replaces the JobManager and the TaskManagers at once.
        stale = [n for n, r in self.realized.items() if n not in deployments or r.uid != deployments[n]["metadata"][
            "uid"] or r.fingerprint != _fingerprint(deployments[n])]
        await self._remove_deployments(kube, stale)
        for d in deployments.values():
            name = d["metadata"]["name"]
            current = self.realized.get(name)
            if current is None:
                current = Realized(d["metadata"]["uid"], _fingerprint(d))
                with self._lock:
                    self.realized[name] = current
            await self._scale(kube, d, current, pod_names)
            for pod in list(current.pods):
                await self._run_container(kube, pod, d["spec"]["template"])
                self._schedule_probe(pod)
        if self.bare_pods:
            await self._sync_bare_pods(kube, pods)
        self._resolve_services(services)
        for d in deployments.values():
            realized = self.realized[d["metadata"]["name"]]
            for pod in list(realized.pods):
                await self._report_pod(kube, pod)
            await self._report_deployment(kube, d, realized)
        for pod in list(self.bare.values()):
            await self._report_pod(kube, pod)
        running = {p.name for p in self._all_pods()}
        for name, obj in marked.items():
            if name not in running:  # its processes have ended (or never ran here): the deletion completes
                await self._confirm_deletion(kube, obj)

    def _take_deletion_grace(self, marked: dict[str, dict[str, Any]]) -> None:
        """A deletion's own grace period (deletionGracePeriodSeconds) for the pods it ends."""
        with self._lock:
            for pod in self._all_pods():
                obj = marked.get(pod.name)
                if obj is not None and obj["metadata"].get("deletionGracePeriodSeconds") is not None:
                    pod.grace_s = float(obj["metadata"]["deletionGracePeriodSeconds"])

    async def _sync_bare_pods(self, kube: KubeApi, pods: list[dict[str, Any]]) -> None:
        """Run the Pods no Deployment owns, once each (their restartPolicy decides what follows an exit)."""
        wanted = {p["metadata"]["name"]: p for p in pods if _is_bare(p)}
        for name, pod in list(self.bare.items()):
            obj = wanted.get(name)
            if obj is None or obj["metadata"]["uid"] != pod.uid:
                self._discard([pod])  # the Pod object was deleted: its container goes with it
                with self._lock:
                    del self.bare[name]
        for name, obj in wanted.items():
            pod = self.bare.get(name)
            if pod is None:
                pod = self._new_pod(name, obj["spec"], obj["metadata"].get("labels") or {},
                                    uid=obj["metadata"]["uid"])
                with self._lock:
                    self.bare[name] = pod
            await self._run_container(kube, pod, obj)
            self._schedule_probe(pod)

    async def _sync_node(self, kube: KubeApi) -> None:
        """Node mode: run the Pods the server's controllers made (bound here), end those being deleted."""
        pods = await kube.list("Pod", self.namespace)
        services = await kube.list("Service", self.namespace)
        replicasets = await kube.request("GET", f"/apis/apps/v1/namespaces/{self.namespace}/replicasets")
        deployment_of = {rs["metadata"]["name"]: _owner(rs, "Deployment") for rs in replicasets.get("items") or ()}
        ours = {p["metadata"]["name"]: p for p in pods if _runs_here(p, bare_pods=self.bare_pods)}
        self._take_deletion_grace({n: p for n, p in ours.items() if p["metadata"].get("deletionTimestamp")})
        for name, pod in list(self.bare.items()):
            obj = ours.get(name)
            if obj is None or obj["metadata"]["uid"] != pod.uid or obj["metadata"].get("deletionTimestamp"):
                self._discard([pod])  # deleted (or being deleted): its container ends first
                with self._lock:
                    del self.bare[name]
        for name, obj in ours.items():
            meta = obj["metadata"]
            if meta.get("deletionTimestamp"):
                await self._confirm_deletion(kube, obj)  # the container has ended (or never ran here)
                continue
            pod = self.bare.get(name)
            if pod is None:
                if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue  # it ended before this kubelet saw it: nothing runs it again
                if not (obj.get("spec") or {}).get("nodeName") and not await self._bind(kube, name):
                    continue
                pod = self._new_pod(name, obj["spec"], meta.get("labels") or {}, uid=meta["uid"])
                pod.owner = deployment_of.get(_owner(obj, "ReplicaSet"), "")
                with self._lock:
                    self.bare[name] = pod
            await self._run_container(kube, pod, obj)
            self._schedule_probe(pod)
        self._resolve_services(services)
        for pod in list(self.bare.values()):
            await self._report_pod(kube, pod)

    async def _bind(self, kube: KubeApi, name: str) -> bool:
        """Schedule the Pod to this node, as the scheduler would; False when someone else bound it first."""
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": self.namespace},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": NODE_NAME}}
        try:
            await kube.request("POST", f"/api/v1/namespaces/{self.namespace}/pods/{name}/binding", body=binding)
        except KubeApiError as e:
            if e.status in (404, 409):  # gone, or bound meanwhile
                return False
            raise
        return True

    async def _confirm_deletion(self, kube: KubeApi, obj: dict[str, Any]) -> None:
        """The kubelet's part of a graceful deletion: the container has ended, the object goes now."""
        meta = obj["metadata"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": meta["uid"]}}
        try:
            await kube.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{meta['name']}", body=body)
        except KubeApiError as e:
            if e.status not in (404, 409):  # gone, or another Pod of that name now
                raise

    async def _scale(self, kube: KubeApi, deployment: dict[str, Any], realized: Realized,
                     pod_names: set[str]) -> None:
        for pod in [p for p in realized.pods if p.reported and p.name not in pod_names]:
            # the Pod object was deleted (kubectl delete pod): its container goes, a new pod replaces it
            self._discard([pod])
            with self._lock:
                realized.pods.remove(pod)
        wanted = int(deployment["spec"].get("replicas", 1))
        while len(realized.pods) > wanted:
            pod = realized.pods[-1]
            self._discard([pod])
            with self._lock:
                realized.pods.pop()
            await self._delete_pod(kube, pod.name)
        template = deployment["spec"]["template"]
        while len(realized.pods) < wanted:
            self._counter += 1
            name = f"{deployment['metadata']['name']}-{self._counter:04d}"
            pod = self._new_pod(name, template["spec"], template["metadata"].get("labels") or {})
            pod.owner = deployment["metadata"]["name"]
            try:
                created = await kube.create(_pod_object(self.namespace, name, deployment))
            except BaseException:
                self._discard([pod])
                raise
            pod.uid = str((created or {}).get("metadata", {}).get("uid", ""))
            with self._lock:
                realized.pods.append(pod)

    def _new_pod(self, name: str, spec: dict[str, Any], labels: dict[str, str], *, uid: str = "") -> PodProcess:
        """A pod and its network: a namespace of its own, its hosts file naming the Services as they are."""
        assert self.network is not None
        container = spec["containers"][0]
        pod = PodProcess(name, self.work_dir / f"{name}.log", container=container.get("name", "main"),
                         restart_policy=spec.get("restartPolicy") or "Always",
                         grace_s=float(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_S)),
                         fallback_to_logs=container.get("terminationMessagePolicy") == "FallbackToLogsOnError",
                         uid=uid, labels=dict(labels), ports=container_ports(container),
                         readiness_probe=container.get("readinessProbe"))
        pod.host = self.network.add_host(name)
        self._write_names(pod)
        return pod

    async def _run_container(self, kube: KubeApi, pod: PodProcess, source: dict[str, Any]) -> None:
        """Start the container if it is not running and its back-off is over; note an exit. `source` holds
        the pod's spec (a Deployment's template or a bare Pod)."""
        if pod.terminated is not None:
            return  # the pod has ended: nothing restarts it
        if pod.proc is not None:
            code = pod.proc.poll()
            if code is None:
                return
            _kill_group(pod.proc.pid)  # what the container's children would not survive
            pod.proc = None
            pod.probe_ready = False
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
            argv, env = await self._container_command(kube, source, pod)
        except ContainerConfigError as e:
            pod.waiting = ("CreateContainerConfigError", str(e))
            pod.next_start = time.monotonic() + self.restart_backoff_s
            return
        assert pod.host is not None
        with open(pod.log_path, "ab") as log:
            log.write(f"--- container start {_now()} (restart {pod.restarts}, pod IP {pod.ip}): "
                      f"{' '.join(argv)}\n".encode())
            log.flush()
            pod.log_offset = log.tell()
            # `ip netns exec` execs the command: the pid is the container's, its network the pod's
            pod.proc = subprocess.Popen(pod.host.command(argv), env=env, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.work_dir)
        pod.started_at, pod.started_mono, pod.waiting = _now(), time.monotonic(), None
        pod.probe_ready, pod.probe_successes, pod.probe_failures, pod.probing = False, 0, 0, False
        if pod.readiness_probe is not None:
            delay = float(pod.readiness_probe.get("initialDelaySeconds", 0))
            pod.next_probe = pod.started_mono + min(delay, self.max_probe_period_s)

    async def _container_command(self, kube: KubeApi, source: dict[str, Any],
                                 pod: PodProcess) -> tuple[list[str], dict[str, str]]:
        """The container's argv and environment: its command and args with `$(VAR)` expanded from
        its env, exactly as written otherwise (a Spark driver of Kubernetes aside, see the docstring)."""
        container = source["spec"]["containers"][0]
        env, defined = await self._env(kube, source, container, pod)
        command = [expand_references(str(c), defined) for c in container.get("command") or ()]
        args = [expand_references(str(a), defined) for a in container.get("args") or ()]
        if _spark_on_kubernetes(args):
            # No container runtime for executor pods: the driver's Spark runs in local mode, its
            # executors threads of the driver, which advertises and binds its own pod IP.
            args[args.index("--spark-master") + 1] = LOCAL_SPARK_MASTER
            args[1:1] = ["-D", f"spark.driver.host={pod.ip}", "-D", f"spark.driver.bindAddress={pod.ip}"]
            env["SPARK_LOCAL_IP"] = pod.ip  # what Spark binds when nothing else says
        if command == ["strom"]:  # the image's entry point
            command = [sys.executable, "-m", "strom.cli"]
        return [*command, *args], env

    async def _env(self, kube: KubeApi, template: dict[str, Any], container: dict[str, Any],
                   pod: PodProcess) -> tuple[dict[str, str], dict[str, str]]:
        """The process environment, and the container's own variables (what `$(VAR)` may name)."""
        defined: dict[str, str] = {}
        for source in container.get("envFrom") or ():
            prefix = source.get("prefix", "")
            for kind, ref_key in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                ref = source.get(ref_key)
                if ref is not None:
                    data = await self._data(kube, kind, ref["name"], optional=bool(ref.get("optional")))
                    defined.update({prefix + k: v for k, v in data.items()})
        fields = self._fields(template, pod)
        for item in container.get("env") or ():
            if "value" in item:
                defined[item["name"]] = expand_references(str(item["value"]), defined)
                continue
            value_from = item.get("valueFrom") or {}
            if "fieldRef" in value_from:
                defined[item["name"]] = field_value(value_from["fieldRef"]["fieldPath"], fields)
                continue
            for kind, ref_key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                ref = value_from.get(ref_key)
                if ref is None:
                    continue
                data = await self._data(kube, kind, ref["name"], optional=bool(ref.get("optional")))
                if ref["key"] in data:
                    defined[item["name"]] = data[ref["key"]]
                elif not ref.get("optional"):
                    raise ContainerConfigError(f"couldn't find key {ref['key']} in {kind} "
                                               f"{self.namespace}/{ref['name']}")
        mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or ()}
        volumes = [v for v in template["spec"].get("volumes") or () if v["name"] in mounts]
        # Secret volumes first: a ConfigMap's files may name paths in them (the TLS keys in config.yaml).
        local: dict[str, str] = {}  # mount path -> the directory standing in for it
        for volume in volumes:
            secret = volume.get("secret")
            if secret is not None:
                data = await self._data(kube, "Secret", secret["secretName"], optional=bool(secret.get("optional")))
                local[mounts[volume["name"]]] = str(self._volume_dir(f"secret-{secret['secretName']}", data,
                                                                    secret.get("items"),
                                                                    secret.get("defaultMode", 0o644)))
        for volume in volumes:
            cm = volume.get("configMap")
            if cm is None:
                continue
            data = await self._data(kube, "ConfigMap", cm["name"], optional=bool(cm.get("optional")))
            data = {key: _rewrite_paths(text, local) for key, text in data.items()}
            local[mounts[volume["name"]]] = str(self._volume_dir(f"conf-{cm['name']}", data, cm.get("items"),
                                                                cm.get("defaultMode", 0o644)))
        # the container reads its volumes where they are mounted: no container filesystem here
        for key, value in list(defined.items()):
            defined[key] = _rewrite_paths(value, local)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runtime-image"), str(ROOT / "operator"),
                                             env.get("PYTHONPATH", "")])
        env["HOSTNAME"] = pod.name
        env.update(defined)
        return env, defined

    def _volume_dir(self, prefix: str, data: Mapping[str, str], items: list[dict[str, Any]] | None,
                    mode: int) -> Path:
        """A fresh directory with the volume's files: every key, or only `items` (key -> path), at `mode`."""
        self._counter += 1
        directory = self.work_dir / f"{prefix}-{self._counter}"
        directory.mkdir()
        chosen = {i["key"]: i.get("path", i["key"]) for i in items} if items else {k: k for k in data}
        for key, path in chosen.items():
            if key not in data:
                raise ContainerConfigError(f"couldn't find key {key} for the volume {prefix}")
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(data[key])
            target.chmod(mode)
        return directory

    def _fields(self, source: dict[str, Any], pod: PodProcess) -> PodFields:
        meta = source.get("metadata") or {}
        return PodFields(name=pod.name, namespace=self.namespace, uid=pod.uid or pod.name, node_name=NODE_NAME,
                         pod_ip=pod.ip, host_ip=self.gateway,
                         service_account=source["spec"].get("serviceAccountName") or "default",
                         labels=pod.labels, annotations=meta.get("annotations") or {})

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

    # -- readiness -------------------------------------------------------------------------------

    def _schedule_probe(self, pod: PodProcess) -> None:
        """Start the pod's next readiness probe when it is due (one at a time, in the kubelet's loop)."""
        spec = pod.readiness_probe
        if spec is None or not pod.running or pod.probing or time.monotonic() < pod.next_probe:
            return
        if probe_kind(spec) is None:
            pod.probe_ready = True  # exec/grpc probes are not run: ready while running
            return
        pod.probing = True
        task = self._loop.create_task(self._probe(pod, spec, pod.started_mono))
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    async def _probe(self, pod: PodProcess, spec: dict[str, Any], container_start: float) -> None:
        try:
            ok = await probe(spec, pod.ip, pod.ports)
        finally:
            pod.probing = False
        if pod.started_mono != container_start or not pod.running:
            return  # the container this probe was for has gone
        if ok:
            pod.probe_successes, pod.probe_failures = pod.probe_successes + 1, 0
            if pod.probe_successes >= int(spec.get("successThreshold", 1)):
                pod.probe_ready = True
        else:
            pod.probe_successes, pod.probe_failures = 0, pod.probe_failures + 1
            if pod.probe_failures >= int(spec.get("failureThreshold", 3)):
                pod.probe_ready = False
        pod.next_probe = time.monotonic() + min(float(spec.get("periodSeconds", 10)), self.max_probe_period_s)

    # -- Services --------------------------------------------------------------------------------

    def _resolve_services(self, services: list[dict[str, Any]]) -> None:
        """Endpoints of every Service -> every pod's hosts file and the operator's URL map, on change."""
        with self._lock:
            pods = [p for p in self._all_pods() if p.host is not None]
        endpoints: dict[str, list[str]] = {}
        urls: dict[str, str] = {}
        for service in services:
            name, spec = service["metadata"]["name"], service.get("spec") or {}
            members = [p for p in pods if selects(spec.get("selector"), p.labels) and (
                p.ready or (spec.get("publishNotReadyAddresses") and p.terminated is None))]
            endpoints[name] = [p.ip for p in members]
            rest = next((sp for sp in spec.get("ports") or () if sp.get("name") == REST_PORT_NAME), None)
            ready = [p for p in members if p.ready]
            if rest is not None and ready and (port := target_port(rest, ready[0].ports)) is not None:
                urls[f"{self.namespace}/{name}"] = f"http://{ready[0].ip}:{port}"
        self.names = hosts_entries(endpoints, self.namespace)
        for pod in pods:
            self._write_names(pod)
        if urls != self.urls:
            self.urls = urls
            tmp = self.url_map.with_suffix(".tmp")
            tmp.write_text(json.dumps(urls, indent=1, sort_keys=True))
            os.replace(tmp, self.url_map)  # the operator never reads half a file

    def _write_names(self, pod: PodProcess) -> None:
        """The pod's hosts file: the Services' names, and the machine's hostname as the pod's own IP."""
        assert self.network is not None and pod.host is not None
        if pod.names_written == self.names:
            return
        names = {address: list(aliases) for address, aliases in self.names.items()}
        names.setdefault(pod.ip, []).append(self._hostname)
        self.network.set_names(pod.host, names)
        pod.names_written = self.names

    # -- status ----------------------------------------------------------------------------------

    async def _report_pod(self, kube: KubeApi, pod: PodProcess) -> None:
        running, ready = pod.running, pod.ready
        if pod.terminated is not None:
            state: dict[str, Any] = {"terminated": pod.terminated}
        elif running:
            state = {"running": {"startedAt": pod.started_at}}
        else:
            reason, message = pod.waiting or ("ContainerCreating", "")
            state = {"waiting": {"reason": reason, "message": message}}
        container: dict[str, Any] = {"name": pod.container, "ready": ready, "restartCount": pod.restarts,
                                     "started": running, "state": state}
        if pod.last_exit is not None:
            container["lastState"] = {"terminated": pod.last_exit}
        if pod.terminated is not None:  # not restarted (Never, or OnFailure after exit 0): the pod has ended
            phase = "Succeeded" if pod.terminated["exitCode"] == 0 else "Failed"
        else:  # a pod stays Running between restarts once its container has run
            phase = "Running" if running or pod.restarts else "Pending"
        flag = "True" if ready else "False"
        status = {"phase": phase, "hostIP": self.gateway, "hostIPs": [{"ip": self.gateway}],
                  "podIP": pod.ip, "podIPs": [{"ip": pod.ip}],
                  "conditions": [{"type": "PodScheduled", "status": "True"},
                                 {"type": "Initialized", "status": "True"},
                                 {"type": "Ready", "status": flag},
                                 {"type": "ContainersReady", "status": flag}],
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
        ready = sum(1 for p in realized.pods if p.ready)
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
        self._discard(pods)
        for pod in pods:
            await self._delete_pod(kube, pod.name)

    def _discard(self, pods: list[PodProcess]) -> None:
        """Terminate the pods' containers, then remove their network namespaces (their IPs are free again)."""
        with self._lock:
            self.terminating.extend(pods)
        try:
            _terminate(pods)
        finally:
            with self._lock:
                self.terminating[:] = [p for p in self.terminating if p not in pods]
        for pod in pods:
            if pod.host is not None and self.network is not None:
                self.network.remove_host(pod.host)
            pod.host = None

    async def _delete_pod(self, kube: KubeApi, name: str) -> None:
        """Its processes have ended (the kubelet terminated them): the Pod object goes now (grace period 0)."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        try:
            await kube.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{name}", body=body)
        except KubeApiError as e:
            if e.status != 404:
                raise

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


def _is_bare(pod: dict[str, Any]) -> bool:
    """A Pod no Deployment owns, whose container has a command to run (without one it would run its
    image's entry point, and there are no images here: whoever created it plays its kubelet)."""
    meta = pod["metadata"]
    if meta.get("deletionTimestamp") or any(o.get("kind") in ("Deployment", "ReplicaSet")
                                            for o in meta.get("ownerReferences") or ()):
        return False
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return bool(containers[0].get("command"))


def _runs_here(pod: dict[str, Any], *, bare_pods: bool) -> bool:
    """Node mode: a Pod bound to no node or to this one, whose container has a command to run, made by
    a ReplicaSet (a Deployment's) or, with `bare_pods`, by anyone (a batch FlinkJob's driver)."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or [{}]
    if spec.get("nodeName") not in (None, "", NODE_NAME) or not containers[0].get("command"):
        return False
    return bare_pods or _owner(pod, "ReplicaSet") != ""


def _owner(obj: dict[str, Any], kind: str) -> str:
    """The name of the object's controller of `kind` ('' when it has none)."""
    return next((o["name"] for o in obj["metadata"].get("ownerReferences") or () if o.get("kind") == kind), "")


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
    """Kubernetes' graceful termination: SIGTERM to each container's process group, up to the pod's grace
    period for its processes to exit, then SIGKILL to the group; returns once no process of any group is
    left (a Pod object may go only then)."""
    procs = [(p.proc, p.grace_s) for p in pods if p.proc is not None]
    started = time.monotonic()
    for proc, _ in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for proc, grace_s in procs:
        deadline = started + grace_s
        while proc.poll() is None and time.monotonic() < deadline:  # the leader first: it is our child
            time.sleep(0.05)
        while _group_alive(proc.pid) and time.monotonic() < deadline:  # then what it started
            time.sleep(0.05)
        _kill_group(proc.pid)
        if proc.poll() is None:
            proc.wait(GROUP_EXIT_WAIT_S)
        gone = time.monotonic() + GROUP_EXIT_WAIT_S
        while _group_alive(proc.pid) and time.monotonic() < gone:  # SIGKILLed children, until reaped
            time.sleep(0.05)
    for pod in pods:
        pod.proc = None


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group is still there (not a zombie: one that has exited is gone)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":  # stat: state, ppid, pgrp, ...
            return True
    return False


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
        "spec": {**template["spec"], "nodeName": NODE_NAME},  # scheduled to this "node"
        "status": {"phase": "Pending"},
    }
