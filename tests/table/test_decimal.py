"""DECIMAL(p, s): literals, CAST, arithmetic result types, SUM/AVG, HALF_UP rounding, overflow to NULL,
tableau printing and the csv/json formats.

References: DuckDB computes the same exact values for +, -, *, SUM and GROUP BY over DECIMAL columns; the
result TYPES are Flink's (LogicalTypeMerging), worked by hand in each test; rounding and overflow are
computed with Python's decimal module (ROUND_HALF_UP), independent of the engine."""

from __future__ import annotations

import decimal
import json
from decimal import Decimal
from pathlib import Path

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException

from .reference import duckdb_table, reduce_changelog

ROWS = [("a", Decimal("1.25"), Decimal("10.125"), 3), ("a", Decimal("-2.50"), Decimal("0.001"), 7),
        ("b", Decimal("99999999.99"), Decimal("123.456"), -4), ("b", None, Decimal("-5.000"), 0),
        ("c", Decimal("0.05"), None, 11)]
DUCK_COLUMNS = [("k", "VARCHAR"), ("p", "DECIMAL(10, 2)"), ("q", "DECIMAL(6, 3)"), ("n", "INTEGER")]


def _t_env(streaming: bool = True) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                    else EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([DataTypes.FIELD("k", DataTypes.STRING()), DataTypes.FIELD("p", DataTypes.DECIMAL(10, 2)),
                            DataTypes.FIELD("q", DataTypes.DECIMAL(6, 3)), DataTypes.FIELD("n", DataTypes.INT())])
    t_env.create_temporary_view("t", t_env.from_elements(ROWS, schema))
    return t_env


def _rows(t_env: TableEnvironment, sql: str) -> list[tuple]:
    with t_env.execute_sql(sql).collect() as rows:
        return [tuple(r) for r in rows]


def _types(t_env: TableEnvironment, sql: str) -> list[str]:
    return [str(t) for t in t_env.sql_query(sql).get_schema().get_field_data_types()]


SAME_AS_DUCKDB = [
    "SELECT k, p + q, p - q, p * q, p * n, q + n FROM t",
    "SELECT k, SUM(p), SUM(q), MIN(p), MAX(q) FROM t GROUP BY k",
    "SELECT k, p FROM t WHERE p > 1.2 AND q < 100.5",
    "SELECT p * 0.908, n * 1.5 FROM t",
]


@pytest.mark.parametrize(("sql", "streaming"), [*((q, True) for q in SAME_AS_DUCKDB), (SAME_AS_DUCKDB[1], False)])
def test_decimal_values_equal_duckdb(sql: str, streaming: bool) -> None:
    with _t_env(streaming).execute_sql(sql).collect() as rows:
        got = reduce_changelog(list(rows))
    expected = duckdb_table({"t": (DUCK_COLUMNS, ROWS)}, sql)
    assert got == expected
    assert all(isinstance(v, Decimal) for row in got for v in row if isinstance(v, (float, Decimal)))


def test_arithmetic_result_types_are_flinks() -> None:
    """Flink's LogicalTypeMerging, by hand: p DECIMAL(10, 2), q DECIMAL(6, 3), n INT (= DECIMAL(10, 0)).
    +: scale max(2, 3) = 3, precision max(8, 3) + 3 + 1 = 12. *: (10 + 6 + 1, 2 + 3) = (17, 5).
    /: scale max(6, 2 + 6 + 1) = 9, precision 10 - 2 + 3 + 9 = 20. %: scale 3, precision min(8, 3) + 3 = 6.
    p * n: (10 + 10 + 1, 2). SUM(p): (38, 2). AVG(q): (38, max(6, 3)) = (38, 6). p + 1.0E0: DOUBLE.
    The literal 0.908 is DECIMAL(3, 3), 12.50 DECIMAL(4, 2)."""
    t_env = _t_env()
    assert _types(t_env, "SELECT p + q, p * q, p / q, p % q, p * n, p + 1.0E0, 0.908, 12.50 FROM t") == [
        "DECIMAL(12, 3)", "DECIMAL(17, 5)", "DECIMAL(20, 9)", "DECIMAL(6, 3)", "DECIMAL(21, 2)", "DOUBLE",
        "DECIMAL(3, 3) NOT NULL", "DECIMAL(4, 2) NOT NULL"]
    assert _types(t_env, "SELECT SUM(p), AVG(q) FROM t") == ["DECIMAL(38, 2)", "DECIMAL(38, 6)"]
    # past 38 digits: 38 digits, keeping min(scale, 6) fractional ones: (38,10) * (38,10) -> (38, 6)
    assert _types(t_env, "SELECT CAST(p AS DECIMAL(38, 10)) * CAST(q AS DECIMAL(38, 10)) FROM t") == [
        "DECIMAL(38, 6)"]


