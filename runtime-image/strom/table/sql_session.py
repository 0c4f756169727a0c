"""The SQL statements that act on the session rather than run a job: SET / RESET (the TableConfig),
USE, SHOW FUNCTIONS / CATALOGS / DATABASES / CURRENT ..., SHOW CREATE TABLE, ALTER TABLE, and
CREATE TABLE .. LIKE's merging rules (Flink's, from its CREATE TABLE documentation).

Only the in-memory `default_catalog.default_database` exists (issue 19), so USE accepts only it and
names what exists otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from strom.common.row import Row
from strom.table.errors import ValidationException
from strom.table.sql import parser as sqlp
from strom.table.sql.catalog import CATALOG, DATABASE, CatalogTable, CatalogView
from strom.table.table_result import ResultKind, TableResult
from strom.table.types import DataTypes

if TYPE_CHECKING:
    from strom.table.environment import TableEnvironment

# Flink's built-in function names SHOW FUNCTIONS lists next to the session's own (the ones Strom runs)
BUILT_IN_FUNCTIONS = sorted({
    "abs", "acos", "and", "ascii", "asin", "atan", "atan2", "avg", "between", "case", "cast", "ceil", "char_length",
    "chr", "coalesce", "concat", "concat_ws", "cos", "count", "current_date", "current_timestamp", "date_format",
    "dayofmonth", "dayofweek", "dayofyear", "degrees", "e", "exp", "extract", "floor", "from_unixtime", "greatest",
    "hop", "hop_end", "hop_rowtime", "hop_start", "hour", "if", "in", "initcap", "is_json", "json_array",
    "json_exists", "json_object", "json_query", "json_value", "least", "left", "like", "ln", "localtimestamp",
    "locate", "log", "log10", "log2", "lower", "lpad", "ltrim", "max", "md5", "min", "minute", "mod", "month", "not",
    "now", "nullif", "or", "pi", "position", "power", "proctime", "quarter", "radians", "rand", "rand_integer",
    "regexp", "regexp_extract", "regexp_replace", "repeat", "replace", "reverse", "right", "round", "row_number",
    "rpad", "rtrim", "second", "sha1", "sha256", "sign", "sin", "split_index", "sqrt", "substr", "substring", "sum",
    "tan", "timestampadd", "timestampdiff", "to_date", "to_timestamp", "to_timestamp_ltz", "trim", "truncate",
    "try_cast", "tumble", "tumble_end", "tumble_rowtime", "tumble_start", "unix_timestamp", "upper", "week", "year",
})


def _strings(column: str, values: list[str]) -> TableResult:
    return TableResult([(column, DataTypes.STRING(False))], ResultKind.SUCCESS_WITH_CONTENT,
                       rows=[Row(v) for v in values])


def _ok() -> TableResult:
    return TableResult([("result", DataTypes.STRING(False))], ResultKind.SUCCESS, rows=[Row("OK")])


def show(t_env: TableEnvironment, what: str) -> TableResult:
    if what in ("TABLES", "VIEWS"):
        return _strings("table name" if what == "TABLES" else "view name",
                        t_env._catalog.names(views_only=what == "VIEWS"))
    if what == "USER FUNCTIONS":
        return _strings("function name", t_env.list_user_defined_functions())
    if what == "FUNCTIONS":
        return _strings("function name", sorted(set(BUILT_IN_FUNCTIONS) | set(t_env.list_user_defined_functions())))
    if what == "CATALOGS":
        return _strings("catalog name", [CATALOG])
    if what == "DATABASES":
        return _strings("database name", [DATABASE])
    if what == "CURRENT CATALOG":
        return _strings("current catalog name", [CATALOG])
    return _strings("current database name", [DATABASE])


def set_option(t_env: TableEnvironment, s: sqlp.Set) -> TableResult:
    """SET 'key' = 'value' sets the session's TableConfig; SET alone lists what the session set."""
    config = t_env.get_config()
    if s.key is None:
        rows = sorted(config.session_options().items())
        return TableResult([("key", DataTypes.STRING(False)), ("value", DataTypes.STRING(False))],
                           ResultKind.SUCCESS_WITH_CONTENT, rows=[Row(k, v) for k, v in rows])
    if s.key == RUNTIME_MODE:
        t_env._use_runtime_mode(s.value or "")  # refuses AUTOMATIC before the configuration takes it
    try:
        config.set(s.key, s.value or "")
    except ValueError as e:
        raise ValidationException(f"SET {s.key!r}: {e}") from None
    return _ok()


