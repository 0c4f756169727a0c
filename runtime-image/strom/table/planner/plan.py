"""Logical plan nodes, shared by the Table API and SQL.

A node knows its output columns (name, DataType) and whether it produces an updating changelog
(-U/+U/-D) or inserts only, as Flink's planner infers changelog modes. `digest()` describes the node
and its inputs; operator uids derive from it, so the same query gets the same uids (savepoint restore).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from strom.table.expressions import Expression
from strom.table.types import DataType

Columns = list[tuple[str, DataType]]


@dataclass(eq=False)
class PlanNode:
    columns: Columns

    @property
    def inputs(self) -> list[PlanNode]:
        return []

    @property
    def updating(self) -> bool:
        return any(i.updating for i in self.inputs)

    def names(self) -> list[str]:
        return [n for n, _ in self.columns]

    def describe(self) -> str:
        raise NotImplementedError

    def digest(self) -> str:
        """The node over its inputs as an indented tree (EXPLAIN prints it; uids hash it)."""
        lines = [self.describe()]
        for i in self.inputs:
            child = i.digest().splitlines()
            lines += ["+- " + child[0]] + ["   " + line for line in child[1:]]
        return "\n".join(lines)

    def uid(self, kind: str) -> str:
        return f"{kind}_{hashlib.sha1(self.digest().encode()).hexdigest()[:16]}"


@dataclass(eq=False)
class SourceNode(PlanNode):
    """A table's rows: `elements` (from_elements) or a connector (`options` of CREATE TABLE)."""

    table_name: str = ""
    elements: list[tuple[Any, ...]] | None = None
    options: dict[str, str] = field(default_factory=dict)
    primary_key: tuple[str, ...] = ()  # the table's PRIMARY KEY (.. ) NOT ENFORCED
    partition_keys: tuple[str, ...] = ()  # PARTITIONED BY (..)
    changelog: bool = False  # the connector reads an updating changelog (upsert-kafka)

    @property
    def updating(self) -> bool:
        return self.changelog

    def describe(self) -> str:
        cols = ", ".join(f"{n} {t}" for n, t in self.columns)
        if self.elements is not None:
            return f"Values(table=[{self.table_name}], rows={len(self.elements)}, schema=[{cols}])"
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        keys = f", primary-key=[{', '.join(self.primary_key)}]" if self.primary_key else ""
        keys += f", partitioned-by=[{', '.join(self.partition_keys)}]" if self.partition_keys else ""
        keys += ", changelog=[updating]" if self.changelog else ""
        return f"TableSourceScan(table=[{self.table_name}], schema=[{cols}], options=[{opts}]{keys})"


@dataclass(eq=False)
class CalcNode(PlanNode):
    """Projection and filter in one step (Flink's Calc): keeps each row's RowKind."""

    input: PlanNode | None = None
    projections: list[Expression] = field(default_factory=list)
    condition: Expression | None = None

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    def describe(self) -> str:
        select = ", ".join(f"{e.sql()} AS {n}" for e, (n, _) in zip(self.projections, self.columns, strict=True))
        where = f", where=[{self.condition.sql()}]" if self.condition is not None else ""
        return f"Calc(select=[{select}]{where})"


@dataclass(frozen=True)
class AggCall:
    function: str  # count, sum, avg, min, max
    arg: int | None  # input column index; None for COUNT(*)
    distinct: bool
    data_type: DataType
    text: str  # the call as written, for digests and messages
    udaf: Any = None  # function "udaf": the Python AggregateFunction's wrapper; arg is a tuple of its arguments


