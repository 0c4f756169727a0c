"""The exact changelog of Flink's documented GROUP BY example, retraction input, and BATCH's final rows."""

from __future__ import annotations

from strom.common.row import RowKind
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.expressions import col

from .reference import reduce_changelog

CLICKS = [
    ("Mary", "./home"),
    ("Bob", "./cart"),
    ("Mary", "./prod?id=1"),
    ("Liz", "./home"),
    ("Bob", "./prod?id=3"),
    ("Mary", "./prod?id=7"),
]
I, UB, UA, D = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE


def _t_env(streaming: bool = True, parallelism: int = 1) -> TableEnvironment:
    settings = EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    t_env = TableEnvironment.create(settings)
    t_env.get_config().set("parallelism.default", str(parallelism))
    return t_env


def _changelog(result) -> list[tuple[RowKind, tuple]]:
    with result.collect() as rows:
        return [(r.get_row_kind(), tuple(r)) for r in rows]


def test_flink_dynamic_tables_group_by_example() -> None:
    """Flink's docs, "Dynamic Tables" (Concepts > Streaming > Dynamic Tables), query
    `SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user` over the clicks table, as the page describes it:
    "When the first row [Mary, ./home] is inserted into the clicks table, the continuous query starts to
    compute and insert a row [Mary, 1] into the result table. When the second row [Bob, ./cart] is inserted,
    the query ... inserts a new row [Bob, 1] ... The third row [Mary, ./prod?id=1] yields an update of an
    already computed result row such that [Mary, 1] is updated to [Mary, 2]. Finally, the query inserts a
    third row [Liz, 1] into the result table, when the fourth row is appended to the clicks table."
    In the page's retract-stream encoding an update is a retraction of the old row and an insertion of the
    new one; in Flink's RowKinds: -U[Mary, 1], +U[Mary, 2]. Rows five and six continue the same way.
    """
    t_env = _t_env()
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
    got = _changelog(t_env.execute_sql("SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user"))
    assert got == [
        (I, ("Mary", 1)),
        (I, ("Bob", 1)),
        (UB, ("Mary", 1)),
        (UA, ("Mary", 2)),
        (I, ("Liz", 1)),
        (UB, ("Bob", 1)),
        (UA, ("Bob", 2)),
        (UB, ("Mary", 2)),
        (UA, ("Mary", 3)),
    ]


def test_changelog_per_key_order_holds_at_parallelism_two() -> None:
    t_env = _t_env(parallelism=2)
    clicks = t_env.from_elements(CLICKS, ["user", "url"])
    got = _changelog(clicks.group_by(col("user")).select(col("user"), col("url").count.alias("cnt")).execute())
    mary = [(k, v) for k, v in got if v[0] == "Mary"]
    assert mary == [(I, ("Mary", 1)), (UB, ("Mary", 1)), (UA, ("Mary", 2)), (UB, ("Mary", 2)), (UA, ("Mary", 3))]
    assert reduce_changelog([_row(k, v) for k, v in got]) == {("Mary", 3): 1, ("Bob", 2): 1, ("Liz", 1): 1}


def _row(kind: RowKind, values: tuple):
    from strom.common.row import Row

    r = Row(*values)
    r.set_row_kind(kind)
    return r


def test_unchanged_result_emits_nothing_and_retraction_input_deletes() -> None:
    """An aggregate over an updating input retracts: COUNT per count value over the per-user counts.
    When Bob goes from 1 to 2 clicks, the group cnt=1 loses Bob (-U/+U), cnt=2 gains him; when the last
    row of a group is retracted, the group is deleted (-D), as Flink's GroupAggFunction does. MAX(url) per
    user does not change for Mary's third click (./prod?id=7 > ./prod?id=1 changes it; ./home first)."""
    t_env = _t_env()
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
    got = _changelog(t_env.execute_sql(
        "SELECT cnt, COUNT(*) AS users FROM (SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user) GROUP BY cnt"
    ))
    assert got == [
        (I, (1, 1)),  # Mary 1
        (UB, (1, 1)), (UA, (1, 2)),  # Bob 1
        (UB, (1, 2)), (UA, (1, 1)),  # Mary 1 -> 2: retract from cnt=1 ...
        (I, (2, 1)),  # ... into cnt=2
        (UB, (1, 1)), (UA, (1, 2)),  # Liz 1
        (UB, (1, 2)), (UA, (1, 1)),  # Bob 1 -> 2
        (UB, (2, 1)), (UA, (2, 2)),
        (UB, (2, 2)), (UA, (2, 1)),  # Mary 2 -> 3
        (I, (3, 1)),
    ]
    t_env2 = _t_env()
    t_env2.create_temporary_view("clicks", t_env2.from_elements(
        [("Mary", "b"), ("Mary", "a"), ("Mary", "c")], ["user", "url"]))
    got = _changelog(t_env2.execute_sql("SELECT user, MAX(url) FROM clicks GROUP BY user"))
    assert got == [(I, ("Mary", "b")), (UB, ("Mary", "b")), (UA, ("Mary", "c"))]  # 'a' changes nothing


def test_retraction_to_zero_deletes_the_group() -> None:
    t_env = _t_env()
    rows = [("a", 1), ("a", 2), ("b", 3)]
    t_env.create_temporary_view("t", t_env.from_elements(rows, ["k", "v"]))
    # per k its SUM, then per SUM value how many keys
    got = _changelog(t_env.execute_sql(
        "SELECT s, COUNT(k) FROM (SELECT k, SUM(v) AS s FROM t GROUP BY k) GROUP BY s"
    ))
    # a: +I(a,1) -> s=1 group +I(1,1); a: -U(a,1) -> group s=1 emptied -> -D(1,1); +U(a,3) -> +I(3,1);
    # b: +I(b,3) -> -U(3,1) +U(3,2)
    assert got == [(I, (1, 1)), (D, (1, 1)), (I, (3, 1)), (UB, (3, 1)), (UA, (3, 2))]


def test_batch_mode_emits_final_rows_only() -> None:
    t_env = _t_env(streaming=False, parallelism=2)
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
    got = _changelog(t_env.execute_sql("SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user"))
    assert sorted(got) == sorted([(I, ("Mary", 3)), (I, ("Bob", 2)), (I, ("Liz", 1))])
