"""Processing-time lookup joins (Flink's LookupJoin): `JOIN dim FOR SYSTEM_TIME AS OF o.proc_time AS d
ON o.k = d.id`, INNER or LEFT.

Each input row probes the dimension table by the ON clause's equalities with the table's columns, at
the moment it arrives: the table is not kept in state and a later change of it does not revise rows
already joined (Flink's semantics). A `lookup.cache` (see lookup_cache.py) trades freshness for fewer
queries; its counters are the operator's metrics hitCount/missCount/loadCount/numCachedRecords.
`lookup.async` = true runs the probes on the async I/O operator (`table.exec.async-lookup.buffer-capacity`,
`.timeout`, `.output-mode` ORDERED | ALLOW_UNORDERED as in Flink), the queries on worker threads.

The input row's RowKind carries over to its output rows; a key with a NULL part matches nothing (SQL
equality). Other conjuncts of ON are a residual condition over the joined row; in a LEFT join a row
none of whose matches passes it is emitted once with NULLs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from strom.datastream.async_functions import AsyncFunction
from strom.datastream.functions import ProcessFunction
from strom.table.errors import TableException, ValidationException
from strom.table.expressions import Expression, col
from strom.table.planner import builder
from strom.table.planner.join import Scope, _and_all, _conjuncts, _output_names, resolve
from strom.table.planner.lookup_cache import CacheMetrics, LookupCache, LookupOptions, make_cache
from strom.table.planner.plan import Columns, PlanNode
from strom.table.planner.rows import make_row
from strom.table.planner.scalar import compile_scalar


class LookupSource(Protocol):
    """What a connector gives a lookup join (the registry's LookupFunction; picklable: it travels with the
    job). A FULL cache also needs `scan()`: every row of the table."""

    def open(self) -> None: ...

    def lookup(self, key: tuple[Any, ...]) -> list[Any]: ...

    def close(self) -> None: ...


# (table name, its columns, options, the key column names) -> the connector's lookup source
LookupSourceFactory = Callable[[str, Columns, dict[str, str], list[str]], LookupSource]


def plan_lookup_join(left: PlanNode, left_scope: Scope, table: Any, qualifier: str, kind: str,
                     on: Expression) -> tuple[PlanNode, Scope]:
    """The planner's entry (temporal_join.plan_temporal calls it for a PROCTIME AS OF): `table` is the
    right side's CatalogTable; its connector's factory gives the lookup function."""
    from strom.table.connectors import TableContext, factory_for

    def make_source(name: str, columns: Columns, options: dict[str, str], keys: list[str]) -> LookupSource:
        ctx = TableContext(name=table.name, columns=list(columns), options=dict(options),
                           primary_key=tuple(getattr(table, "primary_key", ()) or ()), qualified_name=name)
        return factory_for(table.name, options).lookup_function(ctx, keys)

    from strom.table.sql.catalog import CATALOG, DATABASE

    return plan_lookup(left, left_scope, f"{CATALOG}.{DATABASE}.{table.name}", list(table.columns),
                       dict(table.options), qualifier, kind, on, make_source)


@dataclass(eq=False)
class LookupJoinNode(PlanNode):
    input: PlanNode | None = None
    table_name: str = ""
    dim_columns: Columns = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    kind: str = "INNER"  # INNER, LEFT
    left_keys: list[int] = field(default_factory=list)
    lookup_keys: list[int] = field(default_factory=list)  # dimension column indexes, parallel to left_keys
    condition: Expression | None = None  # residual, over the output columns
    source: Any = None  # the connector's LookupSource
    lookup: LookupOptions = field(default_factory=LookupOptions)

    @property
    def inputs(self) -> list[PlanNode]:
        assert self.input is not None
        return [self.input]

    def describe(self) -> str:
        assert self.input is not None
        in_names = self.input.names()
        keys = ", ".join(f"{self.dim_columns[d][0]}={in_names[k]}" for k, d in zip(self.left_keys, self.lookup_keys,
                                                                                  strict=True))
        where = f", where=[{self.condition.sql()}]" if self.condition is not None else ""
        kind = "InnerJoin" if self.kind == "INNER" else "LeftOuterJoin"
        cache = "" if self.lookup.cache == "NONE" else f", cache=[{self.lookup.cache}]"
        asyn = ", async=[true]" if self.lookup.is_async else ""
        return (f"LookupJoin(table=[{self.table_name}], joinType=[{kind}], lookup=[{keys}]{where}{cache}{asyn}, "
                f"select=[{', '.join(self.names())}])")


def is_processing_time(as_of: Expression, scope: Scope, left: PlanNode) -> bool:
    """Whether `FOR SYSTEM_TIME AS OF <as_of>` names a processing-time attribute of the left input (a
    lookup join) rather than a rowtime (an event-time temporal join)."""
    e = resolve(as_of, scope)
    if e.op != "col" or e.name not in left.names():
        raise ValidationException(f"FOR SYSTEM_TIME AS OF {as_of.sql()}: expected a time attribute column of the "
                                  "left input")
    return left.columns[left.names().index(e.name)][1].time_attr == "PROCTIME"


def plan_lookup(left: PlanNode, left_scope: Scope, table_name: str, dim_columns: Columns,
                     options: dict[str, str], qualifier: str, kind: str, on: Expression,
                     make_source: LookupSourceFactory) -> tuple[PlanNode, Scope]:
    if kind not in ("INNER", "LEFT"):
        raise TableException(f"Processing-time temporal join (lookup join of {table_name}) supports INNER and "
                             f"LEFT joins only, got {kind}")
    if qualifier in left_scope:
        raise ValidationException(f"table name {qualifier!r} appears twice in the join; alias one (AS q)")
    dim_names = [n for n, _ in dim_columns]
    right_names = _output_names(left.names(), dim_names)
    scope = dict(left_scope)
    scope[qualifier] = dict(zip(dim_names, right_names, strict=True))
    on = resolve(on, scope)
    probe, on = _computed_keys(left, set(right_names), on)
    if probe is not left:  # `ON mod(o.k, 10) = d.id`: the key computed before the lookup, dropped after it
        resolved = {"": {n: n for n in probe.names()}}  # `on` is resolved already: names map to themselves
        node, _ = plan_lookup(probe, resolved, table_name, dim_columns, options, qualifier, kind, on, make_source)
        return builder.select(node, [col(n) for n in left.names() + right_names]), scope
    right_types = [t.nullable_() if kind == "LEFT" else t for _, t in dim_columns]
    columns = list(left.columns) + list(zip(right_names, [t.plain() for t in right_types], strict=True))
    names = [n for n, _ in columns]
    condition = resolve(on, scope)
    _, t = compile_scalar(condition, columns)
    if t.root != "BOOLEAN":
        raise ValidationException(f"join condition {condition.sql()} is {t}, expected BOOLEAN")
    n_left = len(left.columns)
    left_keys: list[int] = []
    lookup_keys: list[int] = []
    residual: list[Expression] = []
    for c in _conjuncts(condition):
        a, b = (c.args if c.op == "call" and c.name == "=" else (None, None))
        if a is not None and b is not None and a.op == "col" and b.op == "col":
            ia, ib = names.index(a.name), names.index(b.name)
            if (ia < n_left) != (ib < n_left):
                li, ri = (ia, ib) if ia < n_left else (ib, ia)
                if ri - n_left not in lookup_keys:
                    ta, tb = columns[li][1], columns[ri][1]
                    if not (ta.root == tb.root or (ta.is_numeric and tb.is_numeric)):
                        raise ValidationException(f"join condition {c.sql()}: cannot compare {ta} with {tb}")
                    left_keys.append(li)
                    lookup_keys.append(ri - n_left)
                    continue
        residual.append(c)
    if not lookup_keys:
        raise TableException(
            f"Temporal table join requires an equality condition on fields of table [{table_name}]; got ON "
            f"{condition.sql()} (a lookup join probes the table by the columns ON equates with the input's)")
    parsed = LookupOptions.parse(table_name, options)
    source = make_source(table_name, dim_columns, options, [dim_names[i] for i in lookup_keys])
    if parsed.cache == "FULL" and not callable(getattr(source, "scan", None)):
        raise ValidationException(f"table {table_name!r}: 'lookup.cache' = 'FULL' needs a connector that can scan "
                                  "the whole table; use PARTIAL")
    node = LookupJoinNode(columns, input=left, table_name=table_name, dim_columns=list(dim_columns),
                          options=dict(options), kind=kind, left_keys=left_keys, lookup_keys=lookup_keys,
                          condition=_and_all(residual), source=source, lookup=parsed)
    return node, scope


def _computed_keys(left: PlanNode, right_names: set[str], on: Expression) -> tuple[PlanNode, Expression]:
    """Equalities of an expression over the input alone with a dimension column (Nexmark q13's
    `mod(B.auction, 10000) = S.key`): the input gets each expression as a hidden column, which ON equates
    instead; `left` itself when there is none."""
    extra: list[Expression] = []
    conjuncts = []
    for c in _conjuncts(on):
        if c.op == "call" and c.name == "=":
            a, b = c.args
            if a.op == "col" and a.name in right_names:
                a, b = b, a
            if b.op == "col" and b.name in right_names and a.op != "col" and _columns(a) and \
                    _columns(a) <= set(left.names()):
                name = f"$lookup_key{len(extra)}"
                extra.append(a.alias(name))
                c = Expression("call", "=", (col(name), b))
        conjuncts.append(c)
    if not extra:
        return left, on
    return builder.select(left, [col(n) for n in left.names()] + extra), _and_all(conjuncts) or on


def _columns(e: Expression) -> set[str]:
    return {e.name} if e.op == "col" else {n for a in e.args for n in _columns(a)}


class LookupJoiner:
    """The pure part: an input row's key, and its output rows given the dimension rows found."""

    def __init__(self, node: LookupJoinNode) -> None:
        self.left_keys = list(node.left_keys)
        self.lookup_keys = list(node.lookup_keys)
        self.names = tuple(node.names())
        self.nulls = (None,) * len(node.dim_columns)
        self.left_outer = node.kind == "LEFT"
        self.condition: Callable[[Any], Any] | None = None
        if node.condition is not None:
            self.condition, _ = compile_scalar(node.condition, node.columns)

    def key(self, row: Any) -> tuple[Any, ...] | None:  # hot path: called per record
        key = tuple(row[i] for i in self.left_keys)
        return None if None in key else key

    def table_key(self, dim_row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(dim_row[i] for i in self.lookup_keys)

    def join(self, row: Any, dim_rows: list[tuple[Any, ...]]) -> list[Any]:  # hot path: called per record
        kind = row.get_row_kind()
        left = tuple(row)
        out = []
        for d in dim_rows:
            joined = make_row(left + tuple(d), self.names, kind)
            if self.condition is None or self.condition(joined) is True:
                out.append(joined)
        if not out and self.left_outer:
            out.append(make_row(left + self.nulls, self.names, kind))
        return out


def _open_cache(options: LookupOptions, joiner: LookupJoiner, source: LookupSource,
                runtime_context: Any) -> LookupCache:
    metrics = CacheMetrics()
    group = runtime_context.get_metrics_group() if runtime_context is not None else None
    if group is not None:
        metrics.register(group)

    def scan() -> list[tuple[Any, Any]]:
        return [(joiner.table_key(r), r) for r in source.scan()]  # type: ignore[attr-defined]

    source.open()
    cache = make_cache(options, metrics, scan)
    cache.open()
    return cache


class LookupJoinFunction(ProcessFunction):
    """The synchronous lookup join: one probe at a time on the task thread."""

    def __init__(self, node: LookupJoinNode) -> None:
        self.options = node.lookup
        self.source = node.source
        self.joiner = LookupJoiner(node)
        self.cache: LookupCache | None = None

    def open(self, runtime_context: Any) -> None:
        self.cache = _open_cache(self.options, self.joiner, self.source, runtime_context)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:  # hot path: called per record
        key = self.joiner.key(value)
        assert self.cache is not None
        rows = [] if key is None else self.cache.get(key, self.source.lookup)
        yield from self.joiner.join(value, rows)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        self.source.close()


class AsyncLookupJoinFunction(AsyncFunction):
    """`lookup.async` = true: the cache is read on the operator's event loop, misses query on worker
    threads (as many as the operator's capacity allows at once, at most `max_workers`)."""

    def __init__(self, node: LookupJoinNode, max_workers: int) -> None:
        self.options = node.lookup
        self.source = node.source
        self.joiner = LookupJoiner(node)
        self.max_workers = max_workers
        self.cache: LookupCache | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    def open(self, runtime_context: Any) -> None:
        self.cache = _open_cache(self.options, self.joiner, self.source, runtime_context)
        self._executor = concurrent.futures.ThreadPoolExecutor(self.max_workers, thread_name_prefix="lookup")

    async def async_invoke(self, value: Any) -> list[Any]:
        key = self.joiner.key(value)
        cache = self.cache
        assert cache is not None
        if key is None:
            return self.joiner.join(value, [])
        rows = cache.get_if_present(key)
        if rows is None:
            cache.metrics.misses += 1
            start = cache.clock()
            try:
                rows = await asyncio.get_running_loop().run_in_executor(self._executor, self.source.lookup, key)
            except Exception:
                cache.metrics.load_failures += 1
                raise
            cache.loaded(cache.clock() - start)
            cache.put(key, rows)
        return self.joiner.join(value, rows)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        if self.cache is not None:
            self.cache.close()
        self.source.close()


def translate_lookup_join(node: LookupJoinNode, ds: Any, config: Any) -> Any:
    """The node as a process function (sync) or an async wait operator, at the input's parallelism."""
    if not node.lookup.is_async:
        out = ds.process(LookupJoinFunction(node))
    else:
        from strom.common.config_options import parse_duration_ms
        from strom.datastream.async_data_stream import AsyncDataStream

        capacity = int(config.get_string("table.exec.async-lookup.buffer-capacity", "100"))
        timeout_ms = parse_duration_ms(config.get_string("table.exec.async-lookup.timeout", "3 min"))
        mode = config.get_string("table.exec.async-lookup.output-mode", "ORDERED").upper()
        if mode not in ("ORDERED", "ALLOW_UNORDERED"):
            raise ValidationException(f"'table.exec.async-lookup.output-mode' must be ORDERED or ALLOW_UNORDERED, "
                                      f"got {mode!r}")
        fn = AsyncLookupJoinFunction(node, max_workers=min(capacity, 16))
        # an updating input keeps its order per key only if results keep the input's order (Flink does the same)
        wait = AsyncDataStream.unordered_wait if mode == "ALLOW_UNORDERED" and not node.updating \
            else AsyncDataStream.ordered_wait
        out = wait(ds, fn, timeout_ms, capacity)
    out = out.name(node.describe()).uid(node.uid("lookup-join"))
    parallelism = ds._t.parallelism
    if parallelism is not None:
        out.set_parallelism(parallelism)
    return out