def reset_option(t_env: TableEnvironment, s: sqlp.Reset) -> TableResult:
    t_env.get_config().reset(s.key)
    if s.key in (None, RUNTIME_MODE):
        t_env._use_runtime_mode(None)
    return _ok()


RUNTIME_MODE = "execution.runtime-mode"


def use(s: sqlp.Use) -> TableResult:
    name = s.name
    if s.catalog:
        if name != CATALOG:
            raise ValidationException(f"A catalog with name [{name}] does not exist; the only catalog is {CATALOG!r}")
        return _ok()
    parts = name.split(".")
    if len(parts) == 2 and parts[0] != CATALOG:
        raise ValidationException(f"A catalog with name [{parts[0]}] does not exist; the only catalog is {CATALOG!r}")
    if parts[-1] != DATABASE or len(parts) > 2:
        raise ValidationException(f"A database with name [{name}] does not exist in the catalog: [{CATALOG}]; "
                                  f"the only database is {DATABASE!r}")
    return _ok()


def _quote(name: str) -> str:
    return f"`{name}`"


def show_create(t_env: TableEnvironment, s: sqlp.ShowCreateTable) -> TableResult:
    """The DDL that creates the table again, laid out as Flink's SHOW CREATE TABLE prints it."""
    obj = t_env._catalog.get(s.name)
    full = f"`{CATALOG}`.`{DATABASE}`.`{obj.name}`"
    if isinstance(obj, CatalogView):
        if not s.view:
            raise ValidationException(f"SHOW CREATE TABLE is only supported for tables, but {full} is a view. "
                                      "Please use SHOW CREATE VIEW instead.")
        raise ValidationException(f"SHOW CREATE VIEW {full}: the view's query text is not kept (views are plans)")
    if s.view:
        raise ValidationException(f"SHOW CREATE VIEW is only supported for views, but {full} is a table. "
                                  "Please use SHOW CREATE TABLE instead.")
    physical = dict(obj.columns)
    computed = dict(obj.computed)
    lines = []
    for name in obj.order or [n for n, _ in obj.columns]:
        if name in computed:
            lines.append(f"  {_quote(name)} AS {computed[name].sql()}")
        else:
            lines.append(f"  {_quote(name)} {physical[name]}")
    if obj.watermark is not None:
        lines.append(f"  WATERMARK FOR {_quote(obj.watermark[0])} AS {obj.watermark[1].sql()}")
    primary_key = getattr(obj, "primary_key", ())
    if primary_key:
        lines.append(f"  CONSTRAINT `PK_{'_'.join(primary_key)}` PRIMARY KEY ({', '.join(map(_quote, primary_key))}) "
                     "NOT ENFORCED")
    options = ",\n".join(f"  '{k}' = '{v}'" for k, v in obj.options.items())
    ddl = f"CREATE TABLE {full} (\n" + ",\n".join(lines) + "\n) WITH (\n" + options + "\n)\n"
    return _strings("result", [ddl])


