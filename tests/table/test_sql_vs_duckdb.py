"""Every supported clause against DuckDB: Strom's changelog, reduced to a table, equals DuckDB's result
over the same rows (streaming), and BATCH mode's insert-only result equals it too."""

from __future__ import annotations

import pytest
from strom.common.row import RowKind
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment

from .reference import duckdb_table, reduce_changelog

COLUMNS = [("name", "VARCHAR"), ("category", "VARCHAR"), ("amount", "INTEGER"), ("price", "DOUBLE"),
           ("flag", "BOOLEAN")]
ROWS = [
    ("apple", "fruit", 3, 1.5, True),
    ("pear", "fruit", 5, 2.25, False),
    ("kiwi", "fruit", None, 0.75, True),
    ("leek", "veg", 2, 3.0, None),
    ("Kale", "veg", -4, None, False),
    ("Beet", "veg", 7, 1.25, True),
    (None, "misc", 1, 9.5, True),
    ("salt", None, 0, 0.5, False),
    ("apple", "fruit", 3, 1.5, True),
]

# (Strom's Flink SQL, DuckDB's SQL when the dialects differ)
QUERIES: list[tuple[str, str | None]] = [
    ("SELECT name, amount FROM items", None),
    ("SELECT * FROM items WHERE amount > 2 AND flag", None),
    ("SELECT name, price * 2 AS p2, amount + 1 FROM items WHERE price IS NOT NULL OR amount < 0", None),
    ("SELECT UPPER(name), LOWER(category), ABS(amount) FROM items", None),
    ("SELECT CONCAT(name, '-', category) FROM items", "SELECT name || '-' || category FROM items"),
    ("SELECT name || category FROM items", None),
    ("SELECT CAST(amount AS STRING), CAST(price AS INT) FROM items",
     "SELECT CAST(amount AS VARCHAR), CAST(trunc(price) AS INTEGER) FROM items"),
    ("SELECT CASE WHEN amount > 3 THEN 'big' WHEN amount > 0 THEN 'small' ELSE 'none' END FROM items", None),
    ("SELECT CASE category WHEN 'fruit' THEN 1 ELSE 0 END, COALESCE(name, category, '?') FROM items", None),
    ("SELECT name FROM items WHERE amount IN (1, 3, 7) OR name LIKE 'K%' OR price BETWEEN 2 AND 3", None),
    ("SELECT category, COUNT(*) FROM items GROUP BY category", None),
    ("SELECT category, COUNT(name), SUM(amount), MIN(price), MAX(name) FROM items GROUP BY category", None),
    ("SELECT category, AVG(price) FROM items GROUP BY category", None),
    ("SELECT category, COUNT(DISTINCT name), SUM(DISTINCT amount) FROM items GROUP BY category", None),
    ("SELECT category, SUM(amount) AS s FROM items GROUP BY category HAVING COUNT(*) > 2", None),
    ("SELECT flag, MAX(amount) - MIN(amount) FROM items WHERE name IS NOT NULL GROUP BY flag", None),
    ("SELECT UPPER(category), COUNT(*) FROM items GROUP BY UPPER(category)", None),
    ("SELECT COUNT(*), SUM(price), MAX(amount) FROM items", None),
    # aggregate FILTER clauses (Nexmark q15-q17): rows failing the condition are left out of that aggregate only
    ("SELECT category, COUNT(*) FILTER (WHERE amount > 2), SUM(amount) FILTER (WHERE flag), "
     "MIN(price) FILTER (WHERE name <> 'kiwi'), AVG(price) FILTER (WHERE amount > 100) FROM items GROUP BY category",
     None),
    ("SELECT category, COUNT(DISTINCT name) FILTER (WHERE price < 2), COUNT(DISTINCT name), "
     "SUM(DISTINCT amount) FILTER (WHERE flag) FROM items GROUP BY category", None),
    ("SELECT COUNT(*) FILTER (WHERE flag), MAX(name) FILTER (WHERE amount < 3) FROM items", None),
    ("SELECT COUNT(*) FROM items WHERE amount > 100", None),
    ("SELECT c, COUNT(*) FROM (SELECT category, COUNT(*) AS c FROM items GROUP BY category) GROUP BY c", None),
    ("SELECT i.name FROM items AS i WHERE i.amount >= 3", None),
    ("SELECT DISTINCT category, flag FROM items", None),
    ("SELECT DISTINCT c FROM (SELECT category, COUNT(*) AS c FROM items GROUP BY category)", None),
    ("SELECT name, amount FROM items WHERE flag UNION ALL SELECT category, amount * 10 FROM items", None),
    ("SELECT category FROM items UNION SELECT name FROM items", None),
    ("SELECT category, COUNT(*) FROM (SELECT category FROM items UNION ALL SELECT category FROM items) "
     "GROUP BY category", None),
]

STREAMING_EMPTY = {"SELECT COUNT(*) FROM items WHERE amount > 100"}


@pytest.fixture(scope="module")
def expected() -> dict[str, object]:
    return {q: duckdb_table({"items": (COLUMNS, ROWS)}, d or q) for q, d in QUERIES}


def _t_env(streaming: bool) -> TableEnvironment:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    )
    t_env.get_config().set("parallelism.default", "2")
    schema = DataTypes.ROW([
        DataTypes.FIELD("name", DataTypes.STRING()),
        DataTypes.FIELD("category", DataTypes.STRING()),
        DataTypes.FIELD("amount", DataTypes.INT()),
        DataTypes.FIELD("price", DataTypes.DOUBLE()),
        DataTypes.FIELD("flag", DataTypes.BOOLEAN()),
    ])
    t_env.create_temporary_view("items", t_env.from_elements(ROWS, schema))
    return t_env


@pytest.mark.parametrize("query", [q for q, _ in QUERIES])
def test_streaming_changelog_reduces_to_duckdb(query: str, expected: dict[str, object]) -> None:
    with _t_env(True).execute_sql(query).collect() as rows:
        got = reduce_changelog(list(rows))
    if query in STREAMING_EMPTY:
        assert got == {}  # Flink streaming: a global aggregate emits nothing before its first row
        assert expected[query]  # ... where a batch engine returns one row
    else:
        assert got == expected[query]


@pytest.mark.parametrize("query", [q for q, _ in QUERIES if "GROUP BY" in q or "COUNT" in q])
def test_batch_result_is_insert_only_and_equals_duckdb(query: str, expected: dict[str, object]) -> None:
    with _t_env(False).execute_sql(query).collect() as rows:
        rows = list(rows)
    assert {r.get_row_kind() for r in rows} <= {RowKind.INSERT}
    assert reduce_changelog(rows) == expected[query]


def test_integer_avg_and_division_truncate_as_flink() -> None:
    """Flink: AVG of an INT column is an INT, and INT / INT truncates toward zero (plain-Python reference)."""
    with _t_env(True).execute_sql(
        "SELECT category, AVG(amount), SUM(amount) / 2 FROM items WHERE category = 'veg' GROUP BY category"
    ).collect() as rows:
        table = reduce_changelog(list(rows))
    amounts = [2, -4, 7]
    assert table == {("veg", int(sum(amounts) / len(amounts)), int(sum(amounts) / 2)): 1}
