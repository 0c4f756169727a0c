"""Columnar Calc (issue 19): with `table.exec.columnar.enabled` a projection/filter whose expressions all have
pyarrow.compute kernels runs per batch. Differential: the same query with the switch on and off gives the
identical changelog (values and RowKinds, in order), and DuckDB computes the same table independently;
a property test does the same over generated expressions and rows with NULLs."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.planner.columnar_calc import compile_columnar

from .reference import duckdb_table, normalize

COLUMNS = [("a", "INTEGER"), ("b", "BIGINT"), ("x", "DOUBLE"), ("s", "VARCHAR"), ("f", "BOOLEAN")]
TYPES = DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.BIGINT()),
                       DataTypes.FIELD("x", DataTypes.DOUBLE()), DataTypes.FIELD("s", DataTypes.STRING()),
                       DataTypes.FIELD("f", DataTypes.BOOLEAN())])
ROWS = [
    (1, 10, 0.5, "apple", True),
    (None, 20, -1.5, "", False),
    (3, None, None, "héllo wörld", None),
    (-4, 40, 2.25, None, True),
    (2147483000, 9, 1.0, "z", False),
    (0, -7, 3.5, "ab", True),
]

QUERIES = [
    "SELECT a + 1 AS p, b * 2 AS q, x - a AS r FROM T",
    "SELECT a, s FROM T WHERE a > 0 AND f",
    "SELECT CHAR_LENGTH(s) AS n, a IS NULL AS an, NOT f AS nf FROM T WHERE s IS NOT NULL OR x < 1",
    "SELECT b - a AS d, x * 2 AS y FROM T WHERE b >= 9 OR f IS NULL",
    "SELECT a, s < 'b' AS lt, a = b AS eq FROM T WHERE x <> 1.0",
]


def _changelog(sql: str, columnar: bool, rows=ROWS, streaming=True, mini_batch=False) -> list:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                  else EnvironmentSettings.in_batch_mode())
    env.get_config().set("table.exec.columnar.enabled", "true" if columnar else "false")
    if mini_batch:  # the columnar Calc then gathers rows across input batches (flushed at the end of input)
        env.get_config().set("table.exec.mini-batch.enabled", "true")
        env.get_config().set("table.exec.mini-batch.size", "4")
        env.get_config().set("table.exec.mini-batch.allow-latency", "1 s")
    env.create_temporary_view("T", env.from_elements(rows, TYPES))
    return [(r.get_row_kind(), tuple(r)) for r in env.sql_query(sql).execute().collect()]


def _columnar_plan(sql: str):
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.create_temporary_view("T", env.from_elements(ROWS, TYPES))
    calc = env.sql_query(sql)._node
    return compile_columnar(calc.input.columns, list(calc.projections), calc.condition, calc.names())


@pytest.mark.parametrize("sql", QUERIES)
def test_columnar_and_row_paths_give_the_same_changelog_and_duckdbs_table(sql):
    assert _columnar_plan(sql) is not None, "the query should run columnar"
    on, off = _changelog(sql, True), _changelog(sql, False)
    assert on == off
    assert _changelog(sql, True, mini_batch=True, streaming=False) == _changelog(sql, False, streaming=False)
    duck_sql = sql.replace("CHAR_LENGTH", "LENGTH")
    expected = duckdb_table({"T": (COLUMNS, ROWS)}, duck_sql)
    assert Counter(normalize(v) for _, v in on) == expected


def test_a_calc_without_an_arrow_kernel_stays_on_the_row_path():
    assert _columnar_plan("SELECT a / 2 AS h FROM T") is None  # integer division: no kernel with Java's rounding
    assert _columnar_plan("SELECT UPPER(s) AS u FROM T") is None  # Arrow's case mapping is not Java's ('ß')
    assert _columnar_plan("SELECT a, s FROM T") is None  # nothing computed: the copy is cheaper row by row
    on = _changelog("SELECT a / 2 AS h, UPPER(s) AS u FROM T", True)
    assert on == _changelog("SELECT a / 2 AS h, UPPER(s) AS u FROM T", False)


def test_integer_overflow_wraps_as_java_on_both_paths():
    """DuckDB refuses the overflow, so the reference is Java's two's complement, worked by hand."""
    rows = [(2147483647, 1, 0.0, "", True), (5, 1, 0.0, "", True)]
    on = _changelog("SELECT a + 1 AS p FROM T WHERE a > 100", True, rows)
    assert on == _changelog("SELECT a + 1 AS p FROM T WHERE a > 100", False, rows)
    assert [v for _, v in on] == [(-2147483648,)]  # INT_MAX + 1 is INT_MIN in Java and Flink


# -- property test: generated expressions over generated rows ---------------------------------------
# value ranges keep every product in range (DuckDB refuses an overflow that Flink wraps): |a|<=100 so four INT
# factors stay below 2^31, |b|<=10^4 so four BIGINT factors stay below 2^63
_num = st.sampled_from(["a", "b", "x", "1", "-2", "0.5"])


def _numeric(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _num
    sub = _numeric(depth - 1)
    return st.one_of(_num, st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub)
                     .map(lambda t: f"({t[0]} {t[1]} {t[2]})"))


def _boolean(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.just("f"),
        st.tuples(_numeric(1), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _numeric(1))
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.sampled_from(["s IS NULL", "a IS NOT NULL", "s < 'm'", "CHAR_LENGTH(s) > 2"]),
    )
    if depth == 0:
        return leaf
    sub = _boolean(depth - 1)
    return st.one_of(leaf, st.tuples(sub, st.sampled_from(["AND", "OR"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
                     sub.map(lambda e: f"(NOT {e})"))


_rows = st.lists(st.tuples(
    st.one_of(st.none(), st.integers(-100, 100)), st.one_of(st.none(), st.integers(-10**4, 10**4)),
    st.one_of(st.none(), st.floats(-100, 100, allow_nan=False).map(lambda v: round(v, 2))),
    st.one_of(st.none(), st.text("abyz ", max_size=5)), st.one_of(st.none(), st.booleans())), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proj=_numeric(2), cond=_boolean(2), rows=_rows)
def test_generated_projections_and_filters_agree_on_both_paths_and_with_duckdb(proj, cond, rows):
    sql = f"SELECT {proj} AS p, a FROM T WHERE {cond}"
    on = _changelog(sql, True, rows)
    assert on == _changelog(sql, False, rows)
    expected = duckdb_table({"T": (COLUMNS, rows)}, sql.replace("CHAR_LENGTH", "LENGTH"))
    assert Counter(normalize(v) for _, v in on) == expected
