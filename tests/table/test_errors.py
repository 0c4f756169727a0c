"""Bad input: one-line errors naming the column, table, option or clause."""

from __future__ import annotations

import pytest
from strom.table import (
    EnvironmentSettings,
    NotSupportedYet,
    SqlParserException,
    StreamTableEnvironment,
    TableEnvironment,
    ValidationException,
)
from strom.table.expressions import col


@pytest.fixture()
def t_env() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.create_temporary_view("clicks", t_env.from_elements([("Mary", "./home", 1)], ["user", "url", "n"]))
    return t_env


def _one_line(excinfo: pytest.ExceptionInfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("SELECT nope FROM clicks", "From line 1, column 8 to line 1, column 11: Column 'nope' not found in any "
                                    "table (unknown column 'nope'; available columns: user, url, n)"),
        ("SELECT user FROM clicks WHERE missing > 1", "Column 'missing' not found in any table"),
        ("SELECT user, COUNT(*) FROM clicks GROUP BY nope", "Column 'nope' not found in any table"),
        ("SELECT user FROM nowhere", "From line 1, column 18 to line 1, column 24: Object 'nowhere' not found"),
        ("SELECT x.user FROM clicks", "unknown table 'x'"),
        ("SELECT url, COUNT(*) FROM clicks GROUP BY user", "column 'url' is neither grouped nor aggregated"),
        ("SELECT user FROM clicks WHERE n", "expected BOOLEAN"),
        ("SELECT UPPER(n) FROM clicks", "expected STRING"),
        ("SELECT user FROM clicks WHERE user > 1", "cannot compare STRING with INT"),
        ("SELECT SUM(url) FROM clicks", "expected a numeric type"),
        # a function Flink does not know: Calcite's message, the arguments by type family
        ("SELECT my_udf(user) FROM clicks", "No match found for function signature my_udf(<CHARACTER>)"),
        ("SELECT user, COUNT(*) FROM clicks GROUP BY user HAVING Nope(SUM(n), user, COUNT(*) > 1) > 0",
         "No match found for function signature Nope(<NUMERIC>, <CHARACTER>, <BOOLEAN>)"),
    ],
)
def test_validation_errors_name_what_is_wrong(t_env: TableEnvironment, sql: str, needle: str) -> None:
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql(sql)
    assert needle in _one_line(e)


@pytest.mark.parametrize(
    ("sql", "feature"),
    [
        ("SELECT user FROM clicks INTERSECT SELECT user FROM clicks", "INTERSECT"),
        ("SELECT a.user FROM clicks a JOIN clicks b USING (user)", "JOIN .. USING"),
        ("SELECT user FROM clicks EXCEPT SELECT user FROM clicks", "EXCEPT"),
        ("SELECT user FROM clicks UNION ALL SELECT user FROM clicks ORDER BY user", "ORDER BY"),
        ("SELECT ROW_NUMBER() OVER (PARTITION BY user ORDER BY n) FROM clicks", "OVER windows"),
        ("SELECT SOUNDEX(user) FROM clicks", "function SOUNDEX"),
        ("SELECT ARRAY_SORT(user) FROM clicks", "function ARRAY_SORT"),  # Flink has it: not supported yet
        ("SELECT * FROM TABLE(\n  TUMBLE(TABLE clicks, DESCRIPTOR(n), INTERVAL '5' MINUTES, INTERVAL '1' MINUTE))",
         "window TVF TUMBLE with an offset (at line 2, column 3)"),
        ("CREATE TABLE t (a INT) WITH ('connector'='hbase-2.2')", "connector 'hbase-2.2'"),
        ("CREATE CATALOG c WITH ('type' = 'generic_in_memory')", "CREATE CATALOG"),
        ("SHOW MODULES", "SHOW (TABLES, VIEWS"),
        ("LOAD MODULE hive", "modules"),
        ("SELECT user FROM clicks; SELECT url FROM clicks", "several statements"),
        ("SELECT CAST(n AS TIMESTAMP(3)) FROM clicks", "CAST from BIGINT to TIMESTAMP(3)"),
        ("SELECT CAST(n AS TIME) FROM clicks", "type TIME"),
    ],
)
def test_unsupported_features_are_named(t_env: TableEnvironment, sql: str, feature: str) -> None:
    with pytest.raises(NotSupportedYet) as e:
        t_env.execute_sql(sql)
    message = _one_line(e)
    assert message.startswith("not supported yet: ") and feature in message


