"""Reading a PostgreSQL table by key for a lookup join (Flink's JdbcRowDataLookupFunction), and all of it
for a FULL lookup cache.

One connection per thread that looks up (the task thread, or the worker threads of an async lookup join:
a psycopg connection is not shared between concurrent queries). A failed query is retried up to
`max_retries` times (Flink's `lookup.max-retries`), on a new connection when the old one broke; the last
failure names the table, the address and the option to check.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from strom.connectors.jdbc.connections import connect, first_line, is_connection_error, psycopg_module
from strom.connectors.jdbc.options import JdbcConnectionOptions
from strom.connectors.jdbc.table_statements import lookup_statement, select_statement

log = logging.getLogger(__name__)

_MAX_BACKOFF_S = 2.0


class JdbcLookupSource:
    """`lookup(key)` -> the rows (tuples of `columns`) whose `key_columns` equal `key`; `scan()` -> every row."""

    def __init__(self, connection: JdbcConnectionOptions, table_name: str, columns: Sequence[str],
                 key_columns: Sequence[str], *, max_retries: int = 3) -> None:
        self.connection = connection
        self.table_name = table_name
        self.columns = list(columns)
        self.key_columns = list(key_columns)
        self.max_retries = max_retries
        self._lookup_sql = lookup_statement(table_name, self.columns, self.key_columns)
        self._scan_sql = select_statement(table_name, self.columns)
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # shipped with the job graph: no connections
        state = dict(self.__dict__)
        for k in ("_local", "_all", "_lock"):
            state.pop(k)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        self._all = []
        self._lock = threading.Lock()

    @property
    def what(self) -> str:
        return f"lookup of JDBC table {self.table_name!r}"

    def _cursor(self) -> Any:
        """This thread's cursor (kept: a probe is one execute, no cursor set-up)."""
        cur = getattr(self._local, "cursor", None)
        if cur is None:
            conn = connect(self.connection, autocommit=True, what=self.what,
                           advice=f"the table's 'url' option {self.connection.url!r} (and 'username'/'password')")
            self._local.conn = conn
            cur = self._local.cursor = conn.cursor()
            with self._lock:
                self._all.append(conn)
        return cur

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = self._local.cursor = None
        if conn is not None:
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - broken anyway
                pass

    def open(self) -> None:
        """Connections open on first use, one per looking-up thread."""

    def lookup(self, key: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._query(self._lookup_sql, key)

    def scan(self) -> list[tuple[Any, ...]]:
        return self._query(self._scan_sql, ())

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        psycopg = psycopg_module()
        for attempt in range(self.max_retries + 1):
            try:
                cur = self._cursor()
                cur.execute(sql, params)
                return cur.fetchall()
            except (psycopg.Error, ConnectionError) as e:
                if is_connection_error(e):
                    self._drop_connection()
                if attempt >= self.max_retries:
                    address = self.connection.address().describe()
                    raise ConnectionError(
                        f"{self.what} at {address} failed after {self.max_retries} retries ({first_line(e)}); "
                        "check the table's 'url', 'table-name' and key columns, or raise 'lookup.max-retries'"
                    ) from e
                pause = min(_MAX_BACKOFF_S, 0.1 * 2**attempt)
                log.warning("%s failed (%s); retry %d of %d in %.1f s", self.what, first_line(e), attempt + 1,
                            self.max_retries, pause)
                time.sleep(pause)
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing anyway
                pass
