"""SET 'execution.runtime-mode' in SQL switches the statements after it between streaming and batch, as a Flink
SQL Client session (and its scripts) does; RESET returns to the mode the environment was created in."""

from __future__ import annotations

from collections import Counter

import pytest
from strom.table import EnvironmentSettings, TableEnvironment, ValidationException
from strom.table.sql_script import run_script

DDL = ("CREATE TABLE seq (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '6', "
       "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '6')")
QUERY = "SELECT id % 2 AS parity, COUNT(*) AS n FROM seq GROUP BY id % 2"
SHORT = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
FINAL = Counter({(1, 3): 1, (0, 3): 1})  # plain Python: ids 1..6 -> three odd, three even


def _kinds_and_final(t_env: TableEnvironment) -> tuple[set[str], Counter]:
    kinds: set[str] = set()
    final: Counter = Counter()
    with t_env.execute_sql(QUERY).collect() as rows:
        for r in rows:
            kind = SHORT[r.get_row_kind().name]
            kinds.add(kind)
            final[tuple(r)] += 1 if kind in ("+I", "+U") else -1
    return kinds, +final


def test_set_runtime_mode_switches_the_following_statements_and_reset_restores() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(DDL)
    kinds, final = _kinds_and_final(t_env)
    assert final == FINAL and {"-U", "+U"} <= kinds  # streaming: the counts are updated as rows arrive

    t_env.execute_sql("SET 'execution.runtime-mode' = 'batch'")
    kinds, final = _kinds_and_final(t_env)
    assert final == FINAL and kinds == {"+I"}  # batch: final rows only

    t_env.execute_sql("RESET 'execution.runtime-mode'")
    kinds, final = _kinds_and_final(t_env)
    assert final == FINAL and {"-U", "+U"} <= kinds


def test_a_script_switches_to_batch_for_its_later_statements() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    seen: list[set[str]] = []

    def on_result(statement, result) -> None:  # noqa: ANN001 - sql_script's callback
        if statement.text.lstrip().upper().startswith("SELECT"):
            with result.collect() as rows:
                seen.append({SHORT[r.get_row_kind().name] for r in rows})

    run_script(t_env, f"{DDL};\nSET 'execution.runtime-mode' = 'batch';\n{QUERY};\n", on_result=on_result)
    assert seen == [{"+I"}]


def test_automatic_or_unknown_modes_are_refused_naming_the_key() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    for value in ("automatic", "fast"):
        with pytest.raises(ValidationException, match="execution.runtime-mode"):
            t_env.execute_sql(f"SET 'execution.runtime-mode' = '{value}'")
    t_env.execute_sql(DDL)
    kinds, final = _kinds_and_final(t_env)  # still batch
    assert final == FINAL and kinds == {"+I"}