def test_division_and_avg_round_half_up_to_the_result_scale() -> None:
    t_env = _t_env()
    got = dict((k, v) for k, v in _rows(t_env, "SELECT k, AVG(q) FROM t GROUP BY k") if True)
    expected = {}
    for k in ("a", "b", "c"):
        qs = [q for kk, _, q, _ in ROWS if kk == k and q is not None]
        expected[k] = (sum(qs) / len(qs)).quantize(Decimal("0.000001"), rounding=decimal.ROUND_HALF_UP) if qs else None
    assert got == expected
    got_div = _rows(t_env, "SELECT p / q FROM t WHERE k = 'a'")
    ctx = decimal.Context(prec=60)
    assert sorted(v for (v,) in got_div) == sorted(
        ctx.divide(p, q).quantize(Decimal(1).scaleb(-9), rounding=decimal.ROUND_HALF_UP)
        for k, p, q, _ in ROWS if k == "a")


def test_literals_are_exact_and_exponents_are_double() -> None:
    t_env = _t_env()
    (row,) = _rows(t_env, "SELECT 0.1 + 0.2, 0.1E0 + 0.2E0, -1.50, 10.0 / 4 FROM t WHERE k = 'c'")
    assert row[0] == Decimal("0.3") and isinstance(row[0], Decimal)
    assert row[1] == 0.1 + 0.2 and isinstance(row[1], float)  # a DOUBLE sum: 0.30000000000000004
    assert str(row[2]) == "-1.50"
    assert row[3] == Decimal("2.5")


@pytest.mark.parametrize("text", ["1.255", "-1.255", "2.004", "0.005", "-0.005", "99.994", "99.995"])
def test_cast_rounds_half_up_and_overflow_is_null(text: str) -> None:
    (row,) = _rows(_t_env(), f"SELECT CAST('{text}' AS DECIMAL(4, 2)), CAST({text} AS DECIMAL(4, 2)) FROM t "
                             "WHERE k = 'c'")
    rounded = Decimal(text).quantize(Decimal("0.01"), rounding=decimal.ROUND_HALF_UP)
    expected = rounded if abs(rounded) < 100 else None  # DECIMAL(4, 2) holds two integer digits
    assert row == (expected, expected)


def test_casts_to_and_from_other_types() -> None:
    (row,) = _rows(_t_env(), "SELECT CAST(p AS INT), CAST(-2.7 AS INT), CAST(q AS DOUBLE), CAST(p AS STRING), "
                             "CAST(n AS DECIMAL(3, 1)), CAST(1.5E0 AS DECIMAL(5, 2)), TRY_CAST('x' AS DECIMAL(5, 2)) "
                             "FROM t WHERE k = 'c'")
    assert row == (0, -2, None, "0.05", Decimal("11.0"), Decimal("1.50"), None)


def test_overflowing_arithmetic_is_null() -> None:
    """DECIMAL(10, 2) + DECIMAL(10, 2) is DECIMAL(11, 2), which holds the sum; a product past 38 digits is not."""
    t_env = _t_env()
    (row,) = _rows(t_env, "SELECT p + p, CAST(p AS DECIMAL(38, 0)) * CAST(9999999999999999999999999999999 AS "
                          "DECIMAL(38, 0)) FROM t WHERE k = 'b' AND p IS NOT NULL")
    assert row == (Decimal("199999999.98"), None)