@dataclass(eq=False)
class GroupAggregateNode(PlanNode):
    """GROUP BY keys (input column indexes) with aggregate calls; output = keys then aggregate values.
    Streaming: an updating changelog (+I, then -U/+U per change, -D when a group empties)."""

    input: PlanNode | None = None
    keys: list[int] = field(default_factory=list)
    aggs: list[AggCall] = field(default_factory=list)
    final_only: bool = False  # BATCH: one +I per group at the end of the input

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    @property
    def updating(self) -> bool:
        return not self.final_only

    def describe(self) -> str:
        assert self.input is not None
        in_names = self.input.names()
        group = ", ".join(in_names[k] for k in self.keys)
        select = ", ".join([in_names[k] for k in self.keys] + [f"{a.text} AS {n}" for a, (n, _) in zip(
            self.aggs, self.columns[len(self.keys):], strict=True)])
        return f"GroupAggregate(groupBy=[{group}], select=[{select}])"


@dataclass(eq=False)
class UnionAllNode(PlanNode):
    """UNION ALL: the inputs' rows (and RowKinds) merged; the columns are the first input's."""

    union_inputs: list[PlanNode] = field(default_factory=list)

    @property
    def inputs(self) -> list[PlanNode]:
        return list(self.union_inputs)

    def describe(self) -> str:
        return f"Union(all=[true], union=[{', '.join(self.names())}])"


@dataclass(eq=False)
class WatermarkAssignerNode(PlanNode):
    """`WATERMARK FOR rowtime AS expr`: records get the rowtime column's value as their timestamp and the
    watermark is `expr` over the highest row seen (Flink's WatermarkAssigner); the column is ROWTIME."""

    input: PlanNode | None = None
    rowtime: int = 0
    watermark: Expression | None = None
    batch: bool = False  # BATCH: timestamps only, no watermarks before the end of the input

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    def describe(self) -> str:
        assert self.watermark is not None
        return f"WatermarkAssigner(rowtime=[{self.names()[self.rowtime]}], watermark=[{self.watermark.sql()}])"


@dataclass(eq=False)
class DataStreamScanNode(PlanNode):
    """A DataStream's records as rows (from_data_stream); `metadata_rowtime` columns read the record's
    timestamp (column_by_metadata('rowtime', ...))."""

    stream: Any = None
    physical: list[str] = field(default_factory=list)  # field names read from each record, in order
    metadata_rowtime: list[int] = field(default_factory=list)  # output indexes filled with the record timestamp
    changelog: bool = False  # from_changelog_stream: the records' RowKinds are kept (+I, -U, +U, -D)

    @property
    def updating(self) -> bool:
        return self.changelog

    def describe(self) -> str:
        cols = ", ".join(f"{n} {t}" for n, t in self.columns)
        mode = ", changelogMode=[I,UB,UA,D]" if self.changelog else ""
        return f"DataStreamScan(id=[{self.stream._t.id}], schema=[{cols}]{mode})"


@dataclass(frozen=True)
class WindowSpec:
    """An event- or processing-time window of a window TVF or group window; sizes in milliseconds."""

    kind: str  # TUMBLE, HOP, CUMULATE, SESSION
    size: int  # SESSION: the gap
    slide: int | None = None  # HOP's slide, CUMULATE's step
    event_time: bool = True
    partition: tuple[str, ...] = ()  # SESSION's PARTITION BY columns (the window aggregation must group by them)

    def describe(self) -> str:
        if self.kind == "SESSION":
            part = f"partitionBy=[{', '.join(self.partition)}], " if self.partition else ""
            return f"SESSION({part}gap=[{self.size} ms], {'rowtime' if self.event_time else 'proctime'})"
        slide = {"HOP": f", slide=[{self.slide} ms]", "CUMULATE": f", step=[{self.slide} ms]"}.get(self.kind, "")
        return f"{self.kind}(size=[{self.size} ms]{slide}, {'rowtime' if self.event_time else 'proctime'})"


