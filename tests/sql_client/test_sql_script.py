"""The shared SQL script runner: splitting at ';' (never inside quotes, comments or EXECUTE STATEMENT SET),
each statement's line and column, and errors moved to where they are in the script. Expected positions are
counted by hand in each test's script text."""

from __future__ import annotations

import pytest
from strom.table import TableEnvironment
from strom.table.sql_script import SqlScriptError, is_complete, parse_script, run_script, split_script


def _texts(script: str) -> list[str]:
    return [s.text for s in split_script(script)]


def test_semicolons_inside_strings_identifiers_and_comments_do_not_split() -> None:
    script = "SET 'a' = 'x;y';\nSELECT 'it''s;' AS `c;d`, \"e;f\" FROM t -- no; split\n;/* ; */SELECT 2;"
    assert _texts(script) == ["SET 'a' = 'x;y'", "SELECT 'it''s;' AS `c;d`, \"e;f\" FROM t", "SELECT 2"]


def test_comments_are_blanked_but_hints_are_kept() -> None:
    [statement] = split_script("SELECT a /* why */ FROM t /*+ OPTIONS('k'='v') */;")
    assert statement.text == "SELECT a" + " " * len(" /* why */ ") + "FROM t /*+ OPTIONS('k'='v') */"


def test_blank_and_comment_only_parts_are_not_statements() -> None:
    assert _texts(";;\n-- only a comment;\n  ;\n/* x */") == []


def test_execute_statement_set_is_one_statement_with_its_inner_semicolons() -> None:
    script = "EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND;\nSELECT 3;"
    assert _texts(script) == ["EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND",
                              "SELECT 3"]


def test_each_statement_knows_its_line_column_and_whether_it_was_terminated() -> None:
    script = "-- head\nSET 'a' = 'b';  SELECT\n  1;\n\n   SELECT 2"
    got = [(s.line, s.column, s.index, s.terminated) for s in split_script(script)]
    assert got == [(2, 1, 0, True), (2, 17, 1, True), (5, 4, 2, False)]


def test_an_unclosed_string_or_comment_is_an_error_naming_where_it_opens() -> None:
    with pytest.raises(SqlScriptError, match=r"^x.sql: line 2, column 11: unterminated string literal") as e:
        split_script("SELECT 1;\nSELECT 1, 'abc;\n", source="x.sql")
    assert (e.value.line, e.value.column) == (2, 11)
    with pytest.raises(SqlScriptError, match=r"line 1, column 10: unterminated comment"):
        split_script("SELECT 1 /* never closed; SELECT 2;")


@pytest.mark.parametrize(("text", "complete"), [
    ("SELECT 1", False), ("SELECT 1;", True), ("SELECT 1;  -- done", True), ("SELECT ';", False),
    ("SELECT 1 /* ; ", False), ("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;", False),
    ("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END;", True), ("", True), ("SELECT 1; SELECT", False),
])
def test_input_is_complete_when_it_ends_with_a_semicolon_outside_quotes_comments_and_statement_sets(
        text: str, complete: bool) -> None:
    assert is_complete(text) is complete


def test_a_parse_error_points_at_the_script_line_and_column() -> None:
    t_env = TableEnvironment.create()
    script = "SET 'pipeline.name' = 'x';\n\n  SELEC 1;"  # '1' is line 3, column 9
    with pytest.raises(SqlScriptError) as e:
        run_script(t_env, script)
    assert (e.value.line, e.value.column) == (3, 9)
    assert "line 3, column 9" in str(e.value) and "\n" not in str(e.value)
    assert e.value.statement is not None and e.value.statement.index == 1


def test_a_validation_error_on_a_later_line_of_a_statement_keeps_its_column() -> None:
    t_env = TableEnvironment.create()
    script = "SHOW TABLES;\n  SELECT a\n   FROM nope;"  # 'nope': line 3, columns 9..12
    with pytest.raises(SqlScriptError, match=r"From line 3, column 9 to line 3, column 12: Object 'nope'") as e:
        run_script(t_env, script)
    assert (e.value.line, e.value.column) == (3, 9)


def test_an_error_without_a_position_points_at_the_statement() -> None:
    t_env = TableEnvironment.create()
    with pytest.raises(SqlScriptError, match=r"^s.sql: line 2, column 3: view 'nope' does not exist") as e:
        run_script(t_env, "SHOW TABLES;\n  DROP VIEW nope;", source="s.sql")
    assert (e.value.line, e.value.column) == (2, 3)


def test_statements_run_in_order_and_the_callback_sees_each_result() -> None:
    t_env = TableEnvironment.create()
    seen: list[tuple[int, list[tuple[object, ...]]]] = []

    def on_result(statement, result) -> None:  # type: ignore[no-untyped-def]
        with result.collect() as rows:
            seen.append((statement.index, [tuple(r) for r in rows]))

    script = ("CREATE TEMPORARY VIEW v AS SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(n, s);\n"
              "SELECT n * 10, s FROM v WHERE n > 1;")
    results = run_script(t_env, script, on_result=on_result)
    assert len(results) == 2
    assert seen == [(0, [("OK",)]), (1, [(20, "b")])]


def test_the_first_failing_statement_stops_the_script() -> None:
    t_env = TableEnvironment.create()
    ran: list[int] = []
    with pytest.raises(SqlScriptError):
        run_script(t_env, "SHOW TABLES;\nSELEC 2;\nSHOW TABLES;", on_result=lambda s, r: ran.append(s.index))
    assert ran == [0]


def test_parse_script_checks_every_statement_without_running_any() -> None:
    assert len(parse_script("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\nSELECT a FROM t;")) == 2
    with pytest.raises(SqlScriptError, match=r"line 2, column 9"):  # the token after "(": column 9
        parse_script("SELECT 1;\nSELECT (1;")
    with pytest.raises(SqlScriptError, match="no SQL statement"):
        parse_script("-- nothing\n")
