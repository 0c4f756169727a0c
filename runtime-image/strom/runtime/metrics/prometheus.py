"""Prometheus exporter: metric snapshots under Flink's Prometheus names, over HTTP.

A `SnapshotCollector` asks a callable for snapshots at each scrape, so a process can export
what it measured itself and what other processes sent it (a TaskManager's slot workers, the
JobManager's TaskManagers). Names follow Flink's PrometheusReporter: the scope and metric name
joined by "_", characters outside [a-zA-Z0-9_:] replaced by "_", scope variables as labels:

  flink_taskmanager_job_task_<metric>{job_id, job_name, task_name, subtask_index, tm_id}
  flink_taskmanager_job_task_operator_<metric>{..., operator_name, <user key groups>}
  flink_jobmanager_job_<metric>{job_id, job_name}
  flink_jobmanager_<metric>{}
  flink_taskmanager_<Status_...>{tm_id}

Counters, meters (their rate) and gauges are gauges, as Flink exports them; histograms and
distributions are summaries with Flink's quantiles.
"""

from __future__ import annotations

import errno
import logging
import re
import socketserver
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from strom.common.port_ranges import parse_port_range, port_candidates
from strom.runtime.metrics.snapshots import COUNTER, GAUGE, HISTOGRAM, METER, MetricsSnapshot, SubtaskMetrics

TASK_PREFIX = "flink_taskmanager_job_task_"
OPERATOR_PREFIX = "flink_taskmanager_job_task_operator_"
JOB_PREFIX = "flink_jobmanager_job_"
JOBMANAGER_PREFIX = "flink_jobmanager_"
TASKMANAGER_PREFIX = "flink_taskmanager_"

log = logging.getLogger(__name__)

_INVALID = re.compile(r"[^a-zA-Z0-9_:]")

SnapshotSource = Callable[[], MetricsSnapshot | Iterable[MetricsSnapshot]]


def prometheus_name(name: str) -> str:
    """Flink's PrometheusReporter character filter: anything not [a-zA-Z0-9_:] becomes "_"."""
    return _INVALID.sub("_", name)


class _Families:
    """Metric families by name, created on first use, in first-use order."""

    def __init__(self) -> None:
        self.by_name: dict[str, Metric] = {}

    def get(self, name: str, doc: str, typ: str) -> Metric:
        fam = self.by_name.get(name)
        if fam is None:
            fam = self.by_name[name] = Metric(name, doc, typ)
        return fam

    def gauge(self, name: str, doc: str, labels: dict[str, str], value: float) -> None:
        self.get(name, doc, "gauge").add_sample(name, labels, value)


def _task_labels(s: SubtaskMetrics, tm_id: str) -> dict[str, str]:
    return {
        "job_id": s.job_id,
        "job_name": s.job_name,
        "task_name": s.task_name,
        "subtask_index": str(s.subtask_index),
        "task_attempt_num": str(s.attempt),
        "tm_id": s.tm_id or tm_id,
    }


def _add_subtask(fams: _Families, s: SubtaskMetrics, tm_id: str) -> None:
    labels = _task_labels(s, tm_id)
    for metric, value in s.task.items():
        fams.gauge(TASK_PREFIX + prometheus_name(metric), f"Task metric {metric} (Flink semantics).", labels, value)
    for um in s.user:
        name = OPERATOR_PREFIX + prometheus_name(um.name)
        op_labels = dict(labels, operator_name=um.operator_name)
        op_labels.update((prometheus_name(k), v) for k, v in um.labels)
        if um.kind == HISTOGRAM:
            stats = dict(um.stats)
            fam = fams.get(name, f"User histogram {um.name}.", "summary")
            for key, value in um.stats:
                if key.startswith("p"):
                    fam.add_sample(name, dict(op_labels, quantile=key[1:]), value)
            fam.add_sample(name + "_count", op_labels, um.value)
            fam.add_sample(name + "_sum", op_labels, stats.get("sum", 0.0))
        elif um.kind in (COUNTER, GAUGE, METER):
            fams.gauge(name, f"User {um.kind} {um.name}.", op_labels, um.value)