def alter_table(t_env: TableEnvironment, s: sqlp.AlterTable) -> TableResult:
    catalog = t_env._catalog
    name = catalog.normalize(s.name)
    if name not in catalog.names():
        if s.if_exists:
            return _ok()
        catalog.get(name)  # raises: not found, naming what exists
    obj = catalog.get(name)
    if isinstance(obj, CatalogView):
        raise ValidationException(f"ALTER TABLE {name}: {name!r} is a view, not a table")
    if s.new_name is not None:
        new = catalog.normalize(s.new_name)
        if new in catalog.names():
            raise ValidationException(f"ALTER TABLE {name} RENAME TO {new}: a table or view {new!r} already exists")
        catalog.drop(name, if_exists=False, view=False)
        catalog.register(dataclasses.replace(obj, name=new))
        return _ok()
    options = dict(obj.options)
    options.update(s.set_options)
    for key in s.reset_keys:
        if key == "connector":
            raise ValidationException(f"ALTER TABLE {name} RESET: the 'connector' option cannot be reset")
        options.pop(key, None)
    altered = dataclasses.replace(obj, options=options)
    t_env._validate_table(altered)
    catalog.register(altered, replace=True)
    return _ok()


def merge_like(t_env: TableEnvironment, s: sqlp.CreateTable) -> sqlp.CreateTable:
    """CREATE TABLE .. LIKE: the source table's columns first, then the new ones; computed columns,
    watermarks and options by their INCLUDING / EXCLUDING / OVERWRITING strategy (Flink's rules: a
    clash under INCLUDING is an error, OVERWRITING takes the new definition)."""
    like = s.like
    assert like is not None
    source = t_env._catalog.get(like.source)
    if isinstance(source, CatalogView):
        raise ValidationException(f"Source table '{CATALOG}.{DATABASE}.{source.name}' of the LIKE clause can not be "
                                  "a VIEW")
    strategy = like.strategies
    columns = list(source.columns)
    base_names = {n for n, _ in columns} | {n for n, _ in source.computed}
    computed: list[tuple[str, Any]] = list(source.computed) if strategy["GENERATED"] != "EXCLUDING" else []
    order = [n for n in (source.order or [n for n, _ in source.columns])
             if n in dict(columns) or n in dict(computed)]
    for name, t in s.columns:
        if name in base_names:
            raise ValidationException(f"A column named '{name}' already exists in the base table.")
        columns.append((name, t))
    for name, e in s.computed:
        if name in dict(computed):
            if strategy["GENERATED"] == "INCLUDING":
                raise ValidationException(f"A generated column named '{name}' already exists in the base table. You "
                                          "might want to specify EXCLUDING GENERATED or OVERWRITING GENERATED.")
            computed = [(n, x) for n, x in computed if n != name]
        elif name in base_names:
            raise ValidationException(f"A column named '{name}' already exists in the base table.")
        computed.append((name, e))
    order += [n for n in s.order if n not in order]
    watermark = source.watermark if strategy["WATERMARKS"] != "EXCLUDING" else None
    if s.watermark is not None:
        if watermark is not None and strategy["WATERMARKS"] == "INCLUDING":
            raise ValidationException(f"There already exists a watermark spec for column '{watermark[0]}' in the base "
                                      "table. You might want to specify EXCLUDING WATERMARKS or OVERWRITING "
                                      "WATERMARKS.")
        watermark = s.watermark
    options = dict(source.options) if strategy["OPTIONS"] != "EXCLUDING" else {}
    for key, value in s.options.items():
        if key in options and strategy["OPTIONS"] == "INCLUDING":
            raise ValidationException(f"There already exists an option ['{key}' -> '{options[key]}']  in the base "
                                      "table. You might want to specify EXCLUDING OPTIONS or OVERWRITING OPTIONS.")
        options[key] = value
    extra: dict[str, Any] = {}
    if isinstance(source, CatalogTable) and strategy["CONSTRAINTS"] == "INCLUDING" and not s.primary_key:
        extra["primary_key"] = getattr(source, "primary_key", ())
    if isinstance(source, CatalogTable) and strategy["PARTITIONS"] == "INCLUDING" and not s.partition_keys:
        extra["partition_keys"] = getattr(source, "partition_keys", ())
    extra = {k: v for k, v in extra.items() if hasattr(s, k)}
    return dataclasses.replace(s, columns=columns, computed=computed, order=order, watermark=watermark,
                               options=options, like=None, **extra)
