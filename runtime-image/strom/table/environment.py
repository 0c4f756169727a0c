"""`EnvironmentSettings`, `TableEnvironment`, `StreamTableEnvironment` (PyFlink's): the catalog, SQL and
Table API entry points, and execution of plans on Strom's DataStream runtime.

Each query or INSERT runs as its own job on a fresh StreamExecutionEnvironment with this environment's
configuration (as Flink submits one job per statement); to_changelog_stream / to_data_stream add the
plan to the user's StreamExecutionEnvironment instead.

BATCH (`in_batch_mode()`): a bounded plan runs as Spark SQL through PySpark (strom.batch.sql;
`table.exec.batch.runner` = 'spark', the default); a plan Spark cannot run faithfully, or 'strom', runs
bounded on the streaming runtime, where aggregations emit only their final rows (insert-only results, as
Flink's batch planner).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from strom.batch import sql as batch_sql
from strom.common.config_options import TABLE_DML_SYNC, TABLE_LOCAL_TIME_ZONE, TABLE_STATE_TTL
from strom.common.configuration import Configuration
from strom.common.row import Row
from strom.datastream.data_stream import DataStream
from strom.datastream.stream_execution_environment import StreamExecutionEnvironment
from strom.table import connectors, sql_session
from strom.table.data_stream_conversion import data_stream_node
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.expressions import Expression, col, lit
from strom.table.planner import (
    builder,
    correlate,
    insert_columns,
    join,
    over_agg,
    scan_fusion,
    session_zone,
    sink_changelog,
    top_n,
    windowing,
)
from strom.table.planner.inline_values import values_node
from strom.table.planner.plan import DataStreamScanNode, PlanNode, SourceNode
from strom.table.planner.temporal_join import plan_temporal
from strom.table.planner.translate import translate
from strom.table.schema import Schema
from strom.table.sql import parser as sqlp
from strom.table.sql import positions
from strom.table.sql.catalog import CATALOG, DATABASE, Catalog, CatalogTable, CatalogView
from strom.table.sql.flink_syntax import WindowTVF
from strom.table.statement_set import StatementSet
from strom.table.table import Table
from strom.table.table_descriptor import TableDescriptor, catalog_table
from strom.table.table_result import ResultKind, TableResult
from strom.table.types import DataType, DataTypes, check_value, type_of_value
from strom.table.udf import UserDefinedFunctionWrapper, as_function, import_function


class EnvironmentSettings:
    def __init__(self, streaming: bool = True, configuration: Configuration | None = None) -> None:
        self._streaming = streaming
        self._configuration = configuration or Configuration()

    @staticmethod
    def in_streaming_mode() -> EnvironmentSettings:
        return EnvironmentSettings(True)

    @staticmethod
    def in_batch_mode() -> EnvironmentSettings:
        return EnvironmentSettings(False)

    @staticmethod
    def new_instance() -> EnvironmentSettings.Builder:
        return EnvironmentSettings.Builder()

    def is_streaming_mode(self) -> bool:
        return self._streaming

    def get_configuration(self) -> Configuration:
        return self._configuration

    class Builder:
        def __init__(self) -> None:
            self._streaming = True
            self._configuration = Configuration()

        def in_streaming_mode(self) -> EnvironmentSettings.Builder:
            self._streaming = True
            return self

        def in_batch_mode(self) -> EnvironmentSettings.Builder:
            self._streaming = False
            return self

        def with_configuration(self, config: Configuration) -> EnvironmentSettings.Builder:
            self._configuration.add_all(config)
            return self

        def build(self) -> EnvironmentSettings:
            return EnvironmentSettings(self._streaming, self._configuration)


class TableConfig:
    """`t_env.get_config()`: reads and writes the environment's configuration (same keys as the job's).
    It remembers what this session set (SET lists it) and the values before, which RESET restores."""

    def __init__(self, configuration: Configuration) -> None:
        self._conf = configuration
        self._session: dict[str, str] = {}
        self._before: dict[str, Any] = {}  # key -> its value before the session's first SET (None: unset)

    def get_configuration(self) -> Configuration:
        return self._conf

    def set(self, key: str, value: str) -> TableConfig:
        if key == TABLE_LOCAL_TIME_ZONE.key:
            session_zone.zone_for(value)  # an unknown zone fails here, naming the key
        if key not in self._before:
            self._before[key] = self._conf.to_dict().get(key)
        self._conf.set_string(key, value)
        self._session[key] = value
        return self

    def session_options(self) -> dict[str, str]:
        return dict(self._session)

    def reset(self, key: str | None = None) -> TableConfig:
        """RESET 'key' restores the key's value from before the session set it; RESET restores every key."""
        for k in [key] if key is not None else list(self._before):
            if k not in self._before:
                continue
            previous = self._before.pop(k)
            self._session.pop(k, None)
            if previous is None:
                self._conf.remove_config(k)
            else:
                self._conf.set(k, previous)
        return self

    def get_local_timezone(self) -> str:
        return str(self._conf.get(TABLE_LOCAL_TIME_ZONE))

    def set_local_timezone(self, timezone_id: str) -> TableConfig:
        return self.set(TABLE_LOCAL_TIME_ZONE.key, timezone_id)

    def get(self, key: str, default_value: Any = None) -> Any:
        return self._conf.get_string(key, default_value)