def snapshot_families(snapshots: Iterable[MetricsSnapshot], *, tm_id: str = "") -> list[Metric]:
    """The Prometheus metric families of some snapshots (pure: no I/O)."""
    fams = _Families()
    for snap in snapshots:
        for s in snap.subtasks:
            _add_subtask(fams, s, tm_id)
        for job in snap.jobs:
            labels = {"job_id": job.job_id, "job_name": job.job_name}
            for metric, value in job.values.items():
                fams.gauge(JOB_PREFIX + prometheus_name(metric), f"Job metric {metric}.", labels, value)
        for metric, value in snap.jobmanager.items():
            fams.gauge(JOBMANAGER_PREFIX + prometheus_name(metric), f"JobManager metric {metric}.", {}, value)
        for tm, values in snap.taskmanagers.items():
            for metric, value in values.items():
                name = TASKMANAGER_PREFIX + prometheus_name(metric)
                fams.gauge(name, f"TaskManager metric {metric}.", {"tm_id": tm}, value)
    return list(fams.by_name.values())


class SnapshotCollector(Collector):
    """A prometheus-client collector that reads snapshots from `source` at every scrape."""

    def __init__(self, source: SnapshotSource, *, tm_id: str = "") -> None:
        self.source = source
        self.tm_id = tm_id

    def collect(self) -> Iterator[Metric]:
        got = self.source()
        snapshots = [got] if isinstance(got, MetricsSnapshot) else list(got)
        yield from snapshot_families(snapshots, tm_id=self.tm_id)

    def describe(self) -> Iterable[Metric]:
        return ()  # names change with the jobs; never collect at registration time


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper must not keep the process alive


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # one line per scrape on stderr would drown the process's own logs


_servers: dict[int, WSGIServer] = {}
_servers_lock = threading.Lock()


def start_exporter(collector_source: SnapshotSource, host: str = "127.0.0.1", port: int | str = 9249, *,
                   tm_id: str = "") -> int:
    """Serve the snapshots of `collector_source` on http://host:port/metrics in a daemon thread,
    from a registry of its own (never prometheus-client's global one). `port` is a port or, as
    Flink's PrometheusReporter takes it, a range or list ('9250-9260'): the first free one is bound,
    so a JobManager and TaskManagers on one host can share one setting. Port 0 picks a free port;
    the bound port is returned. No free port raises OSError naming the ports and the keys. Processes
    pass the host of metrics.reporter.prom.host, unset = their own bind address."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(collector_source, tm_id=tm_id))
    app = make_wsgi_app(registry)
    server = _bind_first_free(host, port, app)
    bound = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name=f"prometheus-exporter:{bound}", daemon=True)
    thread.start()
    with _servers_lock:
        _servers[bound] = server
    return bound


def _bind_first_free(host: str, port: int | str, app: Any) -> WSGIServer:
    last: OSError | None = None
    for candidate in port_candidates(port):
        try:
            return make_server(host, candidate, app, _ThreadingWSGIServer, handler_class=_QuietHandler)
        except OSError as e:
            if e.errno not in (errno.EADDRINUSE, errno.EACCES):
                last = e
                break  # a host that is not this machine's fails on every port alike
            log.debug("Prometheus exporter: port %d on %s is taken, trying the next one", candidate, host)
            last = e
    assert last is not None  # a port list is never empty
    ports = port if isinstance(port, int) else parse_port_range(port)
    taken = "every port is in use" if last.errno == errno.EADDRINUSE else last.strerror
    raise OSError(
        last.errno,
        f"cannot start the Prometheus exporter on {host}:{ports} "
        f"(metrics.reporter.prom.host, metrics.reporter.prom.port): {taken}; "
        "give a free port or a range such as 9250-9260",
    )


def stop_exporter(port: int) -> None:
    """Stop the exporter serving on `port` (as returned by start_exporter)."""
    with _servers_lock:
        server = _servers.pop(port, None)
    if server is not None:
        server.shutdown()
        server.server_close()
