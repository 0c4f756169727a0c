"""`'connector' = 'blackhole'`: swallows every row, the whole changelog (for benchmarks)."""

from __future__ import annotations

from typing import Any

from strom.datastream.functions import SinkFunction
from strom.table.connectors.registry import ConnectorFactory, SinkMode, TableContext, register


class BlackHoleSink(SinkFunction):
    def invoke(self, value: Any, context: Any) -> None:
        pass


class BlackHoleFactory(ConnectorFactory):
    identifier = "blackhole"

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.ALL

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        return ds.add_sink(BlackHoleSink()).name("BlackHole").uid(uid)


register(BlackHoleFactory())