class TableEnvironment:
    def __init__(self, env: StreamExecutionEnvironment, streaming: bool) -> None:
        self._env = env
        self._streaming = streaming
        self._created_streaming = streaming  # what RESET 'execution.runtime-mode' returns to
        self._catalog = Catalog()
        self._elements_count = 0
        self._functions: dict[str, UserDefinedFunctionWrapper] = {}

    @staticmethod
    def create(environment_settings: EnvironmentSettings | Configuration | None = None) -> TableEnvironment:
        if isinstance(environment_settings, Configuration):
            environment_settings = EnvironmentSettings(True, environment_settings)
        settings = environment_settings or EnvironmentSettings.in_streaming_mode()
        env = StreamExecutionEnvironment(settings.get_configuration())
        return TableEnvironment(env, settings.is_streaming_mode())

    @property
    def _final_only(self) -> bool:
        return not self._streaming

    def _use_runtime_mode(self, mode: str | None) -> None:
        """SET 'execution.runtime-mode' = 'batch' | 'streaming' in SQL: the statements after it plan in that
        mode, as in Flink's SQL Client session (its scripts switch modes this way); None (RESET): the mode the
        environment was created in. Flink's Table API has no AUTOMATIC mode."""
        if mode is None:
            self._streaming = self._created_streaming
            return
        value = mode.strip().upper()
        if value not in ("STREAMING", "BATCH"):
            raise ValidationException(f"SET 'execution.runtime-mode' = {mode!r}: a table program runs in 'streaming' "
                                      f"or 'batch' mode")
        self._streaming = value == "STREAMING"

    def get_config(self) -> TableConfig:
        config: TableConfig | None = getattr(self, "_table_config", None)
        if config is None or config.get_configuration() is not self._env.get_configuration():
            config = self._table_config = TableConfig(self._env.get_configuration())
        return config

    def _sync_session(self) -> None:
        """The session zone functions and printing read (strom.table.planner.session_zone)."""
        session_zone.set_zone(str(self._env.get_configuration().get(TABLE_LOCAL_TIME_ZONE)))

    def _validate_table(self, table: CatalogTable) -> None:
        connectors.validate_table(table_context(table))
        table_node(table)  # computed columns and the watermark, as Flink checks them at CREATE

    # -- tables ----------------------------------------------------------------------------------
    def from_elements(self, elements: Any, schema: Any = None, verify_schema: bool = True) -> Table:
        elements = list(elements)
        rows = [tuple(e) if isinstance(e, (tuple, list, Row)) else (e,) for e in elements]
        if isinstance(schema, Schema):
            if schema.computed or schema.metadata or schema.watermark_spec is not None:
                raise ValidationException("from_elements: the Schema may declare physical columns only; computed "
                                          "columns and watermarks need from_data_stream or CREATE TABLE")
            columns = list(schema.columns)
        elif isinstance(schema, DataType):
            if schema.root != "ROW":
                raise ValidationException(f"from_elements: schema must be DataTypes.ROW([...]), got {schema}")
            columns = list(schema.fields)
        else:
            names = list(schema) if schema is not None else None
            if not rows:
                raise ValidationException("from_elements: cannot infer the column types of an empty list; pass "
                                          "DataTypes.ROW([...])")
            first = rows[0]
            if names is None:
                row_names = getattr(first, "_fields", None) if isinstance(elements[0], Row) else None
                names = list(row_names) if row_names else [f"_{i + 1}" for i in range(len(first))]
            if len(names) != len(first):
                raise ValidationException(f"from_elements: {len(names)} column names for rows of {len(first)} fields")
            columns = [(n, type_of_value(v) if v is not None else DataTypes.STRING()) for n, v in zip(
                names, first, strict=True)]
        for r in rows:
            if len(r) != len(columns):
                raise ValidationException(f"from_elements: row {r!r} has {len(r)} fields, the schema {len(columns)}")
        if verify_schema:
            rows = [tuple(check_value(v, t, n) for v, (n, t) in zip(r, columns, strict=True)) for r in rows]
        self._elements_count += 1
        name = f"Unregistered_Collection_Source_{self._elements_count}"
        return Table(self, SourceNode(columns, table_name=name, elements=rows))

    def from_pandas(self, pdf: Any, schema: Any = None, splits_num: int = 1) -> Table:
        """A bounded table of a pandas DataFrame's rows, typed through Arrow as PyFlink types them
        (strom.table.pandas_conversion); `splits_num` slices it as PyFlink does, read in order."""
        from strom.table import pandas_conversion as pc

        columns = pc.dataframe_columns(pdf, schema)
        rows = [r for split in pc.split_rows(pc.dataframe_rows(pdf, columns), splits_num) for r in split]
        self._elements_count += 1
        name = f"Unregistered_Collection_Source_{self._elements_count}"
        return Table(self, SourceNode(columns, table_name=name, elements=rows))

    def create_temporary_view(self, view_path: str, table_or_data_stream: Any, *fields: Any) -> None:
        if not isinstance(table_or_data_stream, Table):
            raise NotSupportedYet("create_temporary_view from a DataStream")
        if fields:
            raise NotSupportedYet("create_temporary_view with field expressions")
        self._catalog.register(CatalogView(self._catalog.normalize(view_path), table_or_data_stream._node))

    def create_temporary_table(self, path: str, descriptor: TableDescriptor) -> None:
        """A table declared by a TableDescriptor, as CREATE TEMPORARY TABLE would declare it."""
        table = catalog_table(self._catalog.normalize(path), descriptor)
        if table.name in self._catalog.names():
            raise ValidationException(f"Temporary table '{CATALOG}.{DATABASE}.{table.name}' already exists")
        self._validate_table(table)
        self._catalog.register(table)

    def create_table(self, path: str, descriptor: TableDescriptor) -> None:
        """A table in the catalog; the only catalog is in memory, so it lives as long as the environment."""
        table = catalog_table(self._catalog.normalize(path), descriptor)
        if table.name in self._catalog.names():
            raise ValidationException(f"Could not execute CreateTable in path `{CATALOG}`.`{DATABASE}`.`{table.name}`:"
                                      " a table or view with that name already exists")
        self._validate_table(table)
        self._catalog.register(table)

    def _insert_into_descriptor(self, descriptor: TableDescriptor, node: PlanNode, overwrite: bool) -> TableResult:
        """Table.execute_insert(descriptor): an anonymous table for this INSERT only."""
        self._elements_count += 1
        name = f"*anonymous_{descriptor.get_options().get('connector')}${self._elements_count}*"
        table = catalog_table(name, descriptor)
        self._validate_table(table)
        self._catalog.register(table)
        try:
            return self._insert(name, node, None, overwrite)
        finally:
            self._catalog.drop(name, if_exists=True, view=False)

    def from_path(self, path: str) -> Table:
        return Table(self, self._scan(path))

    def list_tables(self) -> list[str]:
        return self._catalog.names()

    def list_views(self) -> list[str]:
        return self._catalog.names(views_only=True)

    def list_temporary_views(self) -> list[str]:
        return self._catalog.names(views_only=True)

    def drop_temporary_view(self, view_path: str) -> bool:
        try:
            self._catalog.drop(view_path, if_exists=False, view=True)
        except ValidationException:
            return False
        return True

    def _scan(self, path: str) -> PlanNode:
        obj = self._catalog.get(path)
        if isinstance(obj, CatalogView):
            return obj.node
        ctx = table_context(obj)
        factory = connectors.factory_for(obj.name, obj.options)
        if not factory.is_source():
            factory.build_source(ctx, None, "", batch=False)  # raises the connector's "is a sink" error
        if not self._streaming and not factory.is_bounded(ctx):
            raise ValidationException(
                f"table {obj.name!r} is unbounded; batch mode needs bounded sources{factory.bounded_hint}")
        return table_node(obj, batch=self._final_only)

    # -- functions -------------------------------------------------------------------------------
    def create_temporary_function(self, path: str, function: Any) -> None:
        """A Python function (made by udf/udtf/udaf) callable by `path` from SQL and call('path', ..)."""
        key = path.split(".")[-1].lower()
        if key in self._functions:
            raise ValidationException(f"temporary function {path!r} already exists; drop it first "
                                      "(drop_temporary_function)")
        self._functions[key] = as_function(path.split(".")[-1], function)

    def create_temporary_system_function(self, name: str, function: Any) -> None:
        key = name.lower()
        if key in self._functions:
            raise ValidationException(f"temporary system function {name!r} already exists; drop it first "
                                      "(drop_temporary_system_function)")
        self._functions[key] = as_function(name, function)

    def drop_temporary_function(self, path: str) -> bool:
        return self._functions.pop(path.split(".")[-1].lower(), None) is not None

    drop_temporary_system_function = drop_temporary_function

    def list_user_defined_functions(self) -> list[str]:
        return sorted(self._functions)

    list_functions = list_user_defined_functions

    def _state_ttl_ms(self) -> int:
        return int(self._env.get_configuration().get(TABLE_STATE_TTL))

    def resolve_functions(self, e: Expression) -> Expression:
        """`call('name', ..)` of the Table API -> the registered function's call."""
        args = tuple(self.resolve_functions(a) for a in e.args)
        if e.op == "call" and e.name == "named_call":
            f = self._functions.get(str(e.value).lower())
            if f is None:
                raise ValidationException(f"no function named {e.value!r}; register it with "
                                          "t_env.create_temporary_function(name, f)")
            return f(*args)
        if all(a is b for a, b in zip(args, e.args, strict=True)):
            return e
        return Expression(e.op, e.name, args, e.value, e.data_type, e.is_distinct)

    # -- SQL -------------------------------------------------------------------------------------
    def sql_query(self, query: str) -> Table:
        self._sync_session()
        try:
            return Table(self, self._plan_query(sqlp.parse_query(query)))
        except ValidationException as e:
            raise positions.with_position(e, query) from None

    def execute_sql(self, stmt: str) -> TableResult:
        try:
            return self._execute_sql(stmt)
        except ValidationException as e:  # an unknown column or table: where it is, as Flink's validator says
            raise positions.with_position(e, stmt) from None

    def _execute_sql(self, stmt: str) -> TableResult:
        self._sync_session()
        s = sqlp.parse_statement(stmt)
        pending: StatementSet | None = getattr(self, "_pending_set", None)
        if pending is not None:  # BEGIN STATEMENT SET; .. END; as Flink's SQL client runs it
            if isinstance(s, sqlp.Insert):
                pending._add(s)
                return _ok()
            if isinstance(s, sqlp.StatementSetEnd):
                self._pending_set = None
                return pending.execute()
            raise ValidationException(f"only INSERT statements can be added to a statement set (BEGIN STATEMENT "
                                      f"SET .. END), got {stmt.strip().split()[0]!r}")
        if isinstance(s, sqlp.StatementSetBegin):
            self._pending_set = StatementSet(self)
            return _ok()
        if isinstance(s, sqlp.StatementSetEnd):
            raise ValidationException("END without BEGIN STATEMENT SET")
        if isinstance(s, sqlp.ExecuteStatementSet):
            statement_set = StatementSet(self)
            for insert in s.inserts:
                statement_set._add(insert)
            return statement_set.execute()
        if isinstance(s, sqlp.Set):
            return sql_session.set_option(self, s)
        if isinstance(s, sqlp.Reset):
            return sql_session.reset_option(self, s)
        if isinstance(s, sqlp.Use):
            return sql_session.use(s)
        if isinstance(s, sqlp.ShowCreateTable):
            return sql_session.show_create(self, s)
        if isinstance(s, sqlp.AlterTable):
            return sql_session.alter_table(self, s)
        if isinstance(s, sqlp.Show) and s.what not in ("TABLES", "VIEWS"):
            return sql_session.show(self, s.what)
        if isinstance(s, sqlp.CreateTable) and s.like is not None:
            s = sql_session.merge_like(self, s)
        if isinstance(s, sqlp.CreateTable):
            table = CatalogTable(self._catalog.normalize(s.name), s.columns, s.options, s.computed, s.order,
                                 s.watermark, s.primary_key, s.partition_keys)
            connectors.validate_table(table_context(table))
            table_node(table)  # validates computed columns and the watermark now, as Flink does at CREATE
            self._catalog.register(table, if_not_exists=s.if_not_exists)
            return _ok()
        if isinstance(s, sqlp.CreateFunction):
            if not (s.if_not_exists and s.name.split(".")[-1].lower() in self._functions):
                self.create_temporary_function(s.name, import_function(s.path, s.name))
            return _ok()
        if isinstance(s, sqlp.DropFunction):
            if not self.drop_temporary_function(s.name) and not s.if_exists:
                raise ValidationException(f"function {s.name!r} does not exist (DROP FUNCTION IF EXISTS skips it)")
            return _ok()
        if isinstance(s, sqlp.CreateView):
            node = self._plan_query(s.query)
            self._catalog.register(CatalogView(self._catalog.normalize(s.name), node), if_not_exists=s.if_not_exists)
            return _ok()
        if isinstance(s, sqlp.Drop):
            self._catalog.drop(s.name, s.if_exists, s.view)
            return _ok()
        if isinstance(s, sqlp.Show):
            column = "table name" if s.what == "TABLES" else "view name"
            names = self._catalog.names(views_only=s.what == "VIEWS")
            return TableResult([(column, DataTypes.STRING(False))], ResultKind.SUCCESS_WITH_CONTENT,
                               rows=[Row(n) for n in names])
        if isinstance(s, sqlp.Describe):
            return self._describe(s.name)
        if isinstance(s, sqlp.Explain):
            plan = self._plan_query(s.query)
            text = "== Optimized Physical Plan ==\n" + scan_fusion.with_pushdown(plan).digest() + "\n"
            text += batch_sql.explain(self, plan) if not self._streaming else ""
            return TableResult([("result", DataTypes.STRING(False))], ResultKind.SUCCESS_WITH_CONTENT,
                               rows=[Row(text)])
        if isinstance(s, sqlp.Insert):
            return self._insert(s.target, self._insert_plan(s), s.columns, s.overwrite)
        if isinstance(s, sqlp.Query):
            return self._execute_query(self._plan_query(s.query))
        raise NotSupportedYet(f"statement {type(s).__name__}")

    def _describe(self, name: str) -> TableResult:
        obj = self._catalog.get(name)
        columns = table_node(obj).columns if isinstance(obj, CatalogTable) else obj.node.columns
        computed = dict(obj.computed) if isinstance(obj, CatalogTable) else {}
        watermark = obj.watermark if isinstance(obj, CatalogTable) else None
        s, b = DataTypes.STRING(), DataTypes.BOOLEAN(False)
        schema = [("name", s), ("type", s), ("null", b), ("key", s), ("extras", s), ("watermark", s)]
        rows = [Row(n, t.base() + (f" *{t.time_attr}*" if t.time_attr else ""), t.nullable, "",
                    f"AS {computed[n].sql()}" if n in computed else "",
                    watermark[1].sql() if watermark is not None and watermark[0] == n else "")
                for n, t in columns]
        return TableResult(schema, ResultKind.SUCCESS_WITH_CONTENT, rows=rows)

    def _plan_query(self, tree: Any) -> PlanNode:
        return self._plan_parts(sqlp.select_parts(tree, self._functions))

    def _plan_parts(self, parts: sqlp.SelectParts | sqlp.UnionParts | sqlp.ValuesParts) -> PlanNode:
        if isinstance(parts, sqlp.ValuesParts):
            self._elements_count += 1
            return values_node(parts.rows, parts.names, f"Values_{self._elements_count}")
        if isinstance(parts, sqlp.UnionParts):
            node = builder.union_all([self._plan_parts(p) for p in parts.inputs])
            return node if parts.all else builder.distinct(node, self._final_only)
        hidden = top_n.hidden_sort_columns(parts)
        if hidden:  # ORDER BY columns the select list drops: carried through the sort, then projected away
            parts = dataclasses.replace(parts, select=[*parts.select, *hidden])
        node = self._plan_select(parts)
        node = builder.distinct(node, self._final_only) if parts.distinct else node
        if parts.order_by or parts.limit is not None:
            node = top_n.sort_limit(node, parts.order_by, parts.limit, self._final_only, hidden=len(hidden))
        return node

    def _plan_from(self, parts: sqlp.SelectParts) -> PlanNode:
        if isinstance(parts.source, WindowTVF):  # a window TVF's rows (e.g. under a window Top-N)
            source, window, window_columns = windowing.window_tvf(self._scan(parts.source.table), parts.source)
            node = windowing.window_table_function(source, parts.source, window, window_columns)
        else:
            node = self._scan(parts.source) if isinstance(parts.source, str) else self._plan_parts(parts.source)
        if parts.lateral is not None:
            node = correlate.correlate(node, parts.lateral.call, parts.lateral.names, parts.lateral.left_outer)
        return node

    def _plan_joins(self, parts: sqlp.SelectParts) -> tuple[PlanNode, sqlp.SelectParts, join.Scope]:
        """The FROM's joins, and `parts` with its column references resolved over the join's output (a
        comma join's WHERE moved into the join condition)."""
        source = self._plan_from(parts)
        scope = join.scope_of(parts.source_qualifier, source)
        for j in parts.joins:
            if j.as_of is not None:  # FOR SYSTEM_TIME AS OF: a temporal join (event time) or lookup join
                assert j.on is not None and isinstance(j.source, str)
                source, scope = plan_temporal(
                    source, scope, lambda name=j.source: self._scan(name), j.qualifier, j.kind, j.on, j.as_of,
                    self._final_only, self._catalog.get(j.source))
                continue
            right = self._scan(j.source) if isinstance(j.source, str) else self._plan_parts(j.source)
            on = j.on
            if on is None:  # FROM a, b WHERE ..: the WHERE is the join condition
                on, parts = parts.where if parts.where is not None else lit(True), dataclasses.replace(
                    parts, where=None)
            source, scope = join.plan_join(source, scope, right, j.qualifier, j.kind, on, self._final_only,
                                           self._state_ttl_ms())
        return source, join.resolve_parts(parts, scope), scope

    def _plan_select(self, parts: sqlp.SelectParts) -> PlanNode:
        if isinstance(parts.source, WindowTVF):
            source, window, window_columns = windowing.window_tvf(self._scan(parts.source.table), parts.source)
            if windowing.groups_by_window(parts.group_by):
                node = source if parts.where is None else builder.filter_(source, parts.where)
                keys = windowing.non_window_keys(parts.group_by)
                return builder.window_aggregate(node, window, keys, parts.select, parts.having, window_columns)
            source = windowing.window_table_function(source, parts.source, window, window_columns)
        elif isinstance(parts.source, sqlp.SelectParts) and top_n.over_item(parts.source.select) is not None:
            inner = parts.source
            if inner.group_by is not None or inner.distinct or inner.order_by or inner.limit is not None:
                raise NotSupportedYet("ROW_NUMBER() OVER in a query with GROUP BY, DISTINCT, ORDER BY or LIMIT")
            if inner.joins:  # `SELECT A.*, .., ROW_NUMBER() OVER (..) FROM a A, b B WHERE ..` (Nexmark q9)
                inner_source, inner, _ = self._plan_joins(inner)
            else:
                inner_source = self._plan_from(inner)
            if inner.where is not None:
                inner_source = builder.filter_(inner_source, inner.where)
            source, where = top_n.plan_top_n(inner_source, inner.select, parts.select, parts.where,
                                             self._final_only)
            parts = dataclasses.replace(parts, where=where)
        elif parts.joins:
            source, parts, scope = self._plan_joins(parts)
            try:
                return self._plan_over_source(source, parts)
            except ValidationException as e:
                raise join.written_names(e, scope) from None
        else:
            source = self._plan_from(parts)
        return self._plan_over_source(source, parts)

    def _plan_over_source(self, source: PlanNode, parts: sqlp.SelectParts) -> PlanNode:
        """A SELECT's aggregation, OVER aggregates or projection over its planned FROM."""
        if parts.group_by is None and over_agg.has_over_aggregate(parts.select):
            return over_agg.plan_over(source, parts.select, parts.where)
        if parts.group_by is not None and windowing.group_window_call(parts.group_by) is not None:
            node = source if parts.where is None else builder.filter_(source, parts.where)
            return windowing.group_window_aggregate(node, parts.group_by, parts.select, parts.having)
        if parts.group_by is not None:
            node = source if parts.where is None else builder.filter_(source, parts.where)
            return builder.aggregate(node, parts.group_by, parts.select, parts.having, self._final_only)
        if parts.having is not None and not any(e.contains_aggregate() for e in parts.select):
            raise NotSupportedYet("HAVING without GROUP BY or aggregates")
        if any(e.contains_aggregate() for e in parts.select) or parts.having is not None:
            node = source if parts.where is None else builder.filter_(source, parts.where)
            return builder.aggregate(node, [], parts.select, parts.having, self._final_only)
        return builder.select(source, parts.select, parts.where)

    # -- execution -------------------------------------------------------------------------------
    def _job_env(self, node: PlanNode | None = None) -> StreamExecutionEnvironment:
        """A fresh environment per job; a plan reading a DataStream runs where that stream lives."""
        if node is not None and _reads_data_stream(node):
            return self._env
        conf = self._env.get_configuration().copy()
        if self._streaming != self._created_streaming:
            # a session SET the mode: the planner's own plan says how the job runs (final rows in batch), so
            # the DataStream job is not turned into a DataStream BATCH job by the key it left behind
            conf.remove_config("execution.runtime-mode")
        return StreamExecutionEnvironment(conf)

    def _execute_query(self, node: PlanNode) -> TableResult:
        if not self._streaming and (on_spark := batch_sql.run_query(self, node)) is not None:
            return on_spark
        env = self._job_env(node)
        ds = translate(node, env)

        def start() -> Any:
            return ds.execute_and_collect("collect")

        return TableResult(list(node.columns), ResultKind.SUCCESS_WITH_CONTENT, start=start,
                           streaming=self._streaming)

    def _insert(self, target: str, node: PlanNode, columns: list[str] | None = None,
                overwrite: bool = False) -> TableResult:
        return self._execute_inserts([(target, node, columns, overwrite)])

    def create_statement_set(self) -> StatementSet:
        """Several INSERTs run as one job (see strom.table.statement_set)."""
        return StatementSet(self)

    def _insert_plan(self, s: sqlp.Insert) -> PlanNode:
        """An INSERT's query plan; with a static PARTITION (k = 'v') spec, the constants fill those columns."""
        node = self._plan_query(s.query)
        if s.static_partition:
            obj = self._catalog.get(s.target)
            if isinstance(obj, CatalogTable):
                node = insert_columns.fill_static_partition(node, obj.name, obj.columns, tuple(obj.partition_keys),
                                                            s.static_partition)
        return node

    def _check_insert(self, target: str, node: PlanNode, columns: list[str] | None = None,
                      overwrite: bool = False) -> tuple[CatalogTable, PlanNode]:
        """The sink table and the query's plan fitted to it (a column list fills the other columns with NULL),
        or a one-line error naming the column / table."""
        obj = self._catalog.get(target)
        if isinstance(obj, CatalogView):
            raise ValidationException(f"cannot INSERT INTO view {obj.name!r}")
        ctx = table_context(obj)
        factory = connectors.factory_for(obj.name, obj.options)
        if not factory.is_sink():
            factory.build_sink(ctx, None, "")  # raises the connector's "is a source" error
        full = f"{CATALOG}.{DATABASE}.{obj.name}"
        if overwrite:
            if obj.options.get("connector") != "filesystem":
                raise ValidationException(f"INSERT OVERWRITE requires that the underlying DynamicTableSink of table "
                                          f"'{full}' implements the SupportsOverwrite interface.")
            if self._streaming:
                raise ValidationException(f"INSERT OVERWRITE {full}: Streaming mode not support overwrite.")
            if not getattr(factory, "supports_overwrite", False):
                raise NotSupportedYet("INSERT OVERWRITE into the filesystem connector")
        if columns is not None:
            node = insert_columns.fit_column_list(node, obj.name, obj.columns, columns)
        sink_types = [t for _, t in obj.columns]
        query_types = [t for _, t in node.columns]
        if len(sink_types) != len(query_types):
            raise ValidationException(
                f"INSERT INTO {obj.name}: the query has {len(query_types)} columns, the sink {len(sink_types)} "
                f"({', '.join(n for n, _ in obj.columns)})"
            )
        for (n, st), qt in zip(obj.columns, query_types, strict=True):
            if st.root != qt.root and not (st.is_numeric and qt.is_numeric):
                raise ValidationException(f"INSERT INTO {obj.name}: column {n!r} is {st.base()}, the query gives "
                                          f"{qt.base()}")
        return obj, node

    def _execute_inserts(self, inserts: list[tuple[str, PlanNode, list[str] | None, bool]]) -> TableResult:
        """INSERTs as ONE job: identical sub-plans are translated once (the memo) and feed every sink."""
        self._sync_session()
        checked = [(self._check_insert(t, n, c, o), o) for t, n, c, o in inserts]
        if not self._streaming:
            on_spark = batch_sql.run_inserts(self, [(t, n, o) for (t, n), o in checked])
            if on_spark is not None:
                return on_spark
        env = self._job_env(next((n for (_, n), _ in checked if _reads_data_stream(n)), None))
        # the sources each INSERT reads, counted over all of them: a source read once is fused with its Calcs
        memo: dict[str, Any] = {scan_fusion.CONSUMERS_KEY: scan_fusion.count_sources([n for (_, n), _ in checked])}
        names = []
        for (obj, node), overwrite in checked:
            ctx = table_context(obj)
            if overwrite and hasattr(ctx, "overwrite"):
                ctx = dataclasses.replace(ctx, overwrite=True)
            factory = connectors.factory_for(obj.name, obj.options)
            full = f"{CATALOG}.{DATABASE}.{obj.name}"
            changelog = sink_changelog.plan_sink_changelog(
                node, sink_name=full, mode=factory.sink_mode(ctx), sink_columns=ctx.column_names(),
                primary_key=ctx.primary_key,
                materialize=self.get_config().get(sink_changelog.UPSERT_MATERIALIZE, "AUTO"))
            ds = translate(node, env, memo)
            uid = node.uid("sink-" + obj.name)
            ds = sink_changelog.apply_sink_changelog(ds, changelog, ctx.column_names(), uid)
            factory.build_sink(ctx, ds, uid)
            names.append(full)
        job_name = "insert-into_" + ",".join(names)
        client = None
        if _submitting_client_without_job_handles():
            env.execute(job_name)  # `strom submit`: submits the job and returns (detached)
        else:
            client = env.execute_async(job_name)
            if self.get_config().get_configuration().get(TABLE_DML_SYNC):
                client.wait(None)
        return TableResult([(n, DataTypes.BIGINT(False)) for n in names], ResultKind.SUCCESS_WITH_CONTENT,
                           rows=[Row(*([-1] * len(names)))], job_client=client)

    def execute_plan_to_stream(self, table: Table, env: StreamExecutionEnvironment) -> DataStream:
        return translate(table._node, env)