@dataclass(eq=False)
class WindowAggregateNode(PlanNode):
    """Window aggregation: per key and window, one final +I row when the watermark passes the window's end
    (insert-only; late rows dropped). Output = keys, aggregate values, window_start, window_end, window_time."""

    input: PlanNode | None = None
    window: WindowSpec | None = None
    keys: list[int] = field(default_factory=list)
    aggs: list[AggCall] = field(default_factory=list)

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    @property
    def updating(self) -> bool:
        return False

    def describe(self) -> str:
        assert self.input is not None and self.window is not None
        in_names = self.input.names()
        group = ", ".join(in_names[k] for k in self.keys)
        aggs = ", ".join(a.text for a in self.aggs)
        return f"WindowAggregate(groupBy=[{group}], window=[{self.window.describe()}], select=[{aggs}])"


@dataclass(eq=False)
class WindowTableFunctionNode(PlanNode):
    """A window TVF's rows without aggregation: each row once per window it falls in, with the window's
    columns appended (HOP and CUMULATE repeat a row)."""

    input: PlanNode | None = None
    window: WindowSpec | None = None
    time_column: int = 0

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    def describe(self) -> str:
        assert self.window is not None and self.input is not None
        return f"WindowTableFunction(window=[{self.window.describe()}], time=[{self.input.names()[self.time_column]}])"


@dataclass(frozen=True)
class SortKey:
    index: int  # input column
    descending: bool
    nulls_first: bool


@dataclass(eq=False)
class RankNode(PlanNode):
    """Top-N (ROW_NUMBER() <= n per partition, ORDER BY .. LIMIT n) and deduplication (n = 1 ordered by a
    time attribute), as Flink's Rank/Deduplicate: streaming emits a changelog as the top rows change;
    BATCH (`final_only`) emits each partition's final top rows once. `rank_end` None: every row (a sort)."""

    input: PlanNode | None = None
    partition: list[int] = field(default_factory=list)
    order: list[SortKey] = field(default_factory=list)
    rank_end: int | None = None
    output_rank: bool = False
    deduplicate: str | None = None  # "first"/"last" (by rowtime or proctime) for Flink's Deduplicate
    rowtime: bool = False  # deduplication by a rowtime (compares timestamps) rather than arrival order
    final_only: bool = False
    rank_type: str = "ROW_NUMBER"  # ROW_NUMBER, RANK, DENSE_RANK

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    @property
    def updating(self) -> bool:
        if self.final_only:
            return False
        if self.deduplicate == "first" and not self.rowtime:
            return False  # keep-first by processing time: only the first row per key, insert-only
        return bool(self.order) or self.deduplicate is not None

    def describe(self) -> str:
        assert self.input is not None
        names = self.input.names()
        part = ", ".join(names[k] for k in self.partition)
        order = ", ".join(f"{names[k.index]} {'DESC' if k.descending else 'ASC'}" for k in self.order)
        if self.deduplicate is not None:
            return f"Deduplicate(keep=[{self.deduplicate}Row], key=[{part}], order=[{order}])"
        end = "unbounded" if self.rank_end is None else str(self.rank_end)
        return (f"Rank(rankType=[{self.rank_type}], rankRange=[rankStart=1, rankEnd={end}], partitionBy=[{part}], "
                f"orderBy=[{order}], select=[{', '.join(self.names())}])")


@dataclass(eq=False)
class OverAggregateNode(PlanNode):
    """OVER aggregates (Flink's OverAggregate): every input row once, with the aggregates over its frame —
    the rows of its partition ordered by a time attribute, ROWS n / RANGE interval / UNBOUNDED PRECEDING up
    to the current row. Rowtime: rows wait for the watermark and run in timestamp order; a row at or
    behind the watermark is late and dropped. Output: the input columns, then one column per aggregate."""

    input: PlanNode | None = None
    partition: list[int] = field(default_factory=list)
    time_index: int = 0
    rowtime: bool = True
    frame: tuple[str, Any] = ("RANGE", None)
    aggs: list[AggCall] = field(default_factory=list)

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    def describe(self) -> str:
        assert self.input is not None
        names = self.input.names()
        kind, preceding = self.frame
        start = "UNBOUNDED" if preceding is None else str(preceding)
        return (f"OverAggregate(partitionBy=[{', '.join(names[k] for k in self.partition)}], "
                f"orderBy=[{names[self.time_index]} ASC], window=[{kind} BETWEEN {start} PRECEDING AND CURRENT "
                f"ROW], select=[{', '.join(a.text for a in self.aggs)}])")


