"""The Prometheus exporter scraped over real HTTP on loopback: Flink's names, labels, plausible values."""

from __future__ import annotations

import socket
import time
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from strom.common import WatermarkStrategy
from strom.connectors.number_sequence import NumberSequenceSource
from strom.datastream import MapFunction, StreamExecutionEnvironment
from strom.datastream.functions import SinkFunction
from strom.runtime.local_executor import LocalJob
from strom.runtime.metrics import MetricRegistry
from strom.runtime.metrics.prometheus import start_exporter, stop_exporter

TASK_LABELS = {"job_id", "job_name", "task_name", "subtask_index", "tm_id"}


class SlowSink(SinkFunction):
    def __init__(self) -> None:
        self.n = 0

    def invoke(self, value: Any, context: Any) -> None:
        self.n += 1
        if self.n % 100 == 0:
            time.sleep(0.01)


class Counted(MapFunction):
    def open(self, ctx: Any) -> None:
        g = ctx.get_metrics_group()
        self.seen = g.counter("seen")
        self.latency = g.histogram("latency")

    def map(self, v: int) -> int:
        self.seen.inc()
        self.latency.update(v % 10)
        return v


def scrape(port: int) -> dict[str, list[Any]]:
    """Family name -> samples, parsed by prometheus-client's own parser."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {fam.name: fam.samples for fam in text_string_to_metric_families(text)}


@pytest.fixture
def back_pressured_job():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_source(NumberSequenceSource(1, 10**9), WatermarkStrategy.no_watermarks(), "numbers") \
        .map(Counted()).name("Counted").rebalance().add_sink(SlowSink())
    graph = env.get_stream_graph("scraped job", clear_transformations=True)
    graph.config.set("metrics.meter.time-span", "2 s")
    job = LocalJob(graph)
    job.start()
    yield job
    job.cancel()
    job._done.wait(10)


def test_scrape_shows_task_operator_job_and_cluster_metrics_with_flink_names(back_pressured_job):
    job = back_pressured_job
    cluster = MetricRegistry(tm_id="tm-1")
    cluster.register_jobmanager_gauges(
        num_registered_taskmanagers=lambda: 1, task_slots_total=lambda: 2, task_slots_available=lambda: 1
    )
    cluster.register_taskmanager_gauges("tm-1", slots_total=lambda: 2, slots_free=lambda: 1)
    port = start_exporter(lambda: [job.metrics_snapshot(), cluster.snapshot()], port=0)
    try:
        deadline = time.monotonic() + 30
        while True:
            fams = scrape(port)
            bp_samples = fams["flink_taskmanager_job_task_backPressuredTimeMsPerSecond"]
            bp = {s.labels["task_name"]: s.value for s in bp_samples}
            upstream = next(v for name, v in bp.items() if name.startswith("Source"))
            if upstream > 500 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        stop_exporter(port)
    assert upstream > 500

    for name in ("numRecordsIn", "numRecordsOut", "numRecordsInPerSecond", "numRecordsOutPerSecond",
                 "numBytesInPerSecond", "numBytesOutPerSecond", "busyTimeMsPerSecond", "idleTimeMsPerSecond",
                 "backPressuredTimeMsPerSecond", "currentInputWatermark", "currentOutputWatermark"):
        samples = fams[f"flink_taskmanager_job_task_{name}"]
        assert len(samples) == 2, name  # the source task and the sink task
        for s in samples:
            assert TASK_LABELS <= set(s.labels), (name, s.labels)
            assert s.labels["job_id"] == job.job_id and s.labels["job_name"] == "scraped job"
            assert s.labels["subtask_index"] == "0"
    by_task = {s.labels["task_name"]: s.value for s in fams["flink_taskmanager_job_task_numRecordsInPerSecond"]}
    assert all(v > 0 for v in by_task.values())
    pending = fams["flink_taskmanager_job_task_pendingRecords"]
    assert len(pending) == 1 and 0 < pending[0].value < 10**9

    seen = fams["flink_taskmanager_job_task_operator_seen"]
    assert seen[0].labels["operator_name"] == "Counted" and seen[0].value > 0
    latency = fams["flink_taskmanager_job_task_operator_latency"]
    quantiles = {s.labels["quantile"] for s in latency if "quantile" in s.labels}
    assert quantiles == {"0.5", "0.75", "0.95", "0.98", "0.99", "0.999"}
    assert all(0 <= s.value <= 9 for s in latency if "quantile" in s.labels)

    uptime = fams["flink_jobmanager_job_uptime"][0]
    assert uptime.labels == {"job_id": job.job_id, "job_name": "scraped job"} and uptime.value > 0
    assert fams["flink_jobmanager_job_numRestarts"][0].value == 0
    assert fams["flink_jobmanager_job_lastCheckpointDuration"][0].value == 0
    assert fams["flink_jobmanager_job_numberOfCompletedCheckpoints"][0].value == 0
    assert fams["flink_jobmanager_numRegisteredTaskManagers"][0].value == 1
    assert fams["flink_jobmanager_taskSlotsTotal"][0].value == 2
    assert fams["flink_taskmanager_Status_TaskSlots_Total"][0].labels == {"tm_id": "tm-1"}
    assert fams["flink_taskmanager_Status_TaskSlots_Free"][0].value == 1
    assert fams["flink_taskmanager_Status_Process_Memory_RSS"][0].value > 10 * 2**20


def test_exporter_on_port_zero_binds_a_free_loopback_port():
    port = start_exporter(lambda: MetricRegistry().snapshot(), port=0)
    try:
        assert port > 0
        assert scrape(port) == {}  # nothing registered, nothing exported, but a valid scrape
    finally:
        stop_exporter(port)


def test_exporter_on_a_port_in_use_names_the_address():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"127.0.0.1:{port}"):
            start_exporter(lambda: MetricRegistry().snapshot(), port=port)
