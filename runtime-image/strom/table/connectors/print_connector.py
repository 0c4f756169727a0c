"""`'connector' = 'print'`: every changelog row printed as Flink's print connector prints it
(`+I[Mary, 1]`, with `print-identifier> ` in front when set) to stdout, or stderr with
`standard-error`; `sink.parallelism` sets the sink's parallelism. It consumes the whole changelog."""

from __future__ import annotations

from typing import Any

from strom.common.row import Row
from strom.table.connectors.registry import ConnectorFactory, SinkMode, TableContext, register
from strom.table.planner.values import java_string

_SHORT = ("+I", "-U", "+U", "-D")


def changelog_string(row: Row) -> str:
    """A row as Flink's print connector prints it: `+I[Mary, 1]`."""
    return f"{_SHORT[row.get_row_kind().value]}[{', '.join(java_string(v) for v in row)}]"


class PrintFactory(ConnectorFactory):
    identifier = "print"

    def optional_options(self, ctx: TableContext) -> set[str]:
        return {"print-identifier", "standard-error", "sink.parallelism"}

    def validate(self, ctx: TableContext) -> None:
        ctx.bool_option("standard-error", False)
        ctx.int_option("sink.parallelism")

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.ALL

    def build_sink(self, ctx: TableContext, ds: Any, uid: str) -> Any:
        mapped = ds.map(changelog_string).name("PrintFormat").uid(uid + "-format")
        identifier = ctx.options.get("print-identifier")
        if ctx.bool_option("standard-error", False):
            sink = mapped.print_to_err(identifier)
        else:
            sink = mapped.print(identifier)
        sink.uid(uid)
        parallelism = ctx.int_option("sink.parallelism")
        if parallelism is not None:
            sink.set_parallelism(parallelism)
        return sink


register(PrintFactory())
