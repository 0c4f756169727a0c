"""A slot: one worker process of a TaskManager, so that N slots use N cores.

The worker receives DeploySlot/CancelJob/Shutdown messages from its TaskManager over a pipe,
runs the slot's subtasks as task threads (one mailbox loop each), serves its remote input
channels on its own data port, and reports every task state change back.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import cloudpickle

from strom.graph.job_graph import create_job_graph
from strom.runtime.execution_graph import RemoteChannels, build_subtasks
from strom.runtime.metrics import MetricGroup
from strom.runtime.metrics.registry import MetricRegistry
from strom.runtime.rpc import CancelJob, DeploySlot, MetricsReport, Shutdown, TaskStateUpdate, WorkerReady

log = logging.getLogger("strom.runtime.slot")


class SlotWorker:
    def __init__(
        self, conn: Any, *, slot_index: int, host: str, data_port: int, tm_id: str = "", report_interval_s: float = 1.0
    ) -> None:
        from strom.runtime.network.tcp_channels import DataServer

        self.conn = conn
        self.slot_index = slot_index
        self.host = host
        self._send_lock = threading.Lock()
        self.data_server = DataServer(host, data_port)
        self.data_port = self.data_server.start()
        self.tasks: dict[tuple[str, int], list[Any]] = {}
        self._graphs: dict[tuple[str, int], Any] = {}
        self.metrics = MetricGroup()
        self.registry = MetricRegistry(tm_id=tm_id)
        self.report_interval_s = report_interval_s
        self._stopped = threading.Event()

    def send(self, message: Any) -> None:
        with self._send_lock:
            self.conn.send(message)

    def _report_metrics(self) -> None:
        while not self._stopped.wait(self.report_interval_s):
            try:
                self.send(MetricsReport(str(self.slot_index), self.registry.snapshot()))
            except (OSError, ValueError):
                return

    def serve(self) -> None:
        self.send(WorkerReady(self.slot_index, self.data_port))
        threading.Thread(target=self._report_metrics, name="metrics-report", daemon=True).start()
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                break  # our TaskManager is gone: stop with it
            if isinstance(msg, DeploySlot):
                self.deploy(msg)
            elif isinstance(msg, CancelJob):
                self.cancel(msg.job_id, msg.attempt)
            elif isinstance(msg, Shutdown):
                break
        self._stopped.set()
        for key in list(self.tasks):
            self.cancel(*key)
        self.data_server.close()

    def deploy(self, msg: DeploySlot) -> None:
        from strom.runtime.network.tcp_channels import ChannelId, RemoteOutputChannel

        key = (msg.job_id, msg.attempt)
        try:
            graph = cloudpickle.loads(msg.payload)
            job_graph = create_job_graph(graph)
            remote = RemoteChannels(
                expect=lambda key, ch: self.data_server.expect(ChannelId(*key), ch),
                connect=lambda key, host, port: RemoteOutputChannel(ChannelId(*key), host, port),
                locations=msg.locations,
            )
            built = build_subtasks(
                job_graph,
                [(ref.vertex_id, ref.subtask_index) for ref in msg.subtasks],
                job_id=msg.job_id,
                attempt=msg.attempt,
                config=graph.config,
                channels=remote,
                metrics=self.metrics,
                on_done=self._task_done,
            )
        except BaseException:  # noqa: BLE001 - a deployment that cannot be built fails its tasks
            import traceback

            trace = traceback.format_exc()
            for ref in msg.subtasks:
                self.send(TaskStateUpdate(msg.job_id, msg.attempt, ref.vertex_id, ref.subtask_index, "FAILED", trace))
            return
        tasks = []
        self.registry.configure(config=graph.config)
        for ev in built:
            vertex, index, task = ev.vertex, ev.subtask_index, ev.task
            task.job_key = (msg.job_id, msg.attempt, vertex.id, index)  # type: ignore[attr-defined]
            self.registry.register_task(
                task, job_id=msg.job_id, job_name=graph.job_name, vertex_id=vertex.id,
                metric_group=ev.metric_group,
                attempt=msg.attempt,
            )
            tasks.append(task)
        self.tasks[key] = tasks
        for task in tasks:
            # RUNNING is reported before the thread starts, so it can never overtake the
            # task's own terminal state
            self.send(TaskStateUpdate(msg.job_id, msg.attempt, task.job_key[2], task.job_key[3], "RUNNING"))
            task.start()

    def _task_done(self, task: Any) -> None:
        job_id, attempt, vertex_id, index = task.job_key
        self.send(TaskStateUpdate(job_id, attempt, vertex_id, index, task.state, task.failure_trace))

    def cancel(self, job_id: str, attempt: int) -> None:
        for task in self.tasks.pop((job_id, attempt), []):
            task.cancel()
        self.data_server.forget(job_id)
        self.registry.unregister_job(job_id)


def worker_main(
    conn: Any, slot_index: int, host: str, data_port: int, log_level: str = "WARNING", tm_id: str = ""
) -> None:
    """Entry point of the worker process (multiprocessing spawn target)."""
    logging.basicConfig(
        level=log_level, format=f"%(asctime)s slot-{slot_index} pid-{os.getpid()} %(levelname)s %(message)s"
    )
    SlotWorker(conn, slot_index=slot_index, host=host, data_port=data_port, tm_id=tm_id).serve()
