"""Python UDFs (issue 19): scalar functions, table functions (LATERAL TABLE / join_lateral) and aggregate
functions, registered by name for SQL and called directly from the Table API. Results are compared with
DuckDB computing the same functions in SQL over the same rows; streaming changelogs are reduced first."""

from __future__ import annotations

import pytest
from strom.common.row import RowKind
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment, TableException, ValidationException
from strom.table.errors import NotSupportedYet
from strom.table.expressions import call, col
from strom.table.udf import AggregateFunction, ScalarFunction, udaf, udf, udtf

from .reference import duckdb_table, normalize, reduce_changelog

COLUMNS = [("k", "VARCHAR"), ("s", "VARCHAR"), ("v", "INTEGER"), ("w", "INTEGER")]
ROWS = [
    ("a", "red green", 1, 2),
    ("a", "", 4, 1),
    ("b", "blue", 3, 3),
    ("b", None, None, 1),
    ("c", "x y z", 7, 2),
    ("a", "green", 5, 4),
]
TYPES = DataTypes.ROW([DataTypes.FIELD("k", DataTypes.STRING()), DataTypes.FIELD("s", DataTypes.STRING()),
                       DataTypes.FIELD("v", DataTypes.INT()), DataTypes.FIELD("w", DataTypes.INT())])


@udf(result_type=DataTypes.BIGINT())
def times_ten_plus(v, w):
    return None if v is None or w is None else v * 10 + w


class Tag(ScalarFunction):
    def open(self, function_context):
        self.prefix = "#"  # set in open(): proves open ran before eval in the task

    def eval(self, s):
        return None if s is None else self.prefix + s.upper()


tag = udf(Tag(), result_type=DataTypes.STRING())


@udtf(result_types=[DataTypes.STRING(), DataTypes.INT()])
def words(s):
    for w in (s or "").split():
        yield w, len(w)


class WeightedSum(AggregateFunction):
    def create_accumulator(self):
        return [0]

    def accumulate(self, acc, v, w):
        if v is not None:
            acc[0] += v * w

    def retract(self, acc, v, w):
        if v is not None:
            acc[0] -= v * w

    def get_value(self, acc):
        return acc[0]


class NoRetractSum(AggregateFunction):
    def create_accumulator(self):
        return [0]

    def accumulate(self, acc, v):
        acc[0] += v

    def get_value(self, acc):
        return acc[0]


def _env(streaming: bool = True) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.create_temporary_view("t", t_env.from_elements(ROWS, TYPES))
    t_env.create_temporary_function("times_ten_plus", times_ten_plus)
    t_env.create_temporary_system_function("tag", tag)
    t_env.create_temporary_function("words", words)
    t_env.create_temporary_function("wsum", udaf(WeightedSum(), result_type=DataTypes.BIGINT()))
    return t_env


def _duck(sql: str):
    return duckdb_table({"t": (COLUMNS, ROWS)}, sql)


def _result(table_result) -> tuple:
    rows = list(table_result.collect())
    return reduce_changelog(rows), rows


@pytest.mark.parametrize("sql,duck", [
    ("SELECT k, times_ten_plus(v, w) AS x, tag(s) AS t FROM t",
     "SELECT k, v * 10 + w, '#' || upper(s) FROM t"),
    ("SELECT k FROM t WHERE times_ten_plus(v, w) > 30", "SELECT k FROM t WHERE v * 10 + w > 30"),
    ("SELECT k, word, n FROM t, LATERAL TABLE(words(s)) AS T(word, n)",
     "SELECT k, x, length(x) FROM (SELECT k, unnest(string_split(s, ' ')) AS x FROM t) WHERE x <> ''"),
    ("SELECT k, word FROM t CROSS JOIN LATERAL TABLE(words(s)) AS T(word, n) WHERE n > 3",
     "SELECT k, x FROM (SELECT k, unnest(string_split(s, ' ')) AS x FROM t) WHERE length(x) > 3"),
    ("SELECT k, word FROM t LEFT JOIN LATERAL TABLE(words(s)) AS T(word, n) ON TRUE",
     "SELECT t.k, x.w FROM t LEFT JOIN (SELECT rowid AS r, unnest(string_split(s, ' ')) AS w FROM t) x "
     "ON x.r = t.rowid AND x.w <> ''"),
    ("SELECT k, wsum(v, w) AS ws, COUNT(*) AS n FROM t GROUP BY k",
     "SELECT k, COALESCE(SUM(v * w), 0), COUNT(*) FROM t GROUP BY k"),
    ("SELECT n, wsum(n, 2) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) GROUP BY n",
     "SELECT n, SUM(n * 2) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) GROUP BY n"),
])
@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "batch"])
def test_python_functions_in_sql_match_duckdb(sql, duck, streaming):
    table, rows = _result(_env(streaming).execute_sql(sql))
    assert table == _duck(duck)
    if not streaming:
        assert all(r.get_row_kind() == RowKind.INSERT for r in rows)