def test_round_floor_and_mod_over_decimal() -> None:
    """ROUND(q, 1) of DECIMAL(6, 3) is DECIMAL(1 + 6 - 3 + 1, 1) = (5, 1); FLOOR is DECIMAL(6 - 3 + 1, 0);
    MOD(p, 2) with the INT 2 as DECIMAL(10, 0): scale 2, precision min(10 - 2, 10) + 2 = 10."""
    t_env = _t_env()
    assert _types(t_env, "SELECT ROUND(q, 1), FLOOR(q), CEIL(p), MOD(p, 2) FROM t") == [
        "DECIMAL(5, 1)", "DECIMAL(4, 0)", "DECIMAL(9, 0)", "DECIMAL(10, 2)"]
    got = sorted(_rows(t_env, "SELECT k, ROUND(q, 1), FLOOR(q), MOD(p, 2) FROM t WHERE q IS NOT NULL AND p IS NOT "
                              "NULL"))
    expected = sorted((k, q.quantize(Decimal("0.1"), rounding=decimal.ROUND_HALF_UP),
                       q.to_integral_value(rounding=decimal.ROUND_FLOOR), p % 2)  # Decimal's %: the dividend's sign
                      for k, p, q, _ in ROWS if p is not None and q is not None)
    assert got == expected


def test_tableau_prints_the_scale_and_sizes_by_precision(capsys: pytest.CaptureFixture[str]) -> None:
    _t_env().execute_sql("SELECT p, 1.50 AS c FROM t WHERE k = 'c'").print()
    out = capsys.readouterr().out.splitlines()
    # streaming tableau: width by type, DECIMAL(10, 2) -> 12, DECIMAL(3, 2) -> 5, at least <NULL>'s 6
    assert out[1] == "| op |            p |      c |"
    assert out[3] == "| +I |         0.05 |   1.50 |"


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_formats_write_and_read_exact_decimals(tmp_path: Path, fmt: str) -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(f"CREATE TABLE s (id INT, amount DECIMAL(20, 4)) WITH ('connector'='filesystem', "
                      f"'path'='{tmp_path}', 'format'='{fmt}')")
    t_env.execute_sql("INSERT INTO s VALUES (1, 1234567890123456.7891), (2, -0.5), (3, CAST(NULL AS DECIMAL(20, 4)))"
                      ).wait()
    text = "".join(p.read_text() for p in sorted(tmp_path.rglob("*")) if p.is_file() and not p.name.startswith("."))
    assert "1234567890123456.7891" in text and "-0.5000" in text
    if fmt == "json":
        values = {json.loads(line, parse_float=Decimal)["id"]: json.loads(line, parse_float=Decimal)["amount"]
                  for line in text.splitlines()}
        assert values == {1: Decimal("1234567890123456.7891"), 2: Decimal("-0.5"), 3: None}
    got = sorted(_rows(t_env, "SELECT id, amount FROM s"))
    assert got == [(1, Decimal("1234567890123456.7891")), (2, Decimal("-0.5000")), (3, None)]


def test_decimal_types_out_of_range_are_refused() -> None:
    with pytest.raises(ValidationException, match=r"DECIMAL\(39, 2\): precision must be 1..38"):
        DataTypes.DECIMAL(39, 2)
    with pytest.raises(ValidationException, match=r"DECIMAL\(5, 6\)"):
        _t_env().execute_sql("SELECT CAST(p AS DECIMAL(5, 6)) FROM t")
    with pytest.raises(ValidationException, match=r"column 'p' is DECIMAL\(10, 2\) but .* more digits"):
        schema = DataTypes.ROW([DataTypes.FIELD("p", DataTypes.DECIMAL(10, 2))])
        _t_env().from_elements([(Decimal("123456789.5"),)], schema)
