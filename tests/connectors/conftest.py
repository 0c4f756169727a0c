"""Fixtures of the connector tests: a PostgreSQL server for the JDBC tests (one per session)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

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