def test_python_functions_in_the_table_api_match_duckdb():
    t_env = _env()
    t = t_env.from_path("t")
    selected = t.select(col("k"), times_ten_plus(col("v"), col("w")), call("tag", col("s")))
    assert _result(selected.execute())[0] == _duck("SELECT k, v * 10 + w, '#' || upper(s) FROM t")
    lateral = t.join_lateral(words(col("s")).alias("word", "n")).select(col("k"), col("word"), col("n"))
    assert _result(lateral.execute())[0] == _duck(
        "SELECT k, x, length(x) FROM (SELECT k, unnest(string_split(s, ' ')) AS x FROM t) WHERE x <> ''")
    outer = t.left_outer_join_lateral(call("words", col("s")).alias("word", "n")).select(col("k"), col("word"))
    assert _result(outer.execute())[0] == _duck(
        "SELECT t.k, x.w FROM t LEFT JOIN (SELECT rowid AS r, unnest(string_split(s, ' ')) AS w FROM t) x "
        "ON x.r = t.rowid AND x.w <> ''")
    wsum = udaf(WeightedSum(), result_type=DataTypes.BIGINT())
    grouped = t.group_by(col("k")).select(col("k"), wsum(col("v"), col("w")).alias("ws"))
    assert _result(grouped.execute())[0] == _duck("SELECT k, COALESCE(SUM(v * w), 0) FROM t GROUP BY k")


def test_python_aggregate_changelog_for_one_key():
    """Key 'a' gets v*w = 2, then 4, then 20: +I(2), -U(2)/+U(6), -U(6)/+U(26) — by hand."""
    rows = list(_env().execute_sql("SELECT k, wsum(v, w) FROM t WHERE k = 'a' GROUP BY k").collect())
    assert [(r.get_row_kind(), normalize(tuple(r))) for r in rows] == [
        (RowKind.INSERT, ("a", 2)), (RowKind.UPDATE_BEFORE, ("a", 2)), (RowKind.UPDATE_AFTER, ("a", 6)),
        (RowKind.UPDATE_BEFORE, ("a", 6)), (RowKind.UPDATE_AFTER, ("a", 26))]


def test_a_raising_udf_fails_the_job_naming_the_function_and_its_line():
    @udf(result_type=DataTypes.INT())
    def inverse(v):
        return 100 // (v - 3)  # v = 3 divides by zero

    t_env = _env()
    t_env.create_temporary_function("inverse", inverse)
    with pytest.raises(Exception) as e:
        list(t_env.execute_sql("SELECT inverse(v) FROM t").collect())
    text = str(e.value)
    line = inverse.function.fn.__code__.co_firstlineno + 2
    assert "Python function 'inverse' raised ZeroDivisionError" in text
    assert f"{__file__}:{line}" in text


def test_an_aggregate_without_retract_is_refused_over_an_updating_input():
    t_env = _env()
    t_env.create_temporary_function("nrsum", udaf(NoRetractSum(), result_type=DataTypes.BIGINT()))
    with pytest.raises(ValidationException, match="'nrsum' must implement retract"):
        t_env.sql_query("SELECT n, nrsum(n) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) GROUP BY n")
    t_env.sql_query("SELECT k, nrsum(v) FROM t GROUP BY k")  # insert-only input: accepted


def test_refusals():
    t_env = _env()
    with pytest.raises(ValidationException, match="no function named 'nope'"):
        t_env.from_path("t").select(call("nope", col("v")))
    with pytest.raises(ValidationException, match=r"No match found for function signature nope\(<"):
        t_env.sql_query("SELECT nope(v) FROM t")
    with pytest.raises(ValidationException, match="table function words"):
        t_env.sql_query("SELECT words(s) FROM t")
    with pytest.raises(ValidationException, match="already exists"):
        t_env.create_temporary_function("words", words)
    with pytest.raises(ValidationException, match="result_type is required"):
        udf(lambda x: x)
    with pytest.raises(TypeError, match="udtf\\(\\) got an unexpected keyword argument 'func_type'"):  # as PyFlink's
        udtf(lambda s: [s], result_types=[DataTypes.STRING()], func_type="pandas")
    with pytest.raises(ValidationException, match="func_type must be 'general' or 'pandas'"):
        udf(lambda x: x, result_type=DataTypes.INT(), func_type="arrow")
    with pytest.raises(ValidationException, match="returns 2 columns, got 1 names"):
        t_env.sql_query("SELECT k FROM t, LATERAL TABLE(words(s)) AS T(word)")
    with pytest.raises(NotSupportedYet, match="LATERAL TABLE together with a regular JOIN"):
        t_env.sql_query("SELECT * FROM t JOIN t AS b ON t.k = b.k, LATERAL TABLE(words(t.s)) AS T(word, n)")


