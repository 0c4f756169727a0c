"""The pure parts of `strom sql`: its command line, the sql-client.* options, which Flink message a statement
gets, when Enter runs the input, the materialized result of the table mode, the frames of the views, and
completion. Expected values are worked by hand in each test."""

from __future__ import annotations

import pytest
from strom.sql_client import display, messages
from strom.sql_client.client_options import ClientOptions
from strom.sql_client.completion import candidates
from strom.sql_client.options import SqlClientUsageError, parse_sql_client_args
from strom.sql_client.results import ChangelogBuffer, MaterializedTable
from strom.sql_client.shell import wants_to_run
from strom.table.types import DataTypes


def test_the_command_line_takes_flinks_options_and_strom_s_jobmanager() -> None:
    o = parse_sql_client_args(["embedded", "-i", "init.sql", "--file=job.sql", "-m", "jm:8081",
                               "-Dparallelism.default=2", "-hist", "/tmp/h", "--verbose"])
    assert (o.init, o.file, o.jobmanager, o.history, o.verbose) == ("init.sql", "job.sql", "jm:8081", "/tmp/h", True)
    assert o.dynamic == [("parallelism.default", "2")]


@pytest.mark.parametrize(("argv", "message"), [
    (["--nope"], "unknown argument '--nope'"), (["-f"], "option -f expects a value"),
    (["-D", "novalue"], "-D expects key=value"), (["job.sql"], "unknown argument 'job.sql'"),
])
def test_a_bad_command_line_is_refused_naming_what_is_wrong(argv: list[str], message: str) -> None:
    with pytest.raises(SqlClientUsageError, match=message):
        parse_sql_client_args(argv)


def test_client_options_have_flinks_defaults_and_refuse_bad_values() -> None:
    o = ClientOptions.empty()
    assert (o.result_mode, o.max_rows, o.max_column_width, o.verbose) == ("table", 1_000_000, 30, False)
    o.set("sql-client.execution.result-mode", "TABLEAU")
    assert o.result_mode == "tableau"
    with pytest.raises(ValueError, match="expected one of table, changelog, tableau"):
        o.set("sql-client.execution.result-mode", "grid")
    with pytest.raises(ValueError, match="expected a positive integer"):
        o.set("sql-client.execution.max-table-result.rows", "0")
    with pytest.raises(ValueError, match="unknown SQL client option 'sql-client.nope'"):
        o.set("sql-client.nope", "1")
    o.reset()
    assert o.result_mode == "table"


@pytest.mark.parametrize(("text", "kind"), [
    ("quit", "quit"), ("EXIT", "quit"), ("SET 'a' = 'b'", "set"), ("reset", "reset"),
    ("BEGIN STATEMENT SET", "begin"), ("end", "end"), ("INSERT INTO t SELECT 1", "insert"),
    ("EXECUTE STATEMENT SET BEGIN INSERT INTO t SELECT 1; END", "update"), ("  select 1", "query"),
    ("WITH x AS (SELECT 1) SELECT * FROM x", "query"), ("EXPLAIN SELECT 1", "explain"), ("DESC t", "show"),
    ("SHOW TABLES", "show"), ("CREATE TABLE t (a INT)", "ddl"), ("SETTINGS", "ddl"),
])
def test_each_statement_gets_its_kind_from_its_leading_keywords(text: str, kind: str) -> None:
    assert messages.statement_kind(text) == kind


def test_an_error_is_flinks_header_and_one_line() -> None:
    lines = messages.error(ValueError("x"), "line 2, column 3:\n  bad   thing")
    assert lines == ["[ERROR] Could not execute SQL statement. Reason:", "ValueError: line 2, column 3: bad thing", ""]


@pytest.mark.parametrize(("text", "runs"), [
    ("SELECT 1", False), ("SELECT 1;", True), ("quit", True), ("exit", True), ("", False), ("SELECT ';'", False),
    ("SELECT 1; -- comment", True),
])
def test_enter_runs_whole_statements_or_a_bare_quit(text: str, runs: bool) -> None:
    assert wants_to_run(text) is runs


def test_the_materialized_table_retracts_the_row_an_update_before_names() -> None:
    t = MaterializedTable(max_rows=10)
    for kind, row in [("+I", ("a", 1)), ("+I", ("b", 1)), ("-U", ("a", 1)), ("+U", ("a", 2)), ("-D", ("b", 1)),
                      ("-D", ("zz", 9))]:  # a retraction of a row that is not there changes nothing
        t.apply(kind, row)
    assert t.rows == [("a", 2)]


