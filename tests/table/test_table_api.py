"""The Table API (PyFlink's names), TableResult.print in Flink's tableau format, DataStream conversions,
the datagen/print/blackhole connectors through INSERT INTO, and plan-derived operator uids."""

from __future__ import annotations

from collections import Counter

from strom.common.row import Row, RowKind
from strom.datastream import StreamExecutionEnvironment
from strom.table import DataTypes, EnvironmentSettings, Schema, StreamTableEnvironment, TableEnvironment
from strom.table.expressions import col, lit

from .reference import reduce_changelog

CLICKS = [("Mary", "./home"), ("Bob", "./cart"), ("Mary", "./prod?id=1"), ("Liz", "./home")]


def _t_env(streaming: bool = True) -> TableEnvironment:
    t_env = TableEnvironment.create(
        EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    )
    t_env.get_config().set("parallelism.default", "1")
    return t_env


def test_select_where_group_by_alias() -> None:
    t_env = _t_env()
    orders = t_env.from_elements(
        [(1, "a", 10.0), (2, "b", 5.5), (3, "a", 2.5), (4, "c", None)],
        DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("k", DataTypes.STRING()),
                       DataTypes.FIELD("price", DataTypes.DOUBLE())]),
    )
    projected = orders.where(col("price") > 3).select(col("k"), (col("price") * 2).alias("p2"), col("id") + lit(1))
    assert projected.get_schema().get_field_names() == ["k", "p2", "_c2"]  # Flink names unnamed Table API items _ci
    with projected.execute().collect() as rows:
        got = list(rows)
    assert got == [Row("a", 20.0, 2), Row("b", 11.0, 3)]  # Row equality includes the kind (+I)
    assert [r.as_dict() for r in got][0] == {"k": "a", "p2": 20.0, "_c2": 2}

    totals = orders.group_by(col("k")).select(col("k"), col("price").sum.alias("total"), col("id").count.alias("n"))
    with totals.execute().collect() as rows:
        assert reduce_changelog(list(rows)) == Counter({("a", 12.5, 2): 1, ("b", 5.5, 1): 1, ("c", None, 1): 1})
    renamed = orders.select(col("id"), col("k")).alias("order_id", "key")
    assert renamed.get_schema().get_field_names() == ["order_id", "key"]
    keys = orders.select(col("k")).union_all(orders.select(col("k"))).distinct()
    with keys.execute().collect() as rows:
        assert reduce_changelog(list(rows)) == Counter({("a",): 1, ("b",): 1, ("c",): 1})
    distinct_keys = orders.group_by(col("k")).select(col("k"), col("id").count.distinct.alias("d"))
    assert [str(t) for t in distinct_keys.get_schema().get_field_data_types()] == ["STRING", "BIGINT NOT NULL"]


def test_streaming_print_is_flinks_tableau(capsys) -> None:
    t_env = _t_env()
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
    t_env.execute_sql("SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user").print()
    # Flink 1.20's tableau for a streaming query: an op column, STRING sized 30 and BIGINT 20, right-aligned
    assert capsys.readouterr().out == (
        "+----+--------------------------------+----------------------+\n"
        "| op |                           user |                  cnt |\n"
        "+----+--------------------------------+----------------------+\n"
        "| +I |                           Mary |                    1 |\n"
        "| +I |                            Bob |                    1 |\n"
        "| -U |                           Mary |                    1 |\n"
        "| +U |                           Mary |                    2 |\n"
        "| +I |                            Liz |                    1 |\n"
        "+----+--------------------------------+----------------------+\n"
        "Received a total of 5 rows\n"
    )


def test_batch_print_and_show_describe(capsys) -> None:
    t_env = _t_env(streaming=False)
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
    t_env.execute_sql("SELECT user, COUNT(url) AS cnt, MAX(url) = './home' AS h FROM clicks WHERE user <> 'Bob' "
                      "GROUP BY user").print()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "+------+-----+-------+"
    assert out[1] == "| user | cnt |     h |"
    assert sorted(out[3:5]) == ["|  Liz |   1 |  TRUE |", "| Mary |   2 | FALSE |"]
    assert out[-1] == "2 rows in set"
    t_env.execute_sql("CREATE TABLE sink1 (user STRING NOT NULL, ts TIMESTAMP(3)) WITH ('connector'='blackhole')")
    t_env.execute_sql("SHOW TABLES").print()
    t_env.execute_sql("DESCRIBE sink1").print()
    assert capsys.readouterr().out == (
        "+------------+\n| table name |\n+------------+\n|     clicks |\n|      sink1 |\n+------------+\n"
        "2 rows in set\n"
        "+------+--------------+-------+-----+--------+-----------+\n"
        "| name |         type |  null | key | extras | watermark |\n"
        "+------+--------------+-------+-----+--------+-----------+\n"
        "| user |       STRING | FALSE |     |        |           |\n"
        "|   ts | TIMESTAMP(3) |  TRUE |     |        |           |\n"
        "+------+--------------+-------+-----+--------+-----------+\n"
        "2 rows in set\n"
    )


