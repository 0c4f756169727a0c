"""`'connector' = 'jdbc'`: a PostgreSQL table as a bounded scan source, an append or upsert sink, and a
lookup table (Flink's JDBC SQL connector options; psycopg underneath, as the DataStream JdbcSink).

    url, table-name                  required; url is jdbc:postgresql://host:port/db
    username, password, driver       driver is accepted and ignored (psycopg speaks to PostgreSQL only)
    scan.partition.column/.num/.lower-bound/.upper-bound   all four or none; scan.fetch-size
    sink.buffer-flush.max-rows (100), sink.buffer-flush.interval (1 s), sink.max-retries (3), sink.parallelism
    lookup.cache NONE | PARTIAL | FULL and the lookup.* options (planner/lookup_cache.py), lookup.max-retries

With PRIMARY KEY the sink upserts (INSERT .. ON CONFLICT (key) DO UPDATE, DELETE for -D); without one it
appends and refuses an updating query.
"""

from __future__ import annotations

from typing import Any

from strom.common.config_options import parse_duration_ms
from strom.common.row import make_row
from strom.common.watermark_strategy import WatermarkStrategy
from strom.table.connectors.registry import ConnectorFactory, LookupFunction, SinkMode, TableContext, register
from strom.table.planner.lookup_cache import CACHE_OPTIONS, LookupOptions

_PARTITION = ("scan.partition.column", "scan.partition.num", "scan.partition.lower-bound",
              "scan.partition.upper-bound")


def connection_options(ctx: TableContext) -> Any:
    from strom.connectors.jdbc.options import JdbcConnectionOptions
    from strom.connectors.jdbc.urls import parse_jdbc_url

    url = ctx.options["url"]
    try:
        parse_jdbc_url(url)
    except ValueError as e:
        raise ctx.error(f"option 'url': {e}") from None
    return JdbcConnectionOptions(url=url, driver_name=ctx.options.get("driver"), user_name=ctx.options.get("username"),
                                 password=ctx.options.get("password"))


class _RowMaker:
    """A fetched tuple -> a Row of the table's columns (picklable: it ships with the source)."""

    def __init__(self, names: list[str]) -> None:
        self.names = tuple(names)

    def __call__(self, values: tuple[Any, ...]) -> Any:
        return make_row(values, self.names)


class JdbcFactory(ConnectorFactory):
    identifier = "jdbc"

    def required_options(self, ctx: TableContext) -> set[str]:
        return {"url", "table-name"}

    def optional_options(self, ctx: TableContext) -> set[str]:
        return {"username", "password", "driver", "connection.max-retry-timeout", "scan.fetch-size",
                "scan.auto-commit", "sink.buffer-flush.max-rows", "sink.buffer-flush.interval", "sink.max-retries",
                "sink.parallelism", *_PARTITION, *CACHE_OPTIONS}

    def validate(self, ctx: TableContext) -> None:
        connection_options(ctx)
        given = [k for k in _PARTITION if k in ctx.options]
        if given and len(given) != len(_PARTITION):
            missing = [k for k in _PARTITION if k not in ctx.options]
            raise ctx.error(f"option {given[0]!r} needs {', '.join(repr(m) for m in missing)} too "
                            "(the partitioned scan takes all four scan.partition.* options)")
        if given:
            column = ctx.options["scan.partition.column"]
            if column not in ctx.column_names():
                raise ctx.error(f"option 'scan.partition.column': {column!r} is not a column "
                                f"(columns: {', '.join(ctx.column_names())})")
            num = ctx.int_option("scan.partition.num")
            lower = ctx.int_option("scan.partition.lower-bound")
            upper = ctx.int_option("scan.partition.upper-bound")
            assert num is not None and lower is not None and upper is not None
            if num < 1 or upper < lower:
                raise ctx.error("'scan.partition.num' must be >= 1 and 'scan.partition.upper-bound' >= "
                                f"'scan.partition.lower-bound' (got {num}, [{lower}, {upper}])")
        for key in ("sink.buffer-flush.max-rows", "sink.max-retries", "scan.fetch-size"):
            value = ctx.int_option(key)
            if value is not None and value < 0:
                raise ctx.error(f"option {key!r} must be >= 0, got {value}")
        self._interval_ms(ctx)
        LookupOptions.parse(ctx.name, ctx.options)

    @staticmethod
    def _interval_ms(ctx: TableContext) -> int:
        value = ctx.options.get("sink.buffer-flush.interval", "1 s")
        try:
            return parse_duration_ms(value)
        except ValueError:
            raise ctx.error(f"option 'sink.buffer-flush.interval' must be a duration such as '1 s', got {value!r}") \
                from None

    def is_bounded(self, ctx: TableContext) -> bool:
        return True

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        from strom.connectors.jdbc.scan import JdbcScanSource

        partition = None
        if "scan.partition.column" in ctx.options:
            partition = (ctx.options["scan.partition.column"], ctx.int_option("scan.partition.num") or 1,
                         ctx.int_option("scan.partition.lower-bound") or 0,
                         ctx.int_option("scan.partition.upper-bound") or 0)
        src = JdbcScanSource(connection_options(ctx), ctx.options["table-name"], ctx.column_names(),
                             _RowMaker(ctx.column_names()), partition=partition,
                             fetch_size=ctx.int_option("scan.fetch-size") or 1000)
        return env.from_source(src, WatermarkStrategy.no_watermarks(), f"TableSourceScan[{ctx.display_name}]").uid(uid)

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.UPSERT if ctx.primary_key else SinkMode.INSERT_ONLY

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        from strom.connectors.jdbc.table_sink import JdbcTableSink

        sink = JdbcTableSink(connection_options(ctx), ctx.options["table-name"], ctx.column_names(),
                             list(ctx.primary_key), max_rows=ctx.int_option("sink.buffer-flush.max-rows", 100) or 1,
                             interval_ms=self._interval_ms(ctx), max_retries=ctx.int_option("sink.max-retries", 3) or 0)
        if ctx.primary_key:
            # Flink keys an upsert sink's input by the primary key: one subtask writes each key, in order
            names = ctx.column_names()
            idx = tuple(names.index(k) for k in ctx.primary_key)
            ds = ds.key_by(lambda row, i=idx: tuple(row[j] for j in i))
        out = ds.sink_to(sink).name(f"Sink[{ctx.display_name}]").uid(uid)
        parallelism = ctx.int_option("sink.parallelism")
        if parallelism is not None:
            out.set_parallelism(parallelism)
        return out

    def lookup_function(self, ctx: TableContext, key_columns: list[str]) -> LookupFunction:
        from strom.connectors.jdbc.lookup import JdbcLookupSource

        options = LookupOptions.parse(ctx.name, ctx.options)
        return JdbcLookupSource(connection_options(ctx), ctx.options["table-name"], ctx.column_names(), key_columns,
                                max_retries=options.max_retries)


register(JdbcFactory())
