"""`execute_async` returns PyFlink's JobClient (issue 18).

PyFlink documents `execute_async`: "Triggers the program asynchronously. ... :return: A JobClient
that can be used to communicate with the submitted job, completed on submission succeeded." and
JobClient.get_job_execution_result: "Returns the JobExecutionResult result of the job submitted to
the cluster. :return: A CompletableFuture containing the JobExecutionResult result of the job".
"""

from __future__ import annotations

from typing import Any

import pytest
from strom.common import Types
from strom.common.completable_future import CompletableFuture
from strom.common.job_client import JobClient
from strom.common.job_status import JobStatus
from strom.common.serialization import Encoder
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.file_system import StreamingFileSink


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
