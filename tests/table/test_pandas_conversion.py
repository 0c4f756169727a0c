"""from_pandas / to_pandas (issue 19): DataFrames become tables typed through Arrow as PyFlink types them,
and tables (an updating one reduced to its final rows) come back as DataFrames. References: DuckDB running
the same SQL over the same DataFrame, and pandas computing the same aggregation itself."""

from __future__ import annotations

import datetime
import math

import duckdb
import pandas as pd
import pytest
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment, ValidationException

from .reference import normalize


def _env(streaming: bool = True) -> TableEnvironment:
    settings = EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    return TableEnvironment.create(settings)


PDF = pd.DataFrame({
    "k": ["a", "b", "a", "c", "b", "a"],
    "v": [1, 2, 3, 4, 5, 6],
    "x": [0.5, float("nan"), 1.5, 2.5, None, 3.0],
    "ok": [True, False, True, True, False, False],
})


def _sorted_records(pdf: pd.DataFrame) -> list[tuple]:
    records = [normalize(tuple(None if isinstance(v, float) and math.isnan(v) else v for v in r))
               for r in pdf.itertuples(index=False)]
    return sorted(records, key=repr)


def test_from_pandas_types_columns_as_pyflink_does_through_arrow():
    t = _env().from_pandas(PDF)
    schema = t.get_schema()
    assert schema.get_field_names() == ["k", "v", "x", "ok"]
    assert [str(x) for x in schema.get_field_data_types()] == ["STRING", "BIGINT", "DOUBLE", "BOOLEAN"]


def test_from_pandas_names_and_types_given_as_lists():
    env = _env()
    named = env.from_pandas(PDF[["k", "v"]], ["key", "value"])
    assert named.get_schema().get_field_names() == ["key", "value"]
    typed = env.from_pandas(PDF[["k", "v"]], [DataTypes.STRING(), DataTypes.INT()])
    assert [str(x) for x in typed.get_schema().get_field_data_types()] == ["STRING", "INT"]
    rows = sorted(tuple(r) for r in typed.execute().collect())
    assert rows == sorted(zip(PDF.k, PDF.v.astype(int), strict=True))


def test_group_by_over_a_dataframe_matches_duckdb_and_nan_is_null():
    """NaN and None in a float column are NULL, as Arrow's from_pandas (and PyFlink) reads them: COUNT(x)
    skips them. DuckDB reads the same DataFrame (its pandas scan also takes NaN for NULL)."""
    env = _env()
    env.create_temporary_view("T", env.from_pandas(PDF))
    sql = "SELECT k, COUNT(x) AS n, SUM(v) AS sv, MAX(x) AS mx FROM T GROUP BY k"
    got = env.sql_query(sql).to_pandas()
    expected = duckdb.query_df(PDF, "T", sql).df()
    assert _sorted_records(got) == _sorted_records(expected)
    # and pandas itself: count of non-NaN per key
    assert dict(zip(got.k, got.n, strict=True)) == PDF.groupby("k")["x"].count().to_dict()


def test_to_pandas_of_a_streaming_updating_table_is_its_final_table():
    env = _env(streaming=True)
    t = env.from_pandas(PDF)
    env.create_temporary_view("T", t)
    got = env.sql_query("SELECT k, SUM(v) AS s FROM T GROUP BY k").to_pandas()
    expected = PDF.groupby("k", as_index=False)["v"].sum().rename(columns={"v": "s"})
    assert _sorted_records(got) == _sorted_records(expected)


def test_to_pandas_in_batch_mode_round_trips_the_dataframe():
    env = _env(streaming=False)
    got = env.from_pandas(PDF).to_pandas()
    assert list(got.columns) == list(PDF.columns)
    assert _sorted_records(got) == _sorted_records(PDF)


def test_to_pandas_types_columns_through_arrow():
    """An INT column with a NULL comes back float64 (Arrow's to_pandas, as PyFlink's); DATE as date objects;
    TIMESTAMP as datetime64."""
    env = _env()
    schema = DataTypes.ROW([DataTypes.FIELD("i", DataTypes.INT()), DataTypes.FIELD("d", DataTypes.DATE()),
                            DataTypes.FIELD("ts", DataTypes.TIMESTAMP(3))])
    rows = [(1, datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5)), (None, None, None)]
    got = env.from_elements(rows, schema).to_pandas()
    assert str(got.i.dtype) == "float64" and got.i.iloc[0] == 1.0 and math.isnan(got.i.iloc[1])
    assert got.d.iloc[0] == datetime.date(2024, 1, 2) and got.d.iloc[1] is None
    assert str(got.ts.dtype).startswith("datetime64") and got.ts.iloc[0] == pd.Timestamp("2024-01-02 03:04:05")


def test_to_pandas_of_an_empty_table_has_the_columns():
    env = _env()
    env.create_temporary_view("T", env.from_pandas(PDF))
    got = env.sql_query("SELECT k, v FROM T WHERE v > 100").to_pandas()
    assert list(got.columns) == ["k", "v"] and len(got) == 0


def test_from_pandas_with_splits_keeps_every_row():
    env = _env()
    big = pd.DataFrame({"n": range(101)})
    got = env.from_pandas(big, splits_num=4).to_pandas()
    assert sorted(got.n) == list(range(101))


def test_from_pandas_refuses_what_it_cannot_type():
    env = _env()
    with pytest.raises(TypeError, match="pandas.DataFrame"):
        env.from_pandas([(1, 2)])
    with pytest.raises(ValidationException, match="splits_num"):
        env.from_pandas(PDF, splits_num=0)
    with pytest.raises(ValidationException, match="2 columns, the DataFrame 4"):
        env.from_pandas(PDF, DataTypes.ROW([DataTypes.FIELD("a", DataTypes.STRING()),
                                            DataTypes.FIELD("b", DataTypes.INT())]))
    with pytest.raises(ValidationException, match="'nothing' holds only None"):
        env.from_pandas(pd.DataFrame({"nothing": [None, None]}))
    with pytest.raises(ValidationException, match="column 'k' cannot be read as INT"):
        env.from_pandas(PDF[["k"]], [DataTypes.INT()])
    with pytest.raises(ValidationException, match="column 'x' is DOUBLE NOT NULL but holds 2 NULL"):
        env.from_pandas(PDF[["x"]], DataTypes.ROW([DataTypes.FIELD("x", DataTypes.DOUBLE(nullable=False))]))
