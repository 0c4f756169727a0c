"""Where Spark's built-ins differ from Flink's, batch SQL on Spark gives Flink's result. Each expected value is
worked out in plain Python (or by hand in the docstring), never taken from an engine."""

from __future__ import annotations

import datetime
import decimal

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment

NUMBERS = [(-7, 2, 2.675), (7, 2, 2.5), (-5, 3, -2.5), (1, 1, 1.005), (2147483647, 1, 0.125)]
SCHEMA = DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.INT()),
                        DataTypes.FIELD("d", DataTypes.DOUBLE())])


@pytest.fixture(scope="module")
def t_env(spark) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.create_temporary_view("n", t_env.from_elements(NUMBERS, SCHEMA))
    names = [("Alice", datetime.datetime(2026, 11, 26, 9, 5, 7, 123000)), (None, None),
             ("", datetime.datetime(1999, 1, 2, 23, 0, 0))]
    t_env.create_temporary_view("s", t_env.from_elements(names, DataTypes.ROW([
        DataTypes.FIELD("name", DataTypes.STRING()), DataTypes.FIELD("ts", DataTypes.TIMESTAMP(3))])))
    return t_env


def _rows(t_env: TableEnvironment, sql: str) -> list[tuple]:
    with t_env.execute_sql(sql).collect() as rows:
        return [tuple(r) for r in rows]


def _java_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def test_integer_division_truncates_toward_zero_and_stays_an_int(t_env, fallbacks) -> None:
    """Spark's `/` is a DOUBLE division (-7 / 2 = -3.5); Flink's INT / INT is INT, truncated: -3."""
    got = sorted(_rows(t_env, "SELECT a, a / b, a % b FROM n"))
    assert fallbacks == []
    assert got == sorted((a, _java_div(a, b), a - _java_div(a, b) * b) for a, b, _ in NUMBERS)
    assert (-7, -3, -1) in got


def test_int_arithmetic_wraps_as_java(t_env, fallbacks) -> None:
    """INT + INT is an INT in Flink: 2147483647 + 1 wraps to -2147483648 (Spark's ANSI mode would fail)."""
    assert _rows(t_env, "SELECT a + b FROM n WHERE a > 1000") == [(-2147483648,)]
    assert fallbacks == []


def test_avg_and_sum_of_int_are_ints(t_env, fallbacks) -> None:
    """AVG(INT) is an INT in Flink, the sum divided by the count truncated toward zero (Spark: a DOUBLE);
    SUM(INT) is an INT that wraps (Spark: a BIGINT)."""
    ((avg, total),) = _rows(t_env, "SELECT AVG(a), SUM(a) FROM n WHERE a < 1000")
    small = [a for a, _, _ in NUMBERS if a < 1000]
    assert (avg, total) == (_java_div(sum(small), len(small)), sum(small))
    assert isinstance(avg, int)
    ((wrapped,),) = _rows(t_env, "SELECT SUM(a) FROM n WHERE a > 0")
    assert wrapped == (sum(a for a, _, _ in NUMBERS if a > 0) + 2**31) % 2**32 - 2**31
    assert fallbacks == []


def test_round_is_half_up_on_the_decimal_form(t_env, fallbacks) -> None:
    """ROUND(2.675, 2) is 2.68 in Flink (HALF_UP of '2.675'); Python's round gives 2.67 (binary form)."""
    got = dict(_rows(t_env, "SELECT d, ROUND(d, 2) FROM n"))
    for _, _, d in NUMBERS:
        expected = float(decimal.Decimal(repr(d)).quantize(decimal.Decimal("0.01"), decimal.ROUND_HALF_UP))
        assert got[d] == expected
    assert got[2.675] == 2.68 and got[-2.5] == -2.5
    assert fallbacks == []


def test_integer_division_by_zero_fails_the_query(t_env) -> None:
    """Flink throws an ArithmeticException; Spark (ANSI off) would give NULL."""
    with pytest.raises(Exception, match="division by zero"):
        _rows(t_env, "SELECT a / (b - b) FROM n")


def test_date_format_takes_java_patterns(t_env, fallbacks) -> None:
    """DATE_FORMAT's patterns are Java's SimpleDateFormat ones, as Flink's (worked by hand)."""
    got = dict(_rows(t_env, "SELECT name, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') FROM s"))
    assert got == {"Alice": "2026-11-26 09:05:07", None: None, "": "1999-01-02 23:00:00"}
    assert fallbacks == []


def test_string_functions_keep_flinks_index_and_null_rules(t_env, fallbacks) -> None:
    """SUBSTRING is 1-based in both; CHAR_LENGTH of '' is 0, of NULL is NULL; CONCAT with a NULL is NULL;
    UPPER/LOWER keep NULL. By hand: 'Alice' -> 'li', 5, 'ALICE', 'alice!'."""
    got = {r[0]: r[1:] for r in _rows(
        t_env, "SELECT name, SUBSTRING(name, 2, 2), CHAR_LENGTH(name), UPPER(name), CONCAT(LOWER(name), '!') FROM s")}
    assert got == {"Alice": ("li", 5, "ALICE", "alice!"), None: (None, None, None, None), "": ("", 0, "", "!")}
    assert fallbacks == []


def test_order_by_puts_nulls_first_ascending_and_last_descending(t_env, fallbacks) -> None:
    """Flink's default null ordering: ASC -> NULLS FIRST, DESC -> NULLS LAST."""
    assert [r[0] for r in _rows(t_env, "SELECT name FROM s ORDER BY name")] == [None, "", "Alice"]
    assert [r[0] for r in _rows(t_env, "SELECT name FROM s ORDER BY name DESC")] == ["Alice", "", None]
    assert fallbacks == []


def test_cast_of_text_follows_flink(t_env) -> None:
    """CAST('x' AS INT) fails in Flink (Spark gives NULL); TRY_CAST gives NULL; CAST(TRUE AS STRING) is 'TRUE'."""
    assert _rows(t_env, "SELECT TRY_CAST(name AS INT) FROM s WHERE name = ''") == [(None,)]
    assert _rows(t_env, "SELECT CAST(a > 0 AS STRING) FROM n WHERE a = 7") == [("TRUE",)]
    with pytest.raises(Exception):  # noqa: B017 - Flink's error for a bad CAST is a runtime exception
        _rows(t_env, "SELECT CAST(name AS INT) FROM s WHERE name = 'Alice'")