def test_a_udf_registered_by_name_shadows_nothing_until_registered_and_can_be_dropped():
    t_env = _env()
    assert t_env.drop_temporary_function("tag")
    with pytest.raises(ValidationException, match=r"No match found for function signature tag\(<"):
        t_env.sql_query("SELECT tag(s) FROM t")
    assert isinstance(TableException("x"), Exception)


class IntSum(AggregateFunction):
    def create_accumulator(self):
        return [0]

    def accumulate(self, acc, v):
        acc[0] += v

    def get_value(self, acc):
        return acc[0]


def test_python_aggregate_in_a_window_aggregation_matches_duckdb():
    from .test_windows_vs_duckdb import _ON_TIME, _TUMBLE, _duckdb, _final_rows, _t_env

    t_env = _t_env()
    t_env.create_temporary_function("mysum", udaf(IntSum(), result_type=DataTypes.INT()))
    got = _final_rows(t_env.execute_sql(
        "SELECT item, window_start, window_end, mysum(price) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), "
        "INTERVAL '10' SECOND)) GROUP BY item, window_start, window_end"))
    assert got == _duckdb(f"SELECT item, ws, we, SUM(price) FROM bids, {_TUMBLE} WHERE {_ON_TIME} "
                          "GROUP BY item, ws, we")


def test_create_function_language_python_imports_the_function():
    t_env = _env()
    t_env.execute_sql("CREATE TEMPORARY SYSTEM FUNCTION tt AS 'tests.table.test_udfs.times_ten_plus' LANGUAGE PYTHON")
    t_env.execute_sql("CREATE FUNCTION IF NOT EXISTS tt AS 'tests.table.nope.f' LANGUAGE PYTHON")  # exists: skipped
    table, _ = _result(t_env.execute_sql("SELECT k, tt(v, w) FROM t"))
    assert table == _duck("SELECT k, v * 10 + w FROM t")
    t_env.execute_sql("DROP TEMPORARY SYSTEM FUNCTION tt")
    with pytest.raises(ValidationException, match=r"No match found for function signature tt\(<"):
        t_env.sql_query("SELECT tt(v, w) FROM t")
    with pytest.raises(ValidationException, match="cannot import module 'tests.table.nope'"):
        t_env.execute_sql("CREATE FUNCTION f2 AS 'tests.table.nope.f' LANGUAGE PYTHON")
    with pytest.raises(NotSupportedYet, match="LANGUAGE JAVA"):
        t_env.execute_sql("CREATE FUNCTION f3 AS 'com.example.Upper'")
    with pytest.raises(ValidationException, match="function 'f4' does not exist"):
        t_env.execute_sql("DROP FUNCTION f4")
    t_env.execute_sql("DROP FUNCTION IF EXISTS f4")


def test_table_map_and_flat_map_match_duckdb():
    @udf(result_type=DataTypes.ROW([DataTypes.FIELD("k2", DataTypes.STRING()),
                                    DataTypes.FIELD("vw", DataTypes.BIGINT())]))
    def pair(k, v, w):
        return (k + k, None if v is None else v * w)

    t = _env().from_path("t")
    mapped = t.map(pair(col("k"), col("v"), col("w"))).alias("kk", "p")
    assert mapped.get_schema().get_field_names() == ["kk", "p"]
    assert _result(mapped.execute())[0] == _duck("SELECT k || k, v * w FROM t")
    single = t.map(times_ten_plus(col("v"), col("w")))
    assert single.get_schema().get_field_names() == ["f0"]
    assert _result(single.execute())[0] == _duck("SELECT v * 10 + w FROM t")
    flat = t.flat_map(words(col("s")))
    assert flat.get_schema().get_field_names() == ["f0", "f1"]
    assert _result(flat.execute())[0] == _duck(
        "SELECT x, length(x) FROM (SELECT unnest(string_split(s, ' ')) AS x FROM t) WHERE x <> ''")
    with pytest.raises(ValidationException, match="Table.map takes a Python scalar function call"):
        t.map(col("v") + 1)


class MinMax(AggregateFunction):
    def create_accumulator(self):
        return [None, None]

    def accumulate(self, acc, v):
        if v is not None:
            acc[0] = v if acc[0] is None else min(acc[0], v)
            acc[1] = v if acc[1] is None else max(acc[1], v)

    def get_value(self, acc):
        return (acc[0], acc[1])


def test_grouped_table_aggregate_with_a_row_result_matches_duckdb():
    t = _env().from_path("t")
    min_max = udaf(MinMax(), result_type=DataTypes.ROW([DataTypes.FIELD("lo", DataTypes.INT()),
                                                        DataTypes.FIELD("hi", DataTypes.INT())]))
    result = t.group_by(col("k")).aggregate(min_max(col("v")).alias("a", "b")).select(col("k"), col("b"), col("a"))
    assert _result(result.execute())[0] == _duck("SELECT k, MAX(v), MIN(v) FROM t GROUP BY k")
    with pytest.raises(ValidationException, match="takes a Python aggregate function call"):
        t.group_by(col("k")).aggregate(col("v").sum)