class StreamTableEnvironment(TableEnvironment):
    @staticmethod
    def create(  # type: ignore[override]
        stream_execution_environment: StreamExecutionEnvironment | None = None,
        environment_settings: EnvironmentSettings | None = None,
    ) -> StreamTableEnvironment:
        env = stream_execution_environment or StreamExecutionEnvironment.get_execution_environment()
        streaming = environment_settings.is_streaming_mode() if environment_settings else True
        if not streaming:
            raise ValidationException("StreamTableEnvironment runs in streaming mode; use TableEnvironment.create("
                                      "EnvironmentSettings.in_batch_mode()) for batch")
        return StreamTableEnvironment(env, True)

    def to_changelog_stream(self, table: Table, target_schema: Any = None, changelog_mode: Any = None) -> DataStream:
        """The table as a DataStream of Rows, each with its RowKind (+I, -U, +U, -D)."""
        if target_schema is not None or changelog_mode is not None:
            raise NotSupportedYet("to_changelog_stream with a target schema or changelog mode")
        return translate(table._node, self._env)

    def to_data_stream(self, table: Table, target_data_type: Any = None) -> DataStream:
        """An insert-only table as a DataStream of Rows; an updating table is refused, as Flink does."""
        if target_data_type is not None:
            raise NotSupportedYet("to_data_stream with a target data type")
        node = table._node
        if node.updating:
            raise ValidationException(
                f"Table sink '*anonymous_datastream_sink*' doesn't support consuming update changes which is "
                f"produced by node {_updating_node(node).describe()}; use to_changelog_stream"
            )
        return translate(node, self._env)

    def to_append_stream(self, table: Table, type_info: Any) -> DataStream:
        return self.to_data_stream(table)

    def to_retract_stream(self, table: Table, type_info: Any) -> DataStream:
        raise NotSupportedYet("to_retract_stream (use to_changelog_stream)")

    def from_data_stream(self, data_stream: DataStream, *fields_or_schema: Expression | Schema) -> Table:
        """The stream as a table: columns from its type (or the Schema), with the Schema's rowtime
        metadata, computed columns and watermark (see strom.table.data_stream_conversion)."""
        if fields_or_schema and not (len(fields_or_schema) == 1 and isinstance(fields_or_schema[0], Schema)):
            raise NotSupportedYet("from_data_stream with field expressions (col('ts').rowtime); pass a Schema")
        if data_stream.get_execution_environment() is not self._env:
            raise ValidationException("from_data_stream: the DataStream belongs to another "
                                      "StreamExecutionEnvironment than this StreamTableEnvironment's")
        schema = fields_or_schema[0] if fields_or_schema else None
        return Table(self, data_stream_node(data_stream, schema))  # type: ignore[arg-type]

    def from_changelog_stream(self, data_stream: DataStream, schema: Schema | None = None,
                              changelog_mode: Any = None) -> Table:
        """A stream of Rows whose RowKinds (+I, -U, +U, -D) are the changes of the table (Flink's default
        changelog mode: all kinds)."""
        if changelog_mode is not None and not getattr(changelog_mode, "is_all", lambda: False)():
            raise NotSupportedYet("from_changelog_stream with a changelog mode other than ChangelogMode.all()")
        if data_stream.get_execution_environment() is not self._env:
            raise ValidationException("from_changelog_stream: the DataStream belongs to another "
                                      "StreamExecutionEnvironment than this StreamTableEnvironment's")
        return Table(self, data_stream_node(data_stream, schema, changelog=True))


