"""Sink changelog semantics as Flink's planner has them: PRIMARY KEY .. NOT ENFORCED, an updating query
refused by an insert-only sink, upsert sinks receiving +I/+U/-D by key (-U dropped), and the
SinkUpsertMaterializer when the sink's key is not the query's upsert key (table.exec.sink.upsert-materialize
AUTO/FORCE/NONE). Expected changelogs are worked by hand in each test; final tables come from DuckDB."""

from __future__ import annotations

from typing import Any

import pytest
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.connectors import SinkMode, TableContext, register
from strom.table.connectors.print_connector import PrintFactory
from strom.table.errors import TableException, ValidationException

from .reference import duckdb_table


class _UpsertPrint(PrintFactory):
    """The print connector, declared an upsert sink when the table has a primary key (as jdbc is)."""

    identifier = "test-upsert-print"

    def sink_mode(self, ctx: TableContext) -> SinkMode:
        return SinkMode.UPSERT if ctx.primary_key else SinkMode.INSERT_ONLY


register(_UpsertPrint())


def _t_env() -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    return t_env


def _printed(capfd: Any, tag: str) -> list[str]:
    return [line[len(tag) + 2:] for line in capfd.readouterr().out.splitlines() if line.startswith(tag + "> ")]


def _upsert_reduce(lines: list[str], key: int) -> dict[str, tuple[str, ...]]:
    """An upsert table: +I/+U write the row under its key, -D deletes the key (a plain-Python reference)."""
    table: dict[str, tuple[str, ...]] = {}
    for line in lines:
        kind, values = line[:2], tuple(line[3:-1].split(", "))
        assert kind in ("+I", "+U", "-D"), f"an upsert sink got {line}"
        if kind == "-D":
            del table[values[key]]
        else:
            table[values[key]] = values
    return table


VISITS = "(VALUES ('Mary'), ('Bob'), ('Bob')) AS v(name)"


def test_primary_key_needs_not_enforced_and_physical_columns() -> None:
    t_env = _t_env()
    with pytest.raises(ValidationException, match="only supported mode is the NOT ENFORCED mode"):
        t_env.execute_sql("CREATE TABLE s (a INT, PRIMARY KEY (a)) WITH ('connector'='print')")
    with pytest.raises(ValidationException, match="PRIMARY KEY column 'b' is not a physical column"):
        t_env.execute_sql("CREATE TABLE s (a INT, PRIMARY KEY (b) NOT ENFORCED) WITH ('connector'='print')")
    t_env.execute_sql("CREATE TABLE s (a INT, b STRING, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector'='print')")
    rows = {r[0]: r for r in t_env.execute_sql("DESCRIBE s").collect()}
    assert rows["a"][2] is False and rows["b"][2] is True  # a primary key's columns are NOT NULL, as in Flink
    t_env.execute_sql("CREATE TABLE c (a INT PRIMARY KEY NOT ENFORCED) WITH ('connector'='print')")


def test_updating_query_into_an_insert_only_sink_is_refused_as_flink_does() -> None:
    t_env = _t_env()
    t_env.execute_sql("CREATE TABLE s (name STRING, n BIGINT) WITH ('connector'='test-upsert-print')")
    with pytest.raises(TableException) as e:
        t_env.execute_sql(f"INSERT INTO s SELECT name, COUNT(*) FROM {VISITS} GROUP BY name")
    assert str(e.value).startswith("Table sink 'default_catalog.default_database.s' doesn't support consuming "
                                   "update changes which is produced by node GroupAggregate(")


def test_upsert_sink_with_the_querys_key_gets_upserts_without_update_before(capfd) -> None:
    """GROUP BY name into PK (name): Mary, Bob, Bob -> +I[Mary, 1], +I[Bob, 1], (-U[Bob, 1] dropped), +U[Bob, 2]."""
    t_env = _t_env()
    t_env.execute_sql("CREATE TABLE s (name STRING, n BIGINT, PRIMARY KEY (name) NOT ENFORCED) WITH ("
                      "'connector'='test-upsert-print', 'print-identifier'='up')")
    t_env.execute_sql(f"INSERT INTO s SELECT name, COUNT(*) FROM {VISITS} GROUP BY name").wait()
    assert _printed(capfd, "up") == ["+I[Mary, 1]", "+I[Bob, 1]", "+U[Bob, 2]"]


