"""JSON_VALUE's RETURNING / ON EMPTY / ON ERROR, JSON_QUERY's wrapper and ON EMPTY / ON ERROR, JSON_EXISTS's
ON ERROR, and parse errors on lines holding a rewritten function naming the user's line and column.

Expected values are the examples of Flink's documentation of its JSON functions (strict mode when the path
names none; lax finds nothing -> ON EMPTY; strict finds nothing -> ON ERROR), worked by hand; positions are
found in the user's text with str.index."""

from __future__ import annotations

import pytest
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import SqlParserException

FLINK_EXAMPLES = [
    ("""JSON_VALUE('{"a": true}', '$.a')""", "true"),
    ("""JSON_VALUE('{"a": true}', '$.a' RETURNING BOOLEAN)""", True),
    ("""JSON_VALUE('{"a": true}', 'lax $.b' DEFAULT 'none' ON EMPTY)""", "none"),
    ("""JSON_VALUE('{"a": true}', 'strict $.b' DEFAULT 'bad' ON ERROR)""", "bad"),
    ("""JSON_VALUE('{"a": true}', 'strict $.b' DEFAULT 'none' ON EMPTY)""", None),  # an error, not empty
    ("""JSON_VALUE('{"a.b": [0.10, 0.20]}', '$.["a.b"][1]')""", "0.2"),
    ("""JSON_VALUE('{"a": "x"}', '$.a' RETURNING INT DEFAULT -1 ON ERROR)""", -1),
    ("""JSON_VALUE('{"a": "7"}', '$.a' RETURNING INT)""", 7),
    ("""JSON_VALUE('{"a": [1]}', 'lax $.a' DEFAULT 'arr' ON EMPTY DEFAULT 'err' ON ERROR)""", "arr"),
    ("""JSON_VALUE('{"a": [1]}', 'strict $.a' DEFAULT 'arr' ON EMPTY DEFAULT 'err' ON ERROR)""", "err"),
    ("""JSON_VALUE('not json', '$.a' NULL ON EMPTY DEFAULT 'err' ON ERROR)""", "err"),
    ("""JSON_QUERY('{ "a": { "b": 1 } }', '$.a')""", '{"b":1}'),
    ("""JSON_QUERY('[1, 2]', '$')""", "[1,2]"),
    ("""JSON_QUERY('{"a":[{"c":"c1"},{"c":"c2"}]}', 'lax $.a[*].c')""", '["c1","c2"]'),
    ("""JSON_QUERY('{}', '$' WITH CONDITIONAL ARRAY WRAPPER)""", "[{}]"),
    ("""JSON_QUERY('[1, 2]', '$' WITH CONDITIONAL ARRAY WRAPPER)""", "[1,2]"),
    ("""JSON_QUERY('[1, 2]', '$' WITH UNCONDITIONAL ARRAY WRAPPER)""", "[[1,2]]"),
    ("""JSON_QUERY('1', '$')""", None),
    ("""JSON_QUERY('1', '$' WITH CONDITIONAL ARRAY WRAPPER)""", "[1]"),
    ("""JSON_QUERY('{}', 'lax $.invalid' EMPTY OBJECT ON EMPTY)""", "{}"),
    ("""JSON_QUERY('{}', 'strict $.invalid' EMPTY ARRAY ON ERROR)""", "[]"),
    ("""JSON_EXISTS('{"a": true}', '$.a')""", True),
    ("""JSON_EXISTS('{"a": true}', '$.b')""", False),
    ("""JSON_EXISTS('{"a": [{ "b": 1 }]}', '$.a[0].b')""", True),
    ("""JSON_EXISTS('{"a": true}', 'strict $.b' TRUE ON ERROR)""", True),
    ("""JSON_EXISTS('{"a": true}', 'strict $.b' FALSE ON ERROR)""", False),
    ("""JSON_EXISTS('{"a": true}', 'strict $.b' UNKNOWN ON ERROR)""", None),
]


def _t_env() -> TableEnvironment:
    return TableEnvironment.create(EnvironmentSettings.in_streaming_mode())


def test_json_functions_give_flinks_documented_results() -> None:
    sql = "SELECT " + ", ".join(q for q, _ in FLINK_EXAMPLES) + " FROM (VALUES (1)) AS v(x)"
    with _t_env().execute_sql(sql).collect() as rows:
        (row,) = [tuple(r) for r in rows]
    assert list(zip((q for q, _ in FLINK_EXAMPLES), row, strict=True)) == FLINK_EXAMPLES


def test_returning_types_the_column() -> None:
    table = _t_env().sql_query("SELECT JSON_VALUE(s, '$.a' RETURNING DECIMAL(5, 2)), JSON_VALUE(s, '$.a') "
                               "FROM (VALUES ('{\"a\": 1.255}')) AS v(s)")
    assert [str(t) for t in table.get_schema().get_field_data_types()] == ["DECIMAL(5, 2)", "STRING"]
    with table.execute().collect() as rows:
        assert [str(r[0]) for r in rows] == ["1.26"]  # HALF_UP to the scale


@pytest.mark.parametrize(("expr", "message"), [
    ("""JSON_VALUE('{"a": 1}', 'lax $.b' ERROR ON EMPTY)""", "Empty result of JSON_VALUE function is not allowed"),
    ("""JSON_VALUE('x', '$.b' ERROR ON ERROR)""", "JSON_VALUE('x', '$.b'): the input is not JSON"),
    ("""JSON_QUERY('{}', 'lax $.b' ERROR ON EMPTY)""", "Empty result of JSON_QUERY function is not allowed"),
    ("""JSON_EXISTS('{}', 'strict $.b' ERROR ON ERROR)""", "No results for path: strict $.b"),
])
def test_error_behaviours_fail_the_query_with_flinks_words(expr: str, message: str) -> None:
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)").replace("$", r"\$")):
        with _t_env().execute_sql(f"SELECT {expr} FROM (VALUES (1)) AS v(x)").collect() as rows:
            list(rows)


@pytest.mark.parametrize(("sql", "bad"), [
    ("SELECT DATE_FORMAT(ts, 'yyyy') FROM t WHERE ((", "(("),
    ("SELECT a,\n  DATE_FORMAT(ts, 'yyyy'), TIMESTAMPDIFF(DAY, ts, ts) FROM t WHERE ((", "(("),
    ("SELECT JSON_VALUE(s, '$.a' RETURNING INT DEFAULT 0 ON EMPTY), ) FROM t", ")"),
    ("SELECT JSON_VALUE(s, '$.a' FOO ON EMPTY) FROM t", "FOO"),
    ("SELECT\n JSON_QUERY(s, '$' WITH WRAPPER SOMETIMES ON EMPTY) FROM t", "SOMETIMES"),
])
def test_parse_errors_name_the_users_line_and_column(sql: str, bad: str) -> None:
    """The rewritten text (STROM_FN_ prefixes, the _EX calls) is longer than the user's; the error points into
    the user's text: the last character of the bad token for sqlglot's errors, the first of an unread clause."""
    with pytest.raises(SqlParserException) as info:
        _t_env().execute_sql(sql)
    at = sql.rindex(bad) + (len(bad) - 1 if bad in ("((", ")") else 0)
    line = sql[:at].count("\n") + 1
    column = at - (sql[:at].rfind("\n") + 1) + 1
    assert f"line {line}, column {column}" in str(info.value)
