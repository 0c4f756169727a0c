"""What an INSERT's changelog becomes on its way into a sink, as Flink's planner decides it.

* A sink that consumes inserts only (INSERT_ONLY) refuses an updating query with Flink's message
  ("Table sink '...' doesn't support consuming update changes which is produced by node ...").
* An upsert sink (UPSERT: the table has a PRIMARY KEY and the connector writes by key) receives +I, +U
  and -D; -U rows are dropped, since the +U that follows overwrites the key — unless a Calc with a
  condition sits between the updating node and the sink: the condition may drop the +U (a group that
  stops meeting a HAVING) and then only the -U says the key's row is gone, so Flink keeps it (FLINK-9528;
  FlinkChangelogModeInferenceProgram requires UPDATE_BEFORE from a filtering Calc) and the sink deletes
  the key on it.
* When the query's upsert key is not contained in the sink's primary key (or the query has none), rows
  of one sink key may come from several query keys, so a -D or +U of one would overwrite another's row:
  Flink then puts a SinkUpsertMaterializer before the sink (`table.exec.sink.upsert-materialize` =
  AUTO, the default; FORCE always, NONE never). It keeps, per sink key, the rows currently alive in
  arrival order; an addition emits +I (first) or +U of the row; a retraction removes a matching row and,
  if it was the newest, emits +U of the new newest or -D when none is left; an older row's retraction
  emits nothing.
* A sink that consumes everything (ALL: print, blackhole) gets the changelog unchanged.

`upsert_keys(node)` derives the query's unique keys (output positions) as Flink's FlinkRelMdUpsertKeys
does for the nodes Strom plans: group aggregation (its group keys), deduplication and Top-1 (the
partition), Top-N with the rank column (partition + rank), and a Calc passing key columns through.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor
from strom.table.connectors.registry import SinkMode
from strom.table.errors import TableException, ValidationException
from strom.table.planner.plan import CalcNode, GroupAggregateNode, PlanNode, RankNode
from strom.table.planner.rows import make_row

UPSERT_MATERIALIZE = "table.exec.sink.upsert-materialize"
_MODES = ("NONE", "AUTO", "FORCE")


def upsert_keys(node: PlanNode) -> list[frozenset[int]]:
    """The query's unique keys as sets of output positions (empty list: none known)."""
    if isinstance(node, GroupAggregateNode):
        return [frozenset(range(len(node.keys)))]
    if isinstance(node, RankNode):
        if node.deduplicate is not None or node.rank_end == 1:
            return [frozenset(node.partition)]
        if node.output_rank:
            return [frozenset([*node.partition, len(node.columns) - 1])]
        return []
    if isinstance(node, CalcNode) and node.input is not None:
        names = node.input.names()
        out: list[frozenset[int]] = []
        for key in upsert_keys(node.input):
            positions = []
            for k in key:
                hits = [i for i, e in enumerate(node.projections) if e.op == "col" and e.name == names[k]]
                if not hits:
                    break
                positions.append(hits[0])
            else:
                out.append(frozenset(positions))
        return out
    return []


@dataclass(frozen=True)
class SinkChangelogPlan:
    drop_update_before: bool
    materialize_keys: tuple[int, ...] | None  # sink key positions to materialize by; None: no materializer


def plan_sink_changelog(node: PlanNode, *, sink_name: str, mode: SinkMode, sink_columns: list[str],
                        primary_key: tuple[str, ...], materialize: str) -> SinkChangelogPlan:
    strategy = materialize.upper()
    if strategy not in _MODES:
        raise ValidationException(f"{UPSERT_MATERIALIZE} must be one of {', '.join(_MODES)}, got {materialize!r}")
    if mode is SinkMode.ALL:
        return SinkChangelogPlan(False, None)
    if mode is SinkMode.INSERT_ONLY:
        if node.updating:
            raise TableException(
                f"Table sink '{sink_name}' doesn't support consuming update changes which is produced by node "
                f"{_updating_node(node).describe()}")
        return SinkChangelogPlan(False, None)
    pk = tuple(sink_columns.index(k) for k in primary_key)
    if strategy == "FORCE":
        return SinkChangelogPlan(True, pk)
    if strategy == "NONE" or not node.updating:
        return SinkChangelogPlan(not _filters_updates(node), None)
    covered = any(key <= set(pk) for key in upsert_keys(node))
    if covered:
        return SinkChangelogPlan(not _filters_updates(node), None)
    return SinkChangelogPlan(True, pk)  # the materializer turns -U into +U/-D itself


def _filters_updates(node: PlanNode) -> bool:
    """A Calc with a condition between the sink and the node producing the updates."""
    while isinstance(node, CalcNode) and node.input is not None and node.updating:
        if node.condition is not None:
            return True
        node = node.input
    return False


def _updating_node(node: PlanNode) -> PlanNode:
    for i in node.inputs:
        if i.updating:
            return _updating_node(i)
    return node


class SinkUpsertMaterializer(KeyedProcessFunction):
    """Keyed by the sink's primary key: the rows alive for the key, newest last (see the module doc)."""

    def __init__(self, names: list[str]) -> None:
        self.names = tuple(names)

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("sink-materializer", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Row]:
        rows: list[tuple[Any, ...]] = self.state.value() or []
        values = tuple(value)
        kind = value.get_row_kind()
        if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
            rows.append(values)
            self.state.update(rows)
            yield make_row(values, self.names, RowKind.INSERT if len(rows) == 1 else RowKind.UPDATE_AFTER)
            return
        for i in range(len(rows) - 1, -1, -1):
            if rows[i] == values:
                was_newest = i == len(rows) - 1
                del rows[i]
                break
        else:
            return  # retraction of a row never seen (e.g. expired state): ignored, as Flink logs and skips
        self.state.update(rows or None)
        if was_newest:
            if rows:
                yield make_row(rows[-1], self.names, RowKind.UPDATE_AFTER)
            else:
                yield make_row(values, self.names, RowKind.DELETE)


def _not_update_before(row: Any) -> bool:
    return row.get_row_kind() is not RowKind.UPDATE_BEFORE


def apply_sink_changelog(ds: Any, plan: SinkChangelogPlan, names: list[str], uid: str) -> Any:
    """The stream as the sink consumes it (DataStream -> DataStream)."""
    if plan.materialize_keys is not None:
        keys = plan.materialize_keys
        keyed = ds.key_by(lambda row, k=keys: tuple(row[i] for i in k))
        ds = keyed.process(SinkUpsertMaterializer(names)).name("SinkUpsertMaterializer").uid(uid + "-materializer")
    if plan.drop_update_before:
        ds = ds.filter(_not_update_before).name("DropUpdateBefore").uid(uid + "-drop-update-before")
    return ds