def test_to_changelog_stream_and_to_data_stream() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)
    clicks = t_env.from_elements(CLICKS, ["user", "url"])
    t_env.create_temporary_view("clicks", clicks)
    counts = t_env.sql_query("SELECT user, COUNT(*) AS c FROM clicks GROUP BY user")
    changelog = t_env.to_changelog_stream(counts)
    kinds = [(r.get_row_kind(), tuple(r)) for r in changelog.execute_and_collect()]
    assert kinds == [
        (RowKind.INSERT, ("Mary", 1)),
        (RowKind.INSERT, ("Bob", 1)),
        (RowKind.UPDATE_BEFORE, ("Mary", 1)),
        (RowKind.UPDATE_AFTER, ("Mary", 2)),
        (RowKind.INSERT, ("Liz", 1)),
    ]
    upper = t_env.to_data_stream(clicks.select(col("user").upper_case.alias("u")))
    assert [r.u for r in upper.map(lambda r: r).execute_and_collect()] == ["MARY", "BOB", "MARY", "LIZ"]


def test_datagen_insert_into_print_and_blackhole(capfd) -> None:
    t_env = _t_env()
    t_env.execute_sql(
        "CREATE TABLE gen (id BIGINT, grp INT, name STRING, score DOUBLE) WITH ('connector'='datagen', "
        "'fields.id.kind'='sequence', 'fields.id.start'='1', 'fields.id.end'='20', "
        "'fields.grp.min'='0', 'fields.grp.max'='2', 'fields.name.length'='5', 'fields.score.min'='1', "
        "'fields.score.max'='2')"
    )
    with t_env.execute_sql("SELECT id, grp, name, score FROM gen").collect() as rows:
        rows = list(rows)
    assert sorted(r[0] for r in rows) == list(range(1, 21))
    assert all(0 <= r[1] <= 2 and len(r[2]) == 5 and 1 <= r[3] <= 2 for r in rows)
    t_env.execute_sql("CREATE TABLE out (grp INT, n BIGINT) WITH ('connector'='print', 'print-identifier'='cnt')")
    t_env.execute_sql("INSERT INTO out SELECT grp, COUNT(*) FROM gen WHERE id <= 3 GROUP BY grp").wait()
    printed = [line for line in capfd.readouterr().out.splitlines() if line.startswith("cnt> ")]
    expected: Counter = Counter(r[1] for r in rows if r[0] <= 3)
    # reduce the printed changelog: +I[g, n] / -U[g, n] / +U[g, n]
    table: Counter = Counter()
    for line in printed:
        kind, body = line[len("cnt> "):][:2], line[len("cnt> ") + 3:-1]
        g, n = (int(x) for x in body.split(", "))
        table[(g, n)] += 1 if kind in ("+I", "+U") else -1
    assert +table == Counter({(g, n): 1 for g, n in expected.items()})
    t_env.execute_sql("CREATE TABLE hole (id BIGINT) WITH ('connector'='blackhole')")
    result = t_env.execute_sql("INSERT INTO hole SELECT id FROM gen")
    result.wait()
    assert result.get_job_client() is not None


def test_operator_uids_derive_from_the_plan() -> None:
    from strom.table.planner.translate import translate

    def uids(sql: str) -> list[str]:
        t_env = _t_env()
        t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
        env = StreamExecutionEnvironment.get_execution_environment()
        translate(t_env.sql_query(sql)._node, env)
        return [t.uid for t in env._transformations if t.operator is not None]  # key_by adds a partitioning

    query = "SELECT user, COUNT(url) FROM clicks WHERE url <> '' GROUP BY user"
    first = uids(query)
    assert first == uids(query) and len(set(first)) == len(first) and all(first)
    assert any(u.startswith("group-aggregate_") for u in first)
    assert uids(query.replace("COUNT", "MAX")) != first


def test_schema_builder_and_from_elements_with_schema() -> None:
    schema = Schema.new_builder().column("a", DataTypes.INT()).column("b", DataTypes.STRING()).build()
    t_env = _t_env()
    table = t_env.from_elements([(1, "x"), (2, None)], schema)
    assert [str(t) for t in table.get_schema().get_field_data_types()] == ["INT", "STRING"]
    with table.select(col("b").is_null.alias("missing")).execute().collect() as rows:
        assert [r[0] for r in rows] == [False, True]


def test_explain_prints_the_plan_tree() -> None:
    t_env = _t_env()
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["user", "url"]))
    [row] = list(t_env.execute_sql("EXPLAIN SELECT user, COUNT(url) FROM clicks GROUP BY user").collect())
    lines = row[0].splitlines()
    assert lines[0] == "== Optimized Physical Plan =="
    assert lines[2] == "+- GroupAggregate(groupBy=[user], select=[user, COUNT(url) AS $a0])"
    assert lines[-1].lstrip().startswith("+- Values(table=[Unregistered_Collection_Source_1]")
