"""`strom sql` in a pseudo-terminal: a query in each result mode, the displayed rows checked against a plain
Python computation over the same input (a CSV file the test writes, a bounded datagen sequence)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from tests.sql_client.terminal import SqlTerminal, tableau_rows, view_rows

pytestmark = pytest.mark.timeout(300)

QUERY = "SELECT name, COUNT(*) AS cnt, SUM(amount) AS total FROM orders GROUP BY name;"


def _orders(tmp_path: Path, n: int = 40) -> tuple[str, dict[str, tuple[int, int]]]:
    """A CSV source of `n` (name, amount) rows, its DDL, and the grouped counts and sums computed in Python."""
    rng = random.Random(20)
    rows = [(rng.choice(["ann", "bob", "cy", "dee"]), rng.randint(1, 100)) for _ in range(n)]
    data = tmp_path / "orders"
    data.mkdir()
    (data / "orders.csv").write_text("".join(f"{n},{a}\n" for n, a in rows))
    expected: dict[str, tuple[int, int]] = {}
    for name, amount in rows:
        cnt, total = expected.get(name, (0, 0))
        expected[name] = (cnt + 1, total + amount)
    ddl = (f"CREATE TABLE orders (name STRING, amount INT) WITH ('connector' = 'filesystem', 'path' = '{data}', "
           "'format' = 'csv');")
    return ddl, expected


def _reduce(changes: list[list[str]]) -> Counter[tuple[str, ...]]:
    """A changelog (op first) applied to an empty table: the final rows as a multiset."""
    table: Counter[tuple[str, ...]] = Counter()
    for op, *values in changes:
        assert op in ("+I", "-U", "+U", "-D"), op
        table[tuple(values)] += 1 if op in ("+I", "+U") else -1
    assert all(n >= 0 for n in table.values()), table
    return +table


def _expected(expected: dict[str, tuple[int, int]]) -> Counter[tuple[str, ...]]:
    return Counter((n, str(c), str(t)) for n, (c, t) in expected.items())


@pytest.fixture
def client(tmp_path: Path):
    terminal = SqlTerminal(cwd=tmp_path)
    terminal.wait_for("Welcome!")
    yield terminal
    terminal.close()


def test_tableau_mode_prints_each_change_with_its_op_as_it_arrives(client: SqlTerminal, tmp_path: Path) -> None:
    ddl, expected = _orders(tmp_path)
    client.run(ddl, then="[INFO] Execute statement succeed.")
    client.run("SET 'sql-client.execution.result-mode' = 'tableau';", then="[INFO] Session property has been set.")
    shown = client.run(QUERY, then="Received a total of")
    rows = tableau_rows(shown)
    assert rows[0][0] == "+I"
    assert _reduce(rows) == _expected(expected)
    assert f"Received a total of {len(rows)} rows" in shown
    assert client.quit() == 0


def test_changelog_mode_shows_the_op_column_in_a_full_screen_view(client: SqlTerminal, tmp_path: Path) -> None:
    # 14 rows over 4 names: at most 4 inserts + 10 x (-U, +U) = 24 changes, all on the 40-line screen's one page
    ddl, expected = _orders(tmp_path, 14)
    client.run(ddl, then="[INFO] Execute statement succeed.")
    client.run("SET 'sql-client.execution.result-mode' = 'changelog';", then="[INFO] Session property has been set.")
    client.run(QUERY, then="Table program finished.")
    frame = client.frame("SQL Query Result (Changelog)")
    assert frame[3].split() == ["op", "name", "cnt", "total"]
    changes = view_rows(frame)
    assert {c[0] for c in changes} <= {"+I", "-U", "+U"} and "+U" in {c[0] for c in changes}
    assert _reduce(changes) == _expected(expected)
    assert "Q Quit" in frame[-2] and "R Refresh" in frame[-1]
    client.leave_view()
    assert client.quit() == 0


def test_table_mode_shows_the_materialized_result_refreshed_in_place(client: SqlTerminal, tmp_path: Path) -> None:
    ddl, expected = _orders(tmp_path)
    client.run(ddl, then="[INFO] Execute statement succeed.")
    client.run(QUERY, then="Table program finished.")  # table is the default mode, as in Flink
    frame = client.frame("SQL Query Result (Table)")
    assert "Page: Last of 1" in frame[1]
    assert frame[3].split() == ["name", "cnt", "total"]
    assert Counter(tuple(r) for r in view_rows(frame)) == _expected(expected)
    assert frame[-2].split()[:2] == ["Q", "Quit"] and "N Next Page" in frame[-2] and "L Last Page" in frame[-1]
    client.leave_view()
    assert client.quit() == 0


def test_a_bounded_datagen_sequence_in_table_mode(client: SqlTerminal) -> None:
    """ids 1..30: grouped by id % 4 -> counts and sums worked out in Python."""
    client.run("CREATE TABLE seq (id INT) WITH ('connector' = 'datagen', 'number-of-rows' = '30', "
               "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '30');",
               then="[INFO] Execute statement succeed.")
    client.run("SELECT id % 4 AS k, COUNT(*) AS c, SUM(id) AS s FROM seq GROUP BY id % 4;",
               then="Table program finished.")
    shown = Counter(tuple(r) for r in view_rows(client.frame("SQL Query Result (Table)")))
    groups = {k: [i for i in range(1, 31) if i % 4 == k] for k in range(4)}
    assert shown == Counter((str(k), str(len(v)), str(sum(v))) for k, v in groups.items())
    client.leave_view()
    assert client.quit() == 0
