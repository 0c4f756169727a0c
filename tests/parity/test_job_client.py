"""`execute_async` returns PyFlink's JobClient (issue 18).

PyFlink documents `execute_async`: "Triggers the program asynchronously. ... :return: A JobClient
that can be used to communicate with the submitted job, completed on submission succeeded." and
JobClient.get_job_execution_result: "Returns the JobExecutionResult result of the job submitted to
the cluster. :return: A CompletableFuture containing the JobExecutionResult result of the job".
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from strom.common import Configuration, Types, WatermarkStrategy
from strom.common.completable_future import CompletableFuture
from strom.common.config_options import ConfigError
from strom.common.job_client import JobClient
from strom.common.job_status import JobStatus
from strom.common.serialization import Encoder
from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from strom.datastream.connectors import DataGeneratorSource
from strom.datastream.connectors.file_system import StreamingFileSink
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.jobmanager.savepoint_operations import SavepointRefused


def test_execute_async_gives_a_job_client_whose_result_is_a_future(tmp_path: Any) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    sink = StreamingFileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    env.from_collection(list(range(100)), Types.INT()).map(lambda v: v * 3, Types.INT()).map(str).add_sink(sink)
    client = env.execute_async("async job")
    assert isinstance(client, JobClient)
    future = client.get_job_execution_result()
    assert isinstance(future, CompletableFuture)
    result = future.result(60)
    assert result.get_job_id() == client.get_job_id()
    assert future.done() and client.get_job_status().result() is JobStatus.FINISHED
    written = sorted(
        int(line) for p in tmp_path.rglob("*") if p.is_file() and not p.name.startswith(".")
        for line in p.read_text().split()
    )
    assert written == sorted(v * 3 for v in range(100))


def test_the_future_raises_the_failure_of_a_failed_job() -> None:
    def boom(v: int) -> int:
        raise ValueError(f"bad record {v}")

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1], Types.INT()).map(boom).print()
    future = env.execute_async().get_job_execution_result()
    with pytest.raises(Exception, match="bad record 1"):  # noqa: PT011 - the job's failure, as PyFlink's
        future.result(60)
    assert isinstance(future.exception(), Exception)


def test_job_status_is_flinks_enum() -> None:
    assert JobStatus.FINISHED.is_globally_terminal_state() and not JobStatus.SUSPENDED.is_globally_terminal_state()
    assert JobStatus.SUSPENDED.is_terminal_state() and not JobStatus.RUNNING.is_terminal_state()
    assert JobStatus("CANCELED") is JobStatus.CANCELED


# -- savepoints through the JobClient (Flink's JobClient.triggerSavepoint / stopWithSavepoint) ---------------
# The embedded executor runs the real JobMaster, so its JobClient takes savepoints as a cluster's does.

SAVEPOINT_COUNT = 4000
SAVEPOINT_KEYS = 5
_latest_lock = threading.Lock()
LATEST_SUMS: dict[int, int] = {}


class SumPerKey(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value: int, ctx: Any) -> Any:
        total = (self.sum.value() or 0) + value
        self.sum.update(total)
        yield ctx.get_current_key(), total


def keep_latest(pair: tuple[int, int]) -> tuple[int, int]:
    with _latest_lock:
        LATEST_SUMS[pair[0]] = pair[1]
    return pair


def summing_env(**config: str) -> StreamExecutionEnvironment:
    """Per-key sums of a rate-limited 0..SAVEPOINT_COUNT-1 (about 4 s), the latest sum per key kept."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.configure(Configuration(config))
    source = DataGeneratorSource(lambda i: i, SAVEPOINT_COUNT, 1000.0, Types.LONG())
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        .key_by(lambda v: v % SAVEPOINT_KEYS, key_type=Types.LONG())
        .process(SumPerKey()).uid("sums")
        .map(keep_latest).uid("latest")
    )
    return env


def wait_for_sums(timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(LATEST_SUMS) < SAVEPOINT_KEYS:
        assert time.monotonic() < deadline, "the job produced no sums"
        time.sleep(0.01)


def test_stop_with_savepoint_ends_the_job_and_a_restore_from_it_completes_every_sum(tmp_path: Any) -> None:
    LATEST_SUMS.clear()
    client = summing_env().execute_async("stopped")
    wait_for_sums()
    location = client.stop_with_savepoint(False, str(tmp_path / "savepoints")).result()
    assert (Path(location.removeprefix("file://")) / "_metadata").is_file(), location
    client.get_job_execution_result().result(60)
    assert client.get_job_status().result() is JobStatus.FINISHED
    stopped_at = dict(LATEST_SUMS)
    assert sum(stopped_at.values()) < sum(range(SAVEPOINT_COUNT)), "the job was not stopped before its end"
    # the rest of the numbers, from the savepoint's state and source positions
    summing_env(**{"execution.savepoint.path": location}).execute("restored")
    assert LATEST_SUMS == {k: sum(i for i in range(SAVEPOINT_COUNT) if i % SAVEPOINT_KEYS == k)
                           for k in range(SAVEPOINT_KEYS)}


def test_trigger_savepoint_leaves_the_job_running(tmp_path: Any) -> None:
    LATEST_SUMS.clear()
    client = summing_env(**{"state.savepoints.dir": f"file://{tmp_path / 'savepoints'}"}).execute_async("running")
    wait_for_sums()
    location = client.trigger_savepoint().result()  # into state.savepoints.dir
    assert location.startswith(f"file://{tmp_path / 'savepoints'}/"), location
    assert (Path(location.removeprefix("file://")) / "_metadata").is_file()
    assert client.get_job_status().result() is JobStatus.RUNNING
    client.get_job_execution_result().result(60)
    assert client.get_job_status().result() is JobStatus.FINISHED


def test_trigger_savepoint_without_a_directory_is_refused_naming_the_keys() -> None:
    LATEST_SUMS.clear()
    client = summing_env().execute_async("no directory")
    try:
        wait_for_sums()
        with pytest.raises(ConfigError, match="state.savepoints.dir"):
            client.trigger_savepoint()
    finally:
        client.cancel()


def test_a_savepoint_of_a_finished_job_is_refused(tmp_path: Any) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3], Types.INT()).map(lambda v: v + 1, Types.INT())
    client = env.execute_async("short")
    client.get_job_execution_result().result(60)
    with pytest.raises(SavepointRefused, match="FINISHED"):
        client.trigger_savepoint(str(tmp_path))