@dataclass(eq=False)
class CorrelateNode(PlanNode):
    """A table function applied to each input row (Flink's Correlate, LATERAL TABLE / join_lateral): the
    row's columns then each row the function yields; `left_outer` keeps a row the function yields nothing
    for, with NULLs. The input's RowKind carries over (a -D row retracts what its +I produced)."""

    input: PlanNode | None = None
    call: Expression | None = None
    left_outer: bool = False

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    def describe(self) -> str:
        assert self.call is not None
        kind = "LEFT" if self.left_outer else "INNER"
        return f"Correlate(invocation=[{self.call.sql()}], joinType=[{kind}], select=[{', '.join(self.names())}])"


@dataclass(eq=False)
class JoinNode(PlanNode):
    """A regular join (Flink's Join): both inputs kept in keyed state by their equality keys. Streaming
    emits a changelog (an outer join emits a NULL-padded row, then -D of it and +I of the match when one
    arrives); an inner join of insert-only inputs is insert-only. BATCH (`final_only`): the final rows."""

    left: PlanNode | None = None
    right: PlanNode | None = None
    kind: str = "INNER"  # INNER, LEFT, RIGHT, FULL
    left_keys: list[int] = field(default_factory=list)
    right_keys: list[int] = field(default_factory=list)  # indexes into the right input's columns
    condition: Expression | None = None  # the non-equality rest of ON, over the output columns
    final_only: bool = False
    state_ttl_ms: int = 0  # table.exec.state.ttl: idle rows expire (0: kept forever)

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.left is not None and self.right is not None
        return [self.left, self.right]

    @property
    def updating(self) -> bool:
        if self.final_only:
            return False
        return self.kind != "INNER" or any(i.updating for i in self.inputs)

    def describe(self) -> str:
        names = self.names()
        keys, where = join_condition_text(names, self.left, self.left_keys, self.right_keys, self.condition)
        return f"Join(joinType=[{self.kind}], where=[{keys}{where}], select=[{', '.join(names)}])"


@dataclass(eq=False)
class IntervalJoinNode(PlanNode):
    """An inner join bounded in event time (Flink's IntervalJoin): left.ts - right.ts in [lower, upper] ms
    on rowtime attributes, equality keys, insert-only inputs and output; both time attributes kept."""

    left: PlanNode | None = None
    right: PlanNode | None = None
    left_keys: list[int] = field(default_factory=list)
    right_keys: list[int] = field(default_factory=list)
    lower: int = 0
    upper: int = 0
    condition: Expression | None = None

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.left is not None and self.right is not None
        return [self.left, self.right]

    @property
    def updating(self) -> bool:
        return False

    def describe(self) -> str:
        names = self.names()
        keys, where = join_condition_text(names, self.left, self.left_keys, self.right_keys, self.condition)
        return (f"IntervalJoin(joinType=[InnerJoin], windowBounds=[leftLowerBound={self.lower}, "
                f"leftUpperBound={self.upper}], where=[{keys}{where}], select=[{', '.join(names)}])")


def join_condition_text(names: list[str], left: PlanNode | None, left_keys: list[int], right_keys: list[int],
                        condition: Expression | None) -> tuple[str, str]:
    """A two-input join's condition as describe() shows it: the key equalities over the output column names
    (right keys shifted past the left's columns), and ` AND <rest>` or '' without a rest."""
    n_left = len(left.columns) if left is not None else 0
    keys = ", ".join(f"{names[a]} = {names[n_left + b]}" for a, b in zip(left_keys, right_keys, strict=True))
    return keys, f" AND {condition.sql()}" if condition is not None else ""