def test_the_materialized_table_and_the_changelog_keep_the_newest_rows_within_the_limit() -> None:
    t, c = MaterializedTable(max_rows=2), ChangelogBuffer(max_rows=2)
    for i in range(3):
        t.apply("+I", (i,))
        c.apply("+I", (i,))
    assert t.rows == [(1,), (2,)]
    assert list(c.rows) == [("+I", (1,)), ("+I", (2,))]


COLUMNS = [("name", DataTypes.STRING()), ("n", DataTypes.BIGINT())]


def test_a_table_view_frame_pages_its_rows_and_ends_with_flinks_key_hints() -> None:
    rows = [(f"r{i}", i) for i in range(10)]
    # height 10: 3 header lines + the column names + 4 rows + 2 hint lines -> 3 pages of 4, 4, 2 rows
    frame = display.render_view(title="SQL Query Result (Table)", columns=COLUMNS, rows=rows, op=None,
                                status="Table program finished.", page=2, updated="12:00:00.000", width=80,
                                height=10, max_column_width=30)
    assert len(frame) == 10
    assert frame[0].strip() == "SQL Query Result (Table)"
    assert "Table program finished." in frame[1] and "Page: 2 of 3" in frame[1] and "Updated: 12:00:00.000" in frame[1]
    assert [line.split() for line in frame[3:8]] == [["name", "n"], ["r4", "4"], ["r5", "5"], ["r6", "6"], ["r7", "7"]]
    assert frame[8].split() == ["Q", "Quit", "+", "Inc", "Refresh", "G", "Goto", "Page", "N", "Next", "Page"]
    last = display.render_view(title="t", columns=COLUMNS, rows=rows, op=None, status="s", page=None, updated="u",
                               width=80, height=10, max_column_width=30)
    assert "Page: Last of 3" in last[1] and last[4].split() == ["r8", "8"]


def test_a_changelog_view_frame_shows_the_newest_changes_with_their_op_and_cuts_wide_cells() -> None:
    rows = [("x" * 40, 1), ("b", 2)]
    frame = display.render_view(title="SQL Query Result (Changelog)", columns=COLUMNS, rows=rows, op=["+I", "-U"],
                                status="Refresh: 1 s", page=None, updated="u", width=80, height=12,
                                max_column_width=10)
    assert [line.split() for line in frame[3:6]] == [["op", "name", "n"], ["+I", "xxxxxxx...", "1"], ["-U", "b", "2"]]
    assert frame[-2].split()[:2] == ["Q", "Quit"] and "Goto" not in frame[-2]


def test_the_streaming_tableau_sizes_columns_by_type_and_counts_the_rows() -> None:
    tab = display.StreamingTableau(COLUMNS, max_column_width=30)
    assert tab.header()[1] == "| op |" + "name".rjust(31) + " |" + "n".rjust(21) + " |"
    assert tab.row("+U", ("a", None)) == "| +U |" + "a".rjust(31) + " |" + "<NULL>".rjust(21) + " |"
    assert tab.footer(1, cancelled=False)[-2] == "Received a total of 1 row"
    assert tab.footer(3, cancelled=True)[-2] == "Query terminated, received a total of 3 rows"


def test_completion_offers_tables_then_functions_then_keywords_case_insensitively() -> None:
    got = candidates("se", tables=["sensors", "orders"], functions=["sec_to_time"], keywords=["SELECT", "SET"])
    assert [(c.text, c.kind) for c in got] == [("sensors", "table"), ("SEC_TO_TIME", "function"),
                                               ("SELECT", "keyword"), ("SET", "keyword")]
    assert candidates("", tables=["t"], functions=[]) == []
    assert [c.text for c in candidates("ORDERS", tables=["orders"], functions=[], keywords=[])] == []


def test_a_query_against_a_cluster_on_another_machine_is_refused_before_it_runs() -> None:
    """The collect sink answers on the client's loopback port: a remote cluster could not deliver the rows."""
    import io

    from strom.sql_client.session import SqlSession
    from strom.table import TableEnvironment
    from strom.table.sql_script import SqlScriptError, split_script

    session = SqlSession(TableEnvironment.create(), io.StringIO(), remote_host="10.1.2.3")
    session.options.set("sql-client.execution.result-mode", "tableau")
    [statement] = split_script("\n SELECT 1 AS one;")
    with pytest.raises(SqlScriptError, match=r"line 2, column 2: a query with --jobmanager 10.1.2.3:\.\. runs"):
        session.run(statement)
