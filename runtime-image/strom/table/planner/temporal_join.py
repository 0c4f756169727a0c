"""Temporal joins (`JOIN r FOR SYSTEM_TIME AS OF l.t ON ..`): each left row joined with the version of the
right row its time saw, as Flink defines them.

Planning: `l.t` decides the kind. A PROCTIME attribute is a processing-time lookup join, planned by
planner/lookup_join.py (KAFKA-SQL's); a ROWTIME attribute is an event-time temporal join against a
*versioned table*: a right input with a primary key and a rowtime attribute — a table declaring both, or a
view deduplicating by rowtime (ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime DESC) = 1: its key is
the partition). The ON condition must equate the primary key; INNER and LEFT joins only.

Runtime (Flink's TemporalRowTimeJoinOperator): keyed by the equality keys; right rows are versions by
their rowtime (+I/+U a new version, -D the key's deletion at that time, -U ignored); left rows wait until
the watermark passes their time, then each joins the latest version at or before it (none, or a deletion:
a LEFT join pads the right side with NULLs). The output is insert-only, at the left row's time; versions
older than the newest one at or behind the watermark are dropped, since no later left row can see them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from strom.common.row import Row, RowKind
from strom.common.typeinfo import Types
from strom.datastream.functions import KeyedCoProcessFunction
from strom.datastream.state import MapStateDescriptor, ValueStateDescriptor
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression
from strom.table.planner import join
from strom.table.planner.event_time import to_millis
from strom.table.planner.plan import (
    CalcNode,
    PlanNode,
    RankNode,
    SourceNode,
    WatermarkAssignerNode,
    join_condition_text,
)
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar


@dataclass(eq=False)
class TemporalJoinNode(PlanNode):
    """An event-time temporal join: left rows with the right version valid at their rowtime; insert-only."""

    left: PlanNode | None = None
    right: PlanNode | None = None
    kind: str = "INNER"  # INNER, LEFT
    left_keys: list[int] = field(default_factory=list)
    right_keys: list[int] = field(default_factory=list)
    left_time: int = 0  # the left input's rowtime column
    right_time: int = 0  # the right input's rowtime column
    condition: Expression | None = None  # the rest of ON, over the output columns

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
        return (f"TemporalJoin(joinType=[{self.kind}], asOf=[{names[self.left_time]}], where=[{keys}{where}], "
                f"select=[{', '.join(names)}])")

    def build_stream(self, streams: list[Any]) -> Any:
        left, right = streams
        keyed = left.connect(right).key_by(_Key(self.left_keys), _Key(self.right_keys))
        return keyed.process(TemporalRowtimeJoinFunction(self)).name(self.describe()).uid(self.uid("temporal-join"))


class _Key:
    def __init__(self, indexes: list[int]) -> None:
        self.indexes = indexes

    def __call__(self, row: Any) -> tuple:  # hot path: called per record
        return tuple(row[i] for i in self.indexes)


def primary_key(node: PlanNode) -> list[str] | None:
    """The primary key a versioned table offers, by column name: a source's declared PRIMARY KEY, or the
    partition of a keep-last-by-rowtime deduplication (Flink's versioned view), through projections that
    keep those columns."""
    if isinstance(node, RankNode):
        if node.deduplicate == "last" and node.rowtime and node.input is not None:
            names = node.input.names()
            return [names[i] for i in node.partition]
        return None
    if isinstance(node, SourceNode):
        return list(getattr(node, "primary_key", ())) or None
    if isinstance(node, WatermarkAssignerNode) and node.input is not None:
        return primary_key(node.input)
    if isinstance(node, CalcNode) and node.input is not None and node.condition is None:
        inner = primary_key(node.input)
        if inner is None:
            return None
        renamed = {e.name: n for e, n in zip(node.projections, node.names(), strict=True) if e.op == "col"}
        return [renamed[k] for k in inner] if all(k in renamed for k in inner) else None
    return None


def plan_temporal(left: PlanNode, left_scope: join.Scope, right_of: Callable[[], PlanNode], right_qualifier: str,
                  kind: str, on: Expression, as_of: Expression, final_only: bool, lookup_table: Any = None
                  ) -> tuple[PlanNode, join.Scope]:
    """`left JOIN right FOR SYSTEM_TIME AS OF as_of ON on`: the join node and the scope after it. `right_of`
    plans the right input (only an event-time join reads it as a stream; a lookup join queries the table)."""
    time = join.resolve(as_of, left_scope)
    if time.op != "col" or time.name not in left.names():
        raise ValidationException(f"FOR SYSTEM_TIME AS OF {as_of.sql()}: expected a time attribute column of the "
                                  f"left input ({', '.join(left.names())})")
    attr = left.columns[left.names().index(time.name)][1].time_attr
    if attr == "PROCTIME":
        from strom.table.planner import lookup_join

        plan_lookup = getattr(lookup_join, "plan_lookup_join", None)
        if plan_lookup is None or lookup_table is None:
            raise NotSupportedYet(f"processing-time temporal (lookup) join of {right_qualifier!r}")
        return plan_lookup(left, left_scope, lookup_table, right_qualifier, kind, on)  # type: ignore[no-any-return]
    if attr != "ROWTIME":
        raise ValidationException(f"FOR SYSTEM_TIME AS OF {as_of.sql()}: {time.name!r} is not a time attribute; "
                                  "a temporal join needs the left input's rowtime (event time) or proctime")
    if final_only:
        raise NotSupportedYet("event-time temporal joins in batch mode")
    right = right_of()
    if kind not in ("INNER", "LEFT"):
        raise ValidationException(f"{kind} temporal join: Flink's temporal joins are INNER or LEFT joins")
    if primary_key(right) is None:
        raise ValidationException("Temporal Table Join requires primary key in versioned table, but no primary key "
                                  f"can be found: give {right_qualifier!r} a PRIMARY KEY or deduplicate it by rowtime")
    right_times = [i for i, (_, t) in enumerate(right.columns) if t.time_attr == "ROWTIME"]
    if not right_times:
        raise ValidationException("Event-Time Temporal Table Join requires both primary key and row time attribute "
                                  f"in versioned table, but no row time attribute can be found in {right_qualifier!r}")
    if left.updating:
        raise ValidationException("an event-time temporal join reads an insert-only left input; the left input "
                                  "is an updating changelog")
    node, scope = join.plan_join(left, left_scope, right, right_qualifier, "INNER" if kind == "INNER" else "LEFT",
                                 on, final_only=True)
    assert isinstance(node, join.JoinNode)
    key = primary_key(right) or []
    right_names = right.names()
    keyed = {right_names[i] for i in node.right_keys}
    missing = [k for k in key if k not in keyed]
    if missing:
        raise ValidationException(f"Temporal table's primary key [{', '.join(key)}] must be included in the "
                                  f"equivalence condition of temporal join (ON .. = {right_qualifier}.{missing[0]})")
    n_left = len(left.columns)
    columns = list(left.columns) + [(n, t.plain().nullable_() if kind == "LEFT" else t.plain())
                                    for n, t in node.columns[n_left:]]
    out = TemporalJoinNode(columns, left=left, right=right, kind=kind, left_keys=node.left_keys,
                           right_keys=node.right_keys, left_time=left.names().index(time.name),
                           right_time=right_times[0], condition=node.condition)
    return out, scope


class TemporalRowtimeJoinFunction(KeyedCoProcessFunction):
    def __init__(self, node: TemporalJoinNode) -> None:
        assert node.right is not None
        self.left_outer = node.kind == "LEFT"
        self.left_time = node.left_time
        self.right_time = node.right_time
        self.n_right = len(node.right.columns)
        self.condition = compile_scalar(node.condition, node.columns)[0] if node.condition is not None else None
        self.names = tuple(node.names())

    def open(self, runtime_context: Any) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        self.lefts = runtime_context.get_map_state(MapStateDescriptor("temporal-left", pickled, pickled))
        self.versions = runtime_context.get_map_state(MapStateDescriptor("temporal-versions", pickled, pickled))
        self.next_id = runtime_context.get_state(ValueStateDescriptor("temporal-left-id", pickled))

    def process_element1(self, value: Any, ctx: Any) -> Iterator[Row]:
        ts = value[self.left_time]
        if ts is None:
            return iter(())
        n = self.next_id.value() or 0
        self.next_id.update(n + 1)
        ms = to_millis(ts)
        self.lefts.put(n, (ms, tuple(value)))
        ctx.timer_service().register_event_time_timer(ms)
        return iter(())

    def process_element2(self, value: Any, ctx: Any) -> Iterator[Row]:
        kind = value.get_row_kind()
        ts = value[self.right_time]
        if kind == RowKind.UPDATE_BEFORE or ts is None:
            return iter(())  # a version ends where the next begins: -U carries nothing
        self.versions.put(to_millis(ts), (kind == RowKind.DELETE, tuple(value)))
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Row]:
        watermark = ctx.timer_service().current_watermark()
        due = sorted(((ms, n, values) for n, (ms, values) in self.lefts.items() if ms <= max(watermark, timestamp)))
        if not due:
            return
        times = sorted(self.versions.keys())
        null_key = any(k is None for k in ctx.get_current_key())
        for ms, n, values in due:
            self.lefts.remove(n)
            version = None
            for t in times:
                if t > ms:
                    break
                version = t
            right = None
            if version is not None and not null_key:
                deleted, right_values = self.versions.get(version)
                right = None if deleted else right_values
            if right is not None and (self.condition is None or self.condition((*values, *right)) is True):
                yield make_row((*values, *right), self.names, RowKind.INSERT)
            elif self.left_outer:
                yield make_row((*values, *(None,) * self.n_right), self.names, RowKind.INSERT)
        # versions before the newest one at or behind the watermark serve no later left row
        current = [t for t in times if t <= watermark]
        for t in current[:-1]:
            self.versions.remove(t)
        if self.lefts.is_empty():
            self.next_id.clear()
