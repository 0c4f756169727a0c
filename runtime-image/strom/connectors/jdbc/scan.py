"""Reading a PostgreSQL table once (the bounded scan of a SQL JDBC table, Flink's JdbcRowDataInputFormat).

Without `scan.partition.*` the table is one split; with them the partition column's range is cut into
`scan.partition.num` splits (the bounds decide the stride only: rows outside them are read by the first
and last split, as in Flink). Subtask i of p reads splits i, i + p, ... through a server-side cursor,
`scan.fetch-size` rows at a time. The scan is not resumed from a checkpoint: a bounded read is replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from strom.connectors.base import Boundedness, IteratorReader, Source, SourceReader, SourceReaderContext
from strom.connectors.jdbc.connections import connect
from strom.connectors.jdbc.options import JdbcConnectionOptions
from strom.connectors.jdbc.table_statements import partition_ranges, partition_where, select_statement


class JdbcScanSource(Source):
    name = "JdbcScanSource"

    def __init__(self, connection: JdbcConnectionOptions, table_name: str, columns: Sequence[str],
                 make_record: Callable[[tuple[Any, ...]], Any], *, partition: tuple[str, int, int, int] | None = None,
                 fetch_size: int = 1000) -> None:
        self.connection = connection
        self.table_name = table_name
        self.columns = list(columns)
        self.make_record = make_record
        self.fetch_size = fetch_size
        if partition is None:
            self.queries = [select_statement(table_name, self.columns)]
        else:
            column, num, lower, upper = partition
            ranges = partition_ranges(lower, upper, num)
            self.queries = [select_statement(table_name, self.columns, partition_where(column, i, ranges))
                            for i in range(len(ranges))]

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        mine = self.queries[context.subtask_index::context.parallelism]
        return IteratorReader(self._rows(mine, f"scan of JDBC table {self.table_name!r} "
                                               f"(subtask {context.subtask_index + 1}/{context.parallelism})"))

    def _rows(self, queries: list[str], what: str) -> Iterator[Any]:
        if not queries:
            return
        conn = connect(self.connection, autocommit=False, what=what,
                       advice=f"the table's 'url' option {self.connection.url!r} (and 'username'/'password')")
        try:
            for i, sql in enumerate(queries):
                with conn.cursor(name=f"strom_scan_{i}") as cur:
                    cur.itersize = self.fetch_size
                    cur.execute(sql)
                    for row in cur:
                        yield self.make_record(row)
            conn.commit()
        finally:
            conn.close()