def test_validation_error_names_the_span_on_a_later_line(t_env: TableEnvironment) -> None:
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("SELECT user,\n  url\nFROM clicks\nWHERE `missing` > 1")
    assert _one_line(e).startswith("SQL validation failed. From line 4, column 7 to line 4, column 15: Column "
                                   "'missing' not found in any table")
    with pytest.raises(ValidationException) as e:
        t_env.sql_query("SELECT\n\tnope FROM clicks")
    assert "From line 2, column 2 to line 2, column 5" in _one_line(e)


def test_parse_error_names_line_and_column(t_env: TableEnvironment) -> None:
    with pytest.raises(SqlParserException) as e:
        t_env.execute_sql("SELECT user\nFROM WHERE")
    assert "line 2, column" in _one_line(e)


def test_connector_options_are_checked(t_env: TableEnvironment) -> None:
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE g (a INT) WITH ('connector'='datagen', 'rows-per-secnd'='5')")
    message = _one_line(e)
    assert "'rows-per-secnd'" in message and "rows-per-second" in message  # lists the allowed ones
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE g (a INT) WITH ('connector'='datagen', 'fields.a.kind'='sequence')")
    assert "fields.a.start" in _one_line(e)


def test_insert_checks_the_sink(t_env: TableEnvironment) -> None:
    t_env.execute_sql("CREATE TABLE out1 (user STRING, n INT) WITH ('connector'='blackhole')")
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("INSERT INTO out1 SELECT user FROM clicks")
    assert "1 columns, the sink 2" in _one_line(e)
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("INSERT INTO out1 SELECT n, user FROM clicks")
    assert "column 'user' is STRING" in _one_line(e)
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("SELECT * FROM out1")
    assert "is a sink" in _one_line(e)
    with pytest.raises(ValidationException) as e:
        t_env.execute_sql("CREATE TABLE out1 (a INT) WITH ('connector'='blackhole')")
    assert "already exists" in _one_line(e)


def test_to_data_stream_refuses_an_updating_table() -> None:
    from strom.datastream import StreamExecutionEnvironment

    t_env = StreamTableEnvironment.create(StreamExecutionEnvironment.get_execution_environment())
    clicks = t_env.from_elements([("Mary", "./home")], ["user", "url"])
    counts = clicks.group_by(col("user")).select(col("user"), col("url").count)
    with pytest.raises(ValidationException) as e:
        t_env.to_data_stream(counts)
    message = _one_line(e)
    assert "doesn't support consuming update changes" in message and "GroupAggregate(groupBy=[user]" in message


def test_table_api_unsupported_and_unknown(t_env: TableEnvironment) -> None:
    clicks = t_env.from_path("clicks")
    with pytest.raises(NotSupportedYet) as e:
        clicks.minus(clicks)
    assert _one_line(e) == "not supported yet: Table.minus (MINUS)"
    with pytest.raises(NotSupportedYet):
        clicks.select("user, url")
    with pytest.raises(ValidationException) as e:
        clicks.select(col("nope"))
    assert "unknown column 'nope'; available columns: user, url, n" == _one_line(e)
    with pytest.raises(ValidationException):
        t_env.from_elements([(1, "a")], ["a"])
    with pytest.raises(ValidationException) as e:
        clicks.select(col("user")).union_all(clicks.select(col("n")))
    assert "column 'user' is STRING in one input, BIGINT in another" in _one_line(e)
    with pytest.raises(ValidationException) as e:
        from strom.table import DataTypes

        t_env.from_elements([("x",)], DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT())]))
    assert "column 'a' is INT" in _one_line(e)
