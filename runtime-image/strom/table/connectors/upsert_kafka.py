"""`'connector' = 'upsert-kafka'`: a compacted topic as a table keyed by its PRIMARY KEY (Flink's
upsert-kafka connector).

Reading: a record with a value is an upsert of its key, a null value (tombstone) a delete. Flink's
ChangelogNormalize turns that into a proper changelog with keyed state holding each key's last row:
the first row of a key is +I, a different later one -U(previous) +U(new), an identical one nothing, a
tombstone -D(previous) (nothing for a key never seen). The topic is always read from the earliest offset.

Writing: +I/+U are records under the key, -D a tombstone, and so is a -U (the planner drops -U before an
upsert sink except after a filtering Calc, where it is the only sign the key's row is gone); rows are keyed by
the primary key before the sink so that one subtask writes a key's changes in order, and one partition
(the key's hash) keeps them.

Options: kafka.py's, without scan.startup.*; `key.format` and `value.format` are required, `key.fields`
is the primary key; `value.fields-include` ALL (default) or EXCEPT_KEY.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from strom.common.row import RowKind
from strom.common.typeinfo import Types
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.connectors.kafka import KafkaFactory, Layout, layout
from strom.table.connectors.registry import SinkMode, TableContext, register
from strom.table.planner.rows import make_row


class ChangelogNormalize(KeyedProcessFunction):
    """Upserts and deletes by key -> +I / -U +U / -D, from each key's last row in keyed state."""

    def __init__(self, names: list[str]) -> None:
        self.names = tuple(names)

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("changelog-normalize", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:  # hot path: called per record
        previous = self.state.value()
        if value.get_row_kind() in (RowKind.DELETE, RowKind.UPDATE_BEFORE):
            if previous is not None:
                self.state.clear()
                yield make_row(previous, self.names, RowKind.DELETE)
            return
        row = tuple(value)
        if previous is None:
            self.state.update(row)
            yield make_row(row, self.names, RowKind.INSERT)
        elif previous != row:
            self.state.update(row)
            yield make_row(previous, self.names, RowKind.UPDATE_BEFORE)
            yield make_row(row, self.names, RowKind.UPDATE_AFTER)


class _PrimaryKey:
    def __init__(self, indexes: list[int]) -> None:
        self.indexes = indexes

    def __call__(self, row: Any) -> tuple[Any, ...]:  # hot path: called per record
        return tuple(row[i] for i in self.indexes)


class UpsertKafkaFactory(KafkaFactory):
    identifier = "upsert-kafka"
    bounded_hint = " (upsert-kafka tables are unbounded; set 'scan.bounded.mode')"
    upsert = True

    def required_options(self, ctx: TableContext) -> set[str]:
        return {"properties.bootstrap.servers", "topic", "key.format", "value.format"}

    def optional_options(self, ctx: TableContext) -> set[str]:
        return {o for o in super().optional_options(ctx)
                if not o.startswith("scan.startup.") and o not in ("format", "key.fields", "topic-pattern")}

    def key_fields(self, ctx: TableContext) -> list[str]:
        return list(ctx.primary_key)

    def layout(self, ctx: TableContext) -> Layout:
        return layout(ctx, self.key_fields(ctx))

    def validate(self, ctx: TableContext) -> None:
        if not ctx.primary_key:
            raise ctx.error("'upsert-kafka' tables require to define a PRIMARY KEY constraint: the primary key "
                            "columns are the record key (PRIMARY KEY (id) NOT ENFORCED)")
        super().validate(ctx)

    def _starting(self, ctx: TableContext) -> Any:
        from strom.connectors.kafka.offsets import KafkaOffsetsInitializer

        return KafkaOffsetsInitializer.earliest()

    def source_is_updating(self, ctx: TableContext) -> bool:
        return True

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        names = ctx.column_names()
        ds = env.from_source(self.kafka_source(ctx), WatermarkStrategy.no_watermarks(),
                             f"TableSourceScan[{ctx.display_name}]").uid(uid)
        key = _PrimaryKey([names.index(k) for k in ctx.primary_key])
        return ds.key_by(key).process(ChangelogNormalize(names)).name(
            f"ChangelogNormalize(key=[{', '.join(ctx.primary_key)}])").uid(uid + "-changelog-normalize")

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.UPSERT

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        names = ctx.column_names()
        keyed = ds.key_by(_PrimaryKey([names.index(k) for k in ctx.primary_key]))
        out = keyed.sink_to(self.kafka_sink(ctx)).name(f"Sink[{ctx.display_name}]").uid(uid)
        parallelism = ctx.int_option("sink.parallelism")
        if parallelism is not None:
            out.set_parallelism(parallelism)
        return out


register(UpsertKafkaFactory())