def _reads_data_stream(node: PlanNode) -> bool:
    return isinstance(node, DataStreamScanNode) or any(_reads_data_stream(i) for i in node.inputs)


def table_node(obj: CatalogTable, batch: bool = False) -> PlanNode:
    """A catalog table as a plan: its connector's physical columns, then its computed columns in declared
    order (a Calc), then its watermark (which makes the column a ROWTIME attribute)."""
    node: PlanNode = SourceNode(list(obj.columns), table_name=f"{CATALOG}.{DATABASE}.{obj.name}",
                                options=dict(obj.options), primary_key=obj.primary_key,
                                partition_keys=obj.partition_keys,
                                changelog=connectors.factory_for(obj.name, obj.options).source_is_updating(
                                    table_context(obj)))
    if obj.computed:
        computed = dict(obj.computed)
        node = builder.select(node, [computed[n].alias(n) if n in computed else col(n) for n in obj.order])
    if obj.watermark is not None:
        node = windowing.watermark_assigner(node, obj.watermark[0], obj.watermark[1], obj.name, batch=batch)
    return node


def table_context(obj: CatalogTable) -> connectors.TableContext:
    return connectors.TableContext(obj.name, list(obj.columns), dict(obj.options), obj.primary_key,
                                   obj.partition_keys, f"{CATALOG}.{DATABASE}.{obj.name}")


def _submitting_client_without_job_handles() -> bool:
    """A client that submits graphs without handing out job handles (`strom submit` is detached): an INSERT
    then goes through execute(), which submits, instead of execute_async, which would run it in-process."""
    from strom.datastream import stream_execution_environment as see

    ctx = see._context_executor
    return ctx is not None and not hasattr(ctx, "start_job")


def _updating_node(node: PlanNode) -> PlanNode:
    for i in node.inputs:
        if i.updating:
            return _updating_node(i)
    return node


def _ok() -> TableResult:
    return TableResult([("result", DataTypes.STRING(False))], ResultKind.SUCCESS, rows=[Row("OK")])