def test_print_shows_the_whole_changelog(capfd) -> None:
    t_env = _t_env()
    t_env.execute_sql("CREATE TABLE p (name STRING, n BIGINT, PRIMARY KEY (name) NOT ENFORCED) WITH ("
                      "'connector'='print', 'print-identifier'='pr')")
    t_env.execute_sql(f"INSERT INTO p SELECT name, COUNT(*) FROM {VISITS} GROUP BY name").wait()
    assert _printed(capfd, "pr") == ["+I[Mary, 1]", "+I[Bob, 1]", "-U[Bob, 1]", "+U[Bob, 2]"]


COUNT_KEYED = f"INSERT INTO s SELECT COUNT(*), name FROM {VISITS} GROUP BY name"
FINAL = "SELECT COUNT(*), name FROM v GROUP BY name"


def _sink_keyed_by_count(t_env: TableEnvironment) -> None:
    t_env.execute_sql("CREATE TABLE s (n BIGINT, name STRING, PRIMARY KEY (n) NOT ENFORCED) WITH ("
                      "'connector'='test-upsert-print', 'print-identifier'='m')")


def _duckdb_by_count() -> dict[str, tuple[str, ...]]:
    final = duckdb_table({"v": ([("name", "VARCHAR")], [("Mary",), ("Bob",), ("Bob",)])}, FINAL)
    return {str(n): (str(n), name) for (n, name) in final}


@pytest.mark.parametrize("strategy", ["AUTO", "FORCE"])
def test_sink_key_other_than_the_upsert_key_is_materialized(capfd, strategy: str) -> None:
    """Sink PK (n) is not the query's upsert key (name). Query changelog: +I(1,Mary), +I(1,Bob), -U(1,Bob),
    +U(2,Bob). SinkUpsertMaterializer per n: n=1 [Mary] -> +I[1, Mary]; [Mary, Bob] -> +U[1, Bob]; Bob (the
    newest) retracted -> +U[1, Mary]; n=2 [Bob] -> +I[2, Bob]. The upsert table equals DuckDB's."""
    t_env = _t_env()
    t_env.get_config().set("table.exec.sink.upsert-materialize", strategy)
    _sink_keyed_by_count(t_env)
    t_env.execute_sql(COUNT_KEYED).wait()
    lines = _printed(capfd, "m")
    assert lines == ["+I[1, Mary]", "+U[1, Bob]", "+U[1, Mary]", "+I[2, Bob]"]
    assert _upsert_reduce(lines, 0) == _duckdb_by_count()


def test_upsert_materialize_none_passes_the_changelog_without_update_before(capfd) -> None:
    """NONE, as Flink: -U dropped, +I/+U written by n; the sink ends with n=1 -> Bob, not DuckDB's Mary."""
    t_env = _t_env()
    t_env.get_config().set("table.exec.sink.upsert-materialize", "NONE")
    _sink_keyed_by_count(t_env)
    t_env.execute_sql(COUNT_KEYED).wait()
    lines = _printed(capfd, "m")
    assert lines == ["+I[1, Mary]", "+I[1, Bob]", "+U[2, Bob]"]
    assert _upsert_reduce(lines, 0) != _duckdb_by_count()


def test_materializer_deletes_the_key_when_its_last_row_is_retracted(capfd) -> None:
    """FORCE on the query's own key: Mary, Mary -> +I(Mary,1), -U(Mary,1), +U(Mary,2) into PK (name, n):
    key (Mary,1): +I[Mary, 1], then its only row retracted -> -D[Mary, 1]; key (Mary,2): +I[Mary, 2]."""
    t_env = _t_env()
    t_env.get_config().set("table.exec.sink.upsert-materialize", "FORCE")
    t_env.execute_sql("CREATE TABLE s (name STRING, n BIGINT, PRIMARY KEY (name, n) NOT ENFORCED) WITH ("
                      "'connector'='test-upsert-print', 'print-identifier'='d')")
    t_env.execute_sql("INSERT INTO s SELECT name, COUNT(*) FROM (VALUES ('Mary'), ('Mary')) AS v(name) "
                      "GROUP BY name").wait()
    assert _printed(capfd, "d") == ["+I[Mary, 1]", "-D[Mary, 1]", "+I[Mary, 2]"]


def test_unknown_upsert_materialize_strategy_is_refused() -> None:
    t_env = _t_env()
    t_env.get_config().set("table.exec.sink.upsert-materialize", "SOMETIMES")
    _sink_keyed_by_count(t_env)
    with pytest.raises(ValidationException, match="table.exec.sink.upsert-materialize must be one of NONE, AUTO"):
        t_env.execute_sql(COUNT_KEYED)
