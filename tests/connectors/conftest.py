"""Fixtures of the connector tests: a PostgreSQL server for the JDBC tests (one per session), and a
check that a Kafka test leaves no consumer open."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.connectors.kafka_testing import open_consumers, producers
from tests.connectors.postgres_server import DSN_ENV, LocalPostgres, PostgresServer, find_bin_dir


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    dsn = os.environ.get(DSN_ENV)
    if dsn:
        yield PostgresServer.from_dsn(dsn)
        return
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(f"no PostgreSQL binaries (initdb, postgres): install Debian's postgresql package or set {DSN_ENV}")
    server = LocalPostgres(bin_dir)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def table_name() -> str:
    """A table name of this test alone (tests may share an existing server)."""
    return f"t_{uuid.uuid4().hex[:12]}"



@pytest.fixture(autouse=True)
def no_kafka_client_left_open(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test using the `kafka` fixture must close every consumer it (or the job it ran) opened and drop
    every producer: one left keeps reconnecting to the test's cluster for the rest of the run. Open
    consumers are closed, then the test fails naming how many clients were left."""
    if "kafka" not in request.fixturenames:
        yield
        return
    before = {id(c) for c in open_consumers()}
    producers_before = {id(p) for p in producers()}
    yield
    leaked = [c for c in open_consumers() if id(c) not in before]
    for consumer in leaked:
        consumer.close()
    kept = [p for p in producers() if id(p) not in producers_before]
    if leaked or kept:
        pytest.fail(
            f"{len(leaked)} Kafka consumer(s) left open, {len(kept)} producer(s) still referenced; "
            "close readers, writers and consumers in a finally"
        )
