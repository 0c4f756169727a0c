"""Table.add_columns / add_or_replace_columns / rename_columns / drop_columns: schemas and rows against plain
Python over the same input (Flink's rules: added columns last, replaced ones in place), and the errors."""

from __future__ import annotations

import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException
from strom.table.expressions import col, concat, lit

ROWS = [(1, "a", 10.0), (2, "b", 5.5), (3, "a", 2.5)]


def _orders():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    return t_env.from_elements(
        ROWS,
        DataTypes.ROW([DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("k", DataTypes.STRING()),
                       DataTypes.FIELD("price", DataTypes.DOUBLE())]),
    )


def _rows(table) -> list[tuple]:
    with table.execute().collect() as rows:
        return sorted(tuple(r) for r in rows)


def test_add_columns_appends_in_order() -> None:
    t = _orders().add_columns((col("price") * 2).alias("p2"), concat(col("k"), lit("!")))
    assert t.get_schema().get_field_names() == ["id", "k", "price", "p2", "_c4"]
    assert _rows(t) == sorted((i, k, p, p * 2, k + "!") for i, k, p in ROWS)


def test_add_or_replace_columns_replaces_in_place_and_appends_new() -> None:
    t = _orders().add_or_replace_columns((col("id") + 100).alias("id"), lit(1).alias("one"),
                                         (col("price") + 1).alias("price"))
    assert t.get_schema().get_field_names() == ["id", "k", "price", "one"]
    assert [str(x) for x in t.get_schema().get_field_data_types()][3] == "INT NOT NULL"
    assert _rows(t) == sorted((i + 100, k, p + 1, 1) for i, k, p in ROWS)


def test_rename_and_drop_columns() -> None:
    t = _orders().rename_columns(col("k").alias("key"), col("id").alias("order_id"))
    assert t.get_schema().get_field_names() == ["order_id", "key", "price"]
    dropped = t.drop_columns(col("price"), col("order_id"))
    assert dropped.get_schema().get_field_names() == ["key"]
    assert _rows(dropped) == sorted((k,) for _, k, _ in ROWS)
    # swapping two names is one rename, as in Flink
    swapped = _orders().rename_columns(col("id").alias("k"), col("k").alias("id"))
    assert swapped.get_schema().get_field_names() == ["k", "id", "price"]
    assert _rows(swapped.select(col("id"))) == sorted((k,) for _, k, _ in ROWS)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (lambda t: t.add_columns(lit(1).alias("k")), "add_columns: column 'k' already exists"),
        (lambda t: t.add_columns(col("nope") + 1), "nope"),
        (lambda t: t.add_columns(col("price").sum.alias("s")), "add_columns: aggregate"),
        (lambda t: t.add_columns(), "add_columns: give at least one"),
        (lambda t: t.rename_columns(col("nope").alias("x")), "rename_columns: unknown column 'nope'"),
        (lambda t: t.rename_columns(col("id")), "rename_columns: id is not of the form"),
        (lambda t: t.rename_columns(col("id").alias("k")), "rename_columns: the result would have column 'k' twice"),
        (lambda t: t.rename_columns(col("id").alias("a"), col("id").alias("b")), "renamed twice"),
        (lambda t: t.drop_columns(col("nope")), "drop_columns: unknown column 'nope'; the table has id, k, price"),
        (lambda t: t.drop_columns(col("id") + 1), "drop_columns: (id + 1) is not a column reference"),
        (lambda t: t.drop_columns(col("id"), col("k"), col("price")), "cannot drop every column"),
    ],
)
def test_bad_column_operations_are_refused_with_one_line(op, message: str) -> None:
    with pytest.raises(ValidationException) as info:
        op(_orders())
    assert message in str(info.value) and "\n" not in str(info.value)


def test_string_expressions_are_refused_clearly() -> None:
    with pytest.raises(Exception, match="string expressions in Table.drop_columns"):
        _orders().drop_columns("id")
