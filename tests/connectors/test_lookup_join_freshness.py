"""A running lookup join (Kafka probes -> JDBC dimension table in PostgreSQL) sees a row updated in the database
only once its cache entry expired (PARTIAL) or the table was reloaded (FULL), and not before.

Each probe is a record produced to the topic and its joined row read from the job's result; the row is cached
at the first probe (no earlier than `t0`), so a probe answered before `t0 + expiry` must see the old value and
the new value cannot be answered before `t0 + expiry`. The loop waits for the new value with a deadline."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from tests.connectors.kafka_testing import kafka_fixture, produce  # noqa: F401 - the `kafka` fixture
from tests.connectors.test_jdbc_sql import pg_execute, table_env, with_options

EXPIRY_S = 2.0
CACHES = {
    "PARTIAL": {"lookup.cache": "PARTIAL", "lookup.partial-cache.expire-after-write": f"{int(EXPIRY_S * 1000)} ms",
                "lookup.partial-cache.max-rows": "100"},
    "FULL": {"lookup.cache": "FULL", "lookup.full-cache.periodic-reload.interval": f"{int(EXPIRY_S * 1000)} ms"},
}


class Results:
    """The job's rows, read on a thread of their own so that the test can wait for each with a deadline."""

    def __init__(self, iterator: Any) -> None:
        self.iterator = iterator
        self.rows: list[tuple] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for row in self.iterator:
                with self.cond:
                    self.rows.append(tuple(row))
                    self.cond.notify_all()
        except Exception:  # noqa: BLE001 - the iterator ends with an error when the test closes it
            pass

    def wait_for(self, count: int, timeout: float = 30.0) -> tuple:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.rows) >= count, timeout), f"no row {count} in {timeout} s"
            return self.rows[count - 1]


@pytest.mark.parametrize("cache", list(CACHES))
def test_an_updated_row_is_seen_after_expiry_or_reload_and_not_before(kafka, postgres, table_name, cache):
    pg_execute(postgres, f"CREATE TABLE {table_name} (id INT PRIMARY KEY, label TEXT)",
               f"INSERT INTO {table_name} VALUES (1, 'old')")
    topic = kafka.new_topic(1, "probes")
    t_env = table_env()
    t_env.execute_sql(f"CREATE TABLE probes (seq INT, k INT, pt AS PROCTIME()) WITH ('connector' = 'kafka', "
                      f"'topic' = '{topic}', 'properties.bootstrap.servers' = '{kafka.bootstrap}', "
                      "'format' = 'json', 'scan.startup.mode' = 'earliest-offset')")
    dim_options = with_options(postgres, table_name, **CACHES[cache])
    t_env.execute_sql(f"CREATE TABLE dim (id INT, label STRING) WITH ({dim_options})")
    iterator = t_env.execute_sql("SELECT p.seq, d.label FROM probes AS p JOIN dim FOR SYSTEM_TIME AS OF p.pt AS d "
                                 "ON p.k = d.id").collect()
    results = Results(iterator)
    try:
        t0 = time.monotonic()  # the cache entry (or the FULL load) is written after this
        produce(kafka.bootstrap, topic, [(0, None, json.dumps({"seq": 1, "k": 1}).encode())])
        assert results.wait_for(1) == (1, "old")
        pg_execute(postgres, f"UPDATE {table_name} SET label = 'new' WHERE id = 1")
        seq, deadline = 1, time.monotonic() + 60
        while True:
            seq += 1
            produce(kafka.bootstrap, topic, [(0, None, json.dumps({"seq": seq, "k": 1}).encode())])
            got = results.wait_for(seq)
            answered = time.monotonic()
            assert got[0] == seq
            if got[1] == "new":
                assert answered - t0 >= EXPIRY_S, f"the update was seen {answered - t0:.2f} s after the row was cached"
                break
            assert got[1] == "old"
            assert answered < deadline, "the updated row was never seen"
    finally:
        iterator.close()
