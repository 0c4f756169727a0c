"""Nexmark queries on the local cluster under Flink's conditions (benchmarks/nexmark/flink_conditions.py):
2 TaskManagers x 1 slot in slot processes, RocksDB, exactly-once checkpoints, so keyed exchanges carry the
Nexmark records (NamedTuples) between processes over TCP. Each query's output against its plain-Python
reference, as in test_queries.py (which runs in one process, where no record is serialized).
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from strom.connectors.base import SourceReaderContext
from strom.connectors.nexmark import NexmarkConfig, NexmarkSource
from strom.datastream import SinkFunction
from strom.runtime.minicluster import MiniCluster

from benchmarks.nexmark.flink_conditions import flink_conf, start_cluster
from benchmarks.nexmark.reference import REFERENCES
from benchmarks.nexmark.runner import query_stream

CONFIG = NexmarkConfig(events=6000, event_rate=200, base_time=1_704_153_590_000)  # as test_queries.py


class RowsToFile(SinkFunction):
    """Each subtask pickles what reached it into a file of its own when its input ends (the slot processes
    share no memory with the test)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def open(self, runtime_context: Any) -> None:
        self.rows: list[Any] = []
        self.index = runtime_context.get_index_of_this_subtask()

    def invoke(self, value: Any, context: Any) -> None:
        self.rows.append(tuple(value))

    def finish(self) -> None:
        with open(os.path.join(self.directory, f"rows-{self.index}"), "wb") as f:
            pickle.dump(self.rows, f)


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniCluster]:
    c = start_cluster(2)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def events() -> list[Any]:
    reader = NexmarkSource(CONFIG).create_reader(SourceReaderContext(0, 1))
    out: list[Any] = []
    while (batch := reader.poll(1000)) is not None:
        out += batch
    return out


def run_on_cluster(cluster: MiniCluster, query: str) -> list[tuple[Any, ...]]:
    with tempfile.TemporaryDirectory(prefix="nexmark-cluster-test-") as directory:
        stream = query_stream(query, CONFIG, parallelism=2, conf=flink_conf(f"{directory}/chk", 180_000))
        os.mkdir(f"{directory}/rows")
        stream.add_sink(RowsToFile(f"{directory}/rows")).name("rows")
        graph = stream.get_execution_environment().get_stream_graph(f"nexmark-{query}-cluster-test")
        cluster.executor().start_job(graph).wait()
        rows: list[tuple[Any, ...]] = []
        for name in os.listdir(f"{directory}/rows"):
            with open(f"{directory}/rows/{name}", "rb") as f:
                rows += pickle.load(f)
        return rows


@pytest.mark.parametrize("query", ["q3", "q8", "q11"])
def test_query_across_slot_processes_matches_its_reference(cluster, events, query):
    """q3 and q8 join Persons with Auctions, q11 counts sessions of Bids: all three key_by Nexmark records
    into the other slot process."""
    expected = Counter(tuple(row) for row in REFERENCES[query](events))
    assert expected, f"{query}: the reference is empty, the comparison would prove nothing"
    assert Counter(run_on_cluster(cluster, query)) == expected
