"""The autoscaler's I/O wired to its decision: a fake JobManager REST API whose metrics force a scale-up,
the Kubernetes API (the emulator, or KUBECONFIG's cluster), and the reconciler's `autoscale` pass.

The fake JobManager (aiohttp on 127.0.0.1) answers Flink's paths for a job Source -> Map. Its
figures, and the decision worked by hand (targetUtilization 0.7, boundary 0.3, catch-up 5 min):

* Source: 1000 rec/s in and out, busy 200 ms/s, a steady backlog of 60 000 records:
  target = 1000 + 60 000 / 300 s = 1200 rec/s; true rate 1000 / 0.2 = 5000 rec/s;
  utilization 0.24 < 0.4, needed ceil(1200 / (5000 x 0.7)) = 1 = its parallelism: keeps 1.
* Map: 1000 rec/s in, busy 1000 ms/s: true rate 1000 rec/s per subtask; target 1200 x (1000 out /
  1000 in of the source) = 1200 rec/s; utilization 1.2 > 1.0, needed ceil(1200 / (1000 x 0.7)) = 2.
* With 1 slot per TaskManager: 2 TaskManagers.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp import web
from strom_operator.autoscaler.configmap_store import STATE_KEY
from strom_operator.clients.jobmanager_client import RestJobManagerClient
from strom_operator.clients.jobmanager_endpoints import JobManagerEndpoints
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus, JobStatus, Reconciliation
from strom_operator.reconcile.metrics import OperatorMetrics
from strom_operator.reconcile.observer import Observer
from strom_operator.reconcile.reconciler import Reconciler

from tests.operator.operator_harness import Cluster

JID = "f" * 32
SOURCE, MAP = "1" * 32, "2" * 32
FIGURES = {  # vertex -> metric -> value, as the aggregated subtask metrics report them
    SOURCE: {"busyTimeMsPerSecond": 200.0, "backPressuredTimeMsPerSecond": 0.0, "numRecordsInPerSecond": 1000.0,
             "numRecordsOutPerSecond": 1000.0, "pendingRecords": 60_000.0},
    MAP: {"busyTimeMsPerSecond": 1000.0, "backPressuredTimeMsPerSecond": 0.0, "numRecordsInPerSecond": 1000.0,
          "numRecordsOutPerSecond": 1000.0},
}


def fake_jobmanager() -> web.Application:
    async def job(_: web.Request) -> web.Response:
        return web.json_response({"jid": JID, "name": "job", "state": "RUNNING", "maxParallelism": 128, "vertices": [
            {"id": SOURCE, "name": "Source", "parallelism": 1, "maxParallelism": 128},
            {"id": MAP, "name": "Map", "parallelism": 1, "maxParallelism": 128}]})

    async def plan(_: web.Request) -> web.Response:
        return web.json_response({"plan": {"jid": JID, "nodes": [
            {"id": SOURCE, "parallelism": 1}, {"id": MAP, "parallelism": 1, "inputs": [{"num": 0, "id": SOURCE}]}]}})

    async def metrics(request: web.Request) -> web.Response:
        asked = request.query["get"].split(",")
        figures = FIGURES[request.match_info["vertex"]]
        # Flink's aggregated form; one subtask, so max == sum
        return web.json_response([{"id": m, "max": figures[m], "sum": figures[m]} for m in asked if m in figures])

    app = web.Application()
    app.router.add_get(f"/jobs/{JID}", job)
    app.router.add_get(f"/jobs/{JID}/plan", plan)
    app.router.add_get(f"/jobs/{JID}/vertices/{{vertex}}/subtasks/metrics", metrics)
    return app


def run(k8s: Cluster, make: Callable[[], Awaitable[Any]]) -> Any:
    return k8s.loop.run_until_complete(make())


def test_metrics_that_saturate_a_vertex_become_a_rescale_written_to_status_configmap_events_and_metrics(
        own_namespace: Cluster, tmp_path: Path):
    k8s = own_namespace  # no operator watches it: the reconciler here is the only one
    name, namespace = "autoscaled", k8s.namespace
    spec_body = {
        "image": "strom/runtime:test", "job": {"entry": "/opt/job.py", "parallelism": 1, "upgradeMode": "savepoint"},
        "taskManager": {"slots": 1}, "savepoints": {"dir": "s3://bucket/sp"},
        "autoscaler": {"enabled": True, "metricsInterval": "1 s", "metricsWindow": "2 s", "stabilization": "0 s"},
    }
    runner = web.AppRunner(fake_jobmanager())
    run(k8s, runner.setup)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    run(k8s, site.start)
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def get(kind: str, obj: str) -> dict[str, Any]:
        return k8s.call(lambda k: k.get(kind, namespace, obj))

    def status_of() -> dict[str, Any]:
        return get("FlinkJob", name).get("status") or {}

    url_map = tmp_path / "urls.json"
    url_map.write_text(json.dumps({f"{namespace}/{name}-jobmanager": f"http://127.0.0.1:{port}"}))
    client = RestJobManagerClient()
    events: list[tuple[str, str, str]] = []
    metrics = OperatorMetrics()
    reconciler = Reconciler(k8s.api, client, Observer(k8s.api, client, JobManagerEndpoints(str(url_map))),
                            metrics=metrics, post_event=lambda _b, t, r, m: events.append((t, r, m)))
    now = datetime.now(UTC).replace(microsecond=0)
    try:
        k8s.call(lambda k: k.create({"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
                                     "metadata": {"name": name, "namespace": namespace}, "spec": spec_body}))
        spec = FlinkJobSpec.from_dict(spec_body)
        stable = FlinkJobStatus(lifecycle_state="STABLE", job_status=JobStatus(JID, "RUNNING", now - timedelta(60)),
                                reconciliation=Reconciliation(spec.to_dict(), spec.to_dict(), deployed_at=now))
        k8s.call(lambda k: k.merge_patch("FlinkJob", namespace, name, {"status": stable.to_dict()},
                                         subresource="status"))

        first = run(k8s, lambda: reconciler.autoscale(namespace, name, now=now))
        assert first.delay == 1.0 and not first.rescaled
        record = status_of()["scaling"]["autoscaler"]
        assert (record["reason"], record["action"]) == ("WaitingForMetrics", "none")
        stored = json.loads(get("ConfigMap", f"{name}-autoscaler")["data"][STATE_KEY])
        assert len(stored["window"]["samples"]) == 1

        second = run(k8s, lambda: reconciler.autoscale(namespace, name, now=now + timedelta(seconds=1)))
        assert second.rescaled
        status = status_of()
        record = status["scaling"]["autoscaler"]
        assert (record["reason"], record["action"]) == ("Rescaled", "rescale")
        assert record["recommendedParallelism"] == {SOURCE: 1, MAP: 2} and record["taskManagers"] == 2
        by_id = {v["vertexId"]: v for v in record["vertices"]}
        assert by_id[MAP]["targetRate"] == 1200.0 and by_id[MAP]["utilization"] == 1.2
        assert by_id[SOURCE]["targetRate"] == 1200.0 and by_id[SOURCE]["recommendedParallelism"] == 1
        # the rescale is logged as an upgrade through a savepoint, before anything is stopped
        assert status["lifecycleState"] == "UPGRADING"
        assert status["reconciliation"]["upgradeStep"] == "STOP_WITH_SAVEPOINT"
        assert status["reconciliation"]["vertexParallelism"] == {SOURCE: 1, MAP: 2}
        assert status["savepoints"]["pending"]["kind"] == "rescale"
        stored = json.loads(get("ConfigMap", f"{name}-autoscaler")["data"][STATE_KEY])
        assert stored["overrides"] == {SOURCE: 1, MAP: 2} and stored["rescaleRequestedAt"] == (now.timestamp() + 1)
        reasons = [r for _, r, _ in events]
        assert reasons[:2] == ["AutoscalerWaitingForMetrics", "AutoscalerRescaled"]
        assert "Map 1 -> 2" in events[1][2]
        labels = {"namespace": namespace, "flinkjob": name, "vertex_id": MAP, "vertex": "Map"}
        assert metrics.registry.get_sample_value("strom_autoscaler_recommended_parallelism", labels) == 2
        assert metrics.registry.get_sample_value("strom_autoscaler_utilization", labels) == 1.2

        # while the rescale is in progress the autoscaler does not evaluate
        third = run(k8s, lambda: reconciler.autoscale(namespace, name, now=now + timedelta(seconds=2)))
        assert not third.rescaled and status_of()["scaling"]["autoscaler"] == record
    finally:
        k8s.call(lambda k: k.delete("FlinkJob", namespace, name))
        run(k8s, client.close)
        run(k8s, runner.cleanup)
