"""`Table` and `GroupedTable` (PyFlink's): relational operations build plan nodes; nothing runs until
execute(), execute_insert() or a conversion to a DataStream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression, col
from strom.table.planner import builder, column_ops, correlate, join, top_n, windowing
from strom.table.planner.plan import PlanNode
from strom.table.schema import TableSchema

if TYPE_CHECKING:
    from strom.table.environment import TableEnvironment
    from strom.table.table_result import TableResult


def _exprs(args: tuple[Any, ...], method: str, t_env: TableEnvironment | None = None) -> list[Expression]:
    for a in args:
        if isinstance(a, str):
            raise NotSupportedYet(f"string expressions in Table.{method}(); use col()/lit() (strom.table.expressions)")
        if not isinstance(a, Expression):
            raise TypeError(f"Table.{method}() takes expressions (col('x'), lit(1), ...), got {a!r}")
    return [t_env.resolve_functions(a) for a in args] if t_env is not None else list(args)


class Table:
    def __init__(self, t_env: TableEnvironment, node: PlanNode) -> None:
        self._t_env = t_env
        self._node = node

    # -- relational operations ----------------------------------------------------------------
    def select(self, *fields: Expression) -> Table:
        node = builder.select(self._node, _exprs(fields, "select", self._t_env), unnamed="_c",
                              final_only=self._t_env._final_only)
        return Table(self._t_env, node)

    def where(self, predicate: Expression) -> Table:
        return Table(self._t_env, builder.filter_(self._node, _exprs((predicate,), "where", self._t_env)[0]))

    filter = where

    def group_by(self, *fields: Expression) -> GroupedTable:
        return GroupedTable(self, _exprs(fields, "group_by", self._t_env))

    def distinct(self) -> Table:
        return Table(self._t_env, builder.distinct(self._node, self._t_env._final_only))

    def order_by(self, *fields: Expression) -> SortedTable:
        """Sort by columns (`col('a').desc`); streaming needs a fetch/limit after it, as in Flink."""
        order = []
        for e in _exprs(fields, "order_by"):
            desc = e.op == "call" and e.name == "desc"
            inner = e.args[0] if e.op == "call" and e.name in ("asc", "desc") else e
            order.append((inner, desc, not desc))
        return SortedTable(self, order)

    def limit(self, fetch: int, offset: int = 0) -> Table:
        """The first `fetch` rows (of the sorted table after order_by)."""
        return self._limited([], fetch, offset)

    def fetch(self, fetch: int) -> Table:
        return self.limit(fetch)

    def _limited(self, order: list[Any], fetch: int, offset: int) -> Table:
        if offset:
            raise NotSupportedYet("OFFSET (Table.limit with an offset)")
        if not isinstance(fetch, int) or isinstance(fetch, bool) or fetch < 0:
            raise TypeError(f"Table.limit/fetch takes a non-negative int, got {fetch!r}")
        return Table(self._t_env, top_n.sort_limit(self._node, order, fetch, self._t_env._final_only))

    def window(self, window: Any) -> GroupWindowedTable:
        """A group window (strom.table.window.Tumble/Slide/Session) to group by, as in PyFlink."""
        from strom.table.window import GroupWindow

        if not isinstance(window, GroupWindow):
            raise TypeError(f"Table.window() takes Tumble/Slide/Session windows (strom.table.window), "
                            f"got {window!r}")
        return GroupWindowedTable(self, window.checked())

    def flat_aggregate(self, func: Any) -> AggregatedTable:
        """A table aggregate function (udtaf) over the whole table (one group)."""
        return _flat_aggregate(self, [], func)

    def join_lateral(self, table_function_call: Expression, join_predicate: Expression | None = None) -> Table:
        """Each row joined with the rows a table function yields for it (`f(col('s')).alias('w')`)."""
        return self._lateral(table_function_call, join_predicate, left_outer=False)

    def left_outer_join_lateral(self, table_function_call: Expression,
                                join_predicate: Expression | None = None) -> Table:
        """As join_lateral, keeping rows the function yields nothing for (its columns NULL)."""
        return self._lateral(table_function_call, join_predicate, left_outer=True)

    def _lateral(self, call: Expression, predicate: Expression | None, left_outer: bool) -> Table:
        (resolved,) = _exprs((call,), "join_lateral", self._t_env)
        node = correlate.correlate(self._node, resolved, None, left_outer)
        if predicate is not None:
            if left_outer:
                raise NotSupportedYet("left_outer_join_lateral with a join predicate (only lit(True))")
            node = builder.filter_(node, _exprs((predicate,), "join_lateral", self._t_env)[0])
        return Table(self._t_env, node)

    def join(self, right: Table, join_predicate: Expression | None = None) -> Table:
        """Inner join on `join_predicate` (an equality between the two tables' columns, and more)."""
        return self._join(right, join_predicate, "INNER", "join")

    def left_outer_join(self, right: Table, join_predicate: Expression | None = None) -> Table:
        return self._join(right, join_predicate, "LEFT", "left_outer_join")

    def right_outer_join(self, right: Table, join_predicate: Expression) -> Table:
        return self._join(right, join_predicate, "RIGHT", "right_outer_join")

    def full_outer_join(self, right: Table, join_predicate: Expression) -> Table:
        return self._join(right, join_predicate, "FULL", "full_outer_join")

    def _join(self, right: Table, predicate: Expression | None, kind: str, method: str) -> Table:
        if right._t_env is not self._t_env:
            raise ValidationException(f"Table.{method}: only tables from the same TableEnvironment can be joined")
        clash = [n for n in right._node.names() if n in self._node.names()]
        if clash:  # Flink's Table API: the two inputs' names must differ (rename_columns/alias one)
            raise ValidationException(f"join relations with ambiguous names: [{', '.join(clash)}] "
                                      f"(rename one side's columns in Table.{method})")
        if predicate is None:
            raise ValidationException(f"Table.{method} needs a join predicate with an equality between the two "
                                      "tables' columns (e.g. col('a') == col('b'))")
        (condition,) = _exprs((predicate,), method, self._t_env)
        node, _ = join.plan_join(self._node, join.scope_of(None, self._node), right._node, "#right", kind,
                                 condition, self._t_env._final_only, self._t_env._state_ttl_ms())
        return Table(self._t_env, node)

    def map(self, func: Expression) -> Table:
        """One row out per row in: a scalar function's result; a ROW result becomes its fields as columns
        (`t.map(f(col('a'), col('b'))).alias('x', 'y')`), any other result one column `f0`."""
        (call,) = _exprs((func,), "map", self._t_env)
        call = call.args[0] if call.op == "alias" else call
        if not (call.op == "call" and call.name == "udf"):
            raise ValidationException(f"Table.map takes a Python scalar function call (udf), got {call.sql()}")
        wrapper = call.value
        rt = wrapper.result_type
        if rt.root != "ROW":
            return self.select(call.alias("f0"))
        inner = builder.select(self._node, [call.alias("$row")], unnamed="_c")
        fields = [Expression("call", "get_field", (col("$row"),), value=i).alias(name)
                  for i, (name, _) in enumerate(rt.fields)]
        return Table(self._t_env, builder.select(inner, fields, unnamed="_c"))

    def flat_map(self, func: Expression) -> Table:
        """Rows a table function yields per row, and only its columns (f0, f1, .. or the names of alias)."""
        (call,) = _exprs((func,), "flat_map", self._t_env)
        node = correlate.correlate(self._node, call, None, left_outer=False)
        own = node.names()[len(self._node.columns):]
        return Table(self._t_env, builder.select(node, [col(n) for n in own], unnamed="_c"))

    def union_all(self, right: Table) -> Table:
        return Table(self._t_env, builder.union_all([self._node, right._node]))

    def union(self, right: Table) -> Table:
        return self.union_all(right).distinct()

    def alias(self, field: str, *fields: str) -> Table:
        return Table(self._t_env, builder.rename(self._node, [field, *fields]))

    # -- column operations (Flink's ColumnOperationUtils semantics, see column_ops.py) -----------
    def add_columns(self, *fields: Expression) -> Table:
        return self._project(column_ops.add_columns(self._node.names(), _exprs(fields, "add_columns"), False))

    def add_or_replace_columns(self, *fields: Expression) -> Table:
        return self._project(column_ops.add_columns(self._node.names(), _exprs(fields, "add_or_replace_columns"), True))

    def rename_columns(self, *fields: Expression) -> Table:
        return self._project(column_ops.rename_columns(self._node.names(), _exprs(fields, "rename_columns")))

    def drop_columns(self, *fields: Expression) -> Table:
        return self._project(column_ops.drop_columns(self._node.names(), _exprs(fields, "drop_columns")))

    def _project(self, exprs: list[Expression]) -> Table:
        node = builder.select(self._node, exprs, unnamed="_c", final_only=self._t_env._final_only)
        return Table(self._t_env, node)

    # -- schema and execution ------------------------------------------------------------------
    def get_schema(self) -> TableSchema:
        return TableSchema(self._node.names(), [t for _, t in self._node.columns])

    def get_resolved_schema(self) -> TableSchema:
        return self.get_schema()

    def print_schema(self) -> None:
        print(self.get_schema(), end="")

    def explain(self, *extra_details: Any) -> str:
        from strom.table.planner.scan_fusion import with_pushdown  # the plan as it runs: pushed into sources

        return "== Optimized Physical Plan ==\n" + with_pushdown(self._node).digest() + "\n"

    def execute(self) -> TableResult:
        return self._t_env._execute_query(self._node)

    def to_pandas(self) -> Any:
        """The table's rows as a pandas DataFrame (runs the query; an updating table is reduced to its final
        rows, as PyFlink's to_pandas collects them). The table must be bounded."""
        from strom.table import pandas_conversion as pc

        with self.execute().collect() as changelog:
            rows = pc.final_rows(changelog)
        return pc.to_dataframe(list(self._node.columns), rows)

    def execute_insert(self, table_path_or_descriptor: Any, overwrite: bool = False) -> TableResult:
        if not isinstance(table_path_or_descriptor, str):
            return self._t_env._insert_into_descriptor(table_path_or_descriptor, self._node, overwrite)
        return self._t_env._insert(table_path_or_descriptor, self._node, None, overwrite)

    def __str__(self) -> str:
        return f"Table({', '.join(self._node.names())})"


class SortedTable(Table):
    """`table.order_by(...)`: the sort is planned when the table is used, so that `.fetch(n)`/`.limit(n)`
    after it make a Top-N (streaming refuses a sort without one, as Flink does)."""

    def __init__(self, table: Table, order: list[Any]) -> None:
        self._t_env = table._t_env
        self._base = table
        self._order = order

    @property  # type: ignore[override]
    def _node(self) -> PlanNode:
        return top_n.sort_limit(self._base._node, self._order, None, self._t_env._final_only)

    def limit(self, fetch: int, offset: int = 0) -> Table:
        return self._base._limited(self._order, fetch, offset)

    def fetch(self, fetch: int) -> Table:
        return self.limit(fetch)


class GroupWindowedTable:
    """`table.window(Tumble.over(...).on(col('ts')).alias('w'))`: group by the window's alias next."""

    def __init__(self, table: Table, window: Any) -> None:
        self._table = table
        self._window = window

    def group_by(self, *fields: Expression) -> WindowGroupedTable:
        return WindowGroupedTable(self._table, self._window, _exprs(fields, "group_by"))


class WindowGroupedTable:
    def __init__(self, table: Table, window: Any, keys: list[Expression]) -> None:
        self._table = table
        self._window = window
        self._keys = keys

    def select(self, *fields: Expression) -> Table:
        t = self._table
        node = windowing.table_api_window_aggregate(t._node, self._window, self._keys,
                                                    _exprs(fields, "select", t._t_env))
        return Table(t._t_env, node)


class GroupedTable:
    def __init__(self, table: Table, keys: list[Expression]) -> None:
        self._table = table
        self._keys = keys

    def select(self, *fields: Expression) -> Table:
        t = self._table
        node = builder.aggregate(t._node, self._keys, _exprs(fields, "select", t._t_env), None,
                                 t._t_env._final_only, "_c")
        return Table(t._t_env, node)

    def aggregate(self, func: Expression) -> AggregatedTable:
        """A Python aggregate function per group; a ROW result becomes its fields (or the alias names):
        `t.group_by(col('k')).aggregate(f(col('v')).alias('a', 'b')).select(col('k'), col('a'))`."""
        t = self._table
        (call,) = _exprs((func,), "aggregate", t._t_env)
        names = list(call.value) if call.op == "alias" and isinstance(call.value, tuple) else (
            [call.name] if call.op == "alias" else None)
        call = call.args[0] if call.op == "alias" else call
        if not (call.op == "agg" and call.name == "udaf"):
            raise ValidationException(f"GroupedTable.aggregate takes a Python aggregate function call (udaf), "
                                      f"got {call.sql()}")
        rt = call.value.result_type
        fields = [n for n, _ in rt.fields] if rt.root == "ROW" else ["f0"]
        names = names or fields
        if len(names) != len(fields):
            raise ValidationException(f"aggregate function {call.value.name!r} returns {len(fields)} columns, "
                                      f"got {len(names)} names")
        keys = list(self._keys)
        node = builder.aggregate(t._node, keys, [*keys, call.alias("$agg")], None, t._t_env._final_only, "_c")
        key_cols = [col(n) for n in node.names()[:-1]]
        if rt.root == "ROW":
            values = [Expression("call", "get_field", (col("$agg"),), value=i).alias(n) for i, n in enumerate(names)]
        else:
            values = [col("$agg").alias(names[0])]
        return AggregatedTable(Table(t._t_env, builder.select(node, [*key_cols, *values], unnamed="_c")))

    def flat_aggregate(self, func: Any) -> AggregatedTable:
        """A table aggregate function (udtaf) per group: `t.group_by(col('k')).flat_aggregate(top2).select(..)`;
        the result has the keys, then the function's columns (its ROW fields, or the alias names)."""
        return _flat_aggregate(self._table, self._keys, func)


class AggregatedTable:
    """GroupedTable.aggregate's result: select from the keys and the function's columns."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def select(self, *fields: Expression) -> Table:
        return self._table.select(*fields)


def _flat_aggregate(t: Table, keys: list[Expression], func: Any) -> AggregatedTable:
    from strom.table.planner.table_aggregate import table_aggregate
    from strom.table.udf import UserDefinedFunctionWrapper

    names = None
    if isinstance(func, UserDefinedFunctionWrapper):
        names = func._result_names  # top2.alias('x'): the output column names
        func = func()  # no arguments: the function gets the whole row, as in PyFlink
    (call,) = _exprs((func,), "flat_aggregate", t._t_env)
    node = table_aggregate(t._node, keys, call, t._t_env._final_only, names)
    return AggregatedTable(Table(t._t_env, node))


def _not_yet(name: str, feature: str):
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotSupportedYet(f"Table.{name} ({feature})")

    method.__name__ = name
    return method


# PyFlink's other Table methods: present, so a program fails with a clear message instead of AttributeError
for _name, _feature in {
    "over_window": "over windows",
    "minus": "MINUS",
    "minus_all": "MINUS ALL",
    "intersect": "INTERSECT",
    "intersect_all": "INTERSECT ALL",
    "offset": "OFFSET",
    "aggregate": "user-defined aggregate functions",
}.items():
    setattr(Table, _name, _not_yet(_name, _feature))
