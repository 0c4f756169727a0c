"""`TableResult` (PyFlink's): the outcome of execute_sql / Table.execute: rows to collect or print, the
job's client for INSERT and queries, and the result kind."""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Any

from strom.table import tableau
from strom.table.schema import TableSchema
from strom.table.types import DataType


class ResultKind(Enum):
    SUCCESS = 0
    SUCCESS_WITH_CONTENT = 1


class _ListIterator(Iterator[Any]):
    """A finished result's rows, closeable like a job's result iterator."""

    def __init__(self, rows: list[Any]) -> None:
        self._it = iter(rows)

    def __next__(self) -> Any:
        return next(self._it)

    def close(self) -> None:
        pass

    def __enter__(self) -> _ListIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class TableResult:
    def __init__(
        self,
        columns: list[tuple[str, DataType]],
        kind: ResultKind,
        *,
        rows: list[Any] | None = None,
        start: Any = None,
        streaming: bool = False,
        job_client: Any = None,
    ) -> None:
        self._columns = columns
        self._kind = kind
        self._rows = rows
        self._start = start  # () -> a closeable row iterator (starts the job); at most once
        self._streaming = streaming
        self._job_client = job_client
        self._consumed = False

    def get_result_kind(self) -> ResultKind:
        return self._kind

    def get_table_schema(self) -> TableSchema:
        return TableSchema([n for n, _ in self._columns], [t for _, t in self._columns])

    def get_job_client(self) -> Any:
        return self._job_client

    def collect(self) -> Any:
        """The result rows (each carries its RowKind); a query's job starts here."""
        if self._rows is not None:
            return _ListIterator(self._rows)
        if self._consumed:
            raise RuntimeError("this TableResult was already collected or printed; a query's rows are read once")
        self._consumed = True
        return self._start()

    def wait(self, timeout_ms: int | None = None) -> None:
        """Block until an INSERT's job finished (re-raising its failure)."""
        if self._job_client is not None:
            self._job_client.wait(None if timeout_ms is None else timeout_ms / 1000)

    def print(self) -> None:
        if self._rows is not None:  # DDL, SHOW, DESCRIBE, INSERT: a finished result, sized by content
            tableau.print_batch(self._columns, self._rows)
            return
        with self.collect() as rows:
            if self._streaming:
                tableau.print_streaming(self._columns, rows)
            else:
                tableau.print_batch(self._columns, rows)
