"""Pandas (vectorized) scalar UDFs (issue 19): `udf(..., func_type='pandas')` receives one pandas.Series per
argument and returns a Series as long; results are compared with the same arithmetic applied per row in
plain Python. The bundling (python.fn-execution.*) is checked on the operator itself: a bundle is
flushed at its size and before a watermark or a checkpoint barrier goes on, never held across them."""

from __future__ import annotations

import pandas as pd
import pytest
from strom.common.row import Row
from strom.graph.transformations import OperatorDescriptor
from strom.runtime.operators.base import Output
from strom.runtime.operators.bundled_map import BundledMapOperator
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment
from strom.table.expressions import col
from strom.table.udf import udf

ROWS = [(1, 2.5, "a"), (3, None, "bb"), (None, 4.0, None), (7, 0.5, "dddd"), (2, 1.0, "")]
SERIES_LENGTHS: list[int] = []  # module global: shared by the task's copy of the function


@udf(result_type=DataTypes.DOUBLE(), func_type="pandas")
def weighted(a: pd.Series, w: pd.Series) -> pd.Series:
    assert isinstance(a, pd.Series) and isinstance(w, pd.Series)
    SERIES_LENGTHS.append(len(a))
    return a * w + 1


@udf(result_type=DataTypes.BIGINT(), func_type="pandas")
def length(s: pd.Series) -> pd.Series:
    return s.str.len()


def weighted_per_row(a, w):  # the reference: SQL NULL in, NULL out
    return None if a is None or w is None else a * w + 1


def _env(streaming: bool = True) -> TableEnvironment:
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                  else EnvironmentSettings.in_batch_mode())
    t = env.from_elements(ROWS, DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT()),
                                               DataTypes.FIELD("w", DataTypes.DOUBLE()),
                                               DataTypes.FIELD("s", DataTypes.STRING())]))
    env.create_temporary_view("T", t)
    env.create_temporary_function("weighted", weighted)
    env.create_temporary_function("length", length)
    return env


@pytest.mark.parametrize("streaming", [True, False])
def test_pandas_udfs_in_select_and_where_match_the_function_per_row(streaming):
    env = _env(streaming)
    got = sorted((tuple(r) for r in env.sql_query(
        "SELECT a, weighted(a, w) AS x, length(s) + 1 AS n FROM T WHERE weighted(a, 1.0) > 2").execute().collect()),
        key=repr)
    expected = sorted(((a, weighted_per_row(a, w), None if s is None else len(s) + 1) for a, w, s in ROWS
                       if (v := weighted_per_row(a, 1.0)) is not None and v > 2), key=repr)
    assert got == expected


def test_a_pandas_udf_nested_in_another_in_the_table_api():
    env = _env()
    t = env.from_path("T")
    got = sorted((tuple(r) for r in t.select(col("s"), weighted(length(col("s")), col("w")).alias("x"))
                  .execute().collect()), key=repr)
    expected = sorted(((s, weighted_per_row(None if s is None else len(s), w)) for _, w, s in ROWS), key=repr)
    assert got == expected


def test_arrow_batch_size_bounds_the_series_a_function_receives():
    env = _env(streaming=False)
    env.get_config().set("python.fn-execution.arrow.batch.size", "2")
    SERIES_LENGTHS.clear()
    rows = list(env.sql_query("SELECT weighted(a, w) FROM T").execute().collect())
    assert len(rows) == len(ROWS)
    assert sum(SERIES_LENGTHS) == len(ROWS) and max(SERIES_LENGTHS) <= 2 and len(SERIES_LENGTHS) >= 3


def test_a_pandas_udf_returning_the_wrong_length_fails_naming_it():
    env = _env()
    env.create_temporary_function("short", udf(lambda s: s.head(1), result_type=DataTypes.BIGINT(),
                                               func_type="pandas", name="short"))
    with pytest.raises(Exception, match=r"pandas UDF 'short' returned 1 values for [2-9] rows"):
        list(env.sql_query("SELECT short(a) FROM T").execute().collect())


def test_invalid_bundle_options_are_refused_naming_the_key():
    env = _env()
    with pytest.raises(Exception, match="python.fn-execution.arrow.batch.size"):
        env.get_config().set("python.fn-execution.arrow.batch.size", "0")
    with pytest.raises(Exception, match="python.fn-execution.bundle.size"):
        env.get_config().set("python.fn-execution.bundle.size", "many")


class _Recording(Output):
    def __init__(self) -> None:
        self.events: list = []

    def collect(self, values, timestamps):
        self.events.append(("rows", list(values), timestamps))

    def emit_watermark(self, timestamp):
        self.events.append(("watermark", timestamp))


class _Double:
    def __init__(self) -> None:
        self.bundles: list[int] = []

    def map_bundle(self, values):
        self.bundles.append(len(values))
        return [None if v < 0 else v * 2 for v in values]


def _operator(size: int) -> tuple[BundledMapOperator, _Recording, _Double]:
    fn = _Double()
    op = BundledMapOperator(OperatorDescriptor("bundled_map", fn, {"bundle_size": size, "bundle_time_ms": 0}))
    out = _Recording()
    op.output = out
    op.open()
    return op, out, fn


def test_a_bundle_is_flushed_at_its_size_and_before_a_watermark_is_forwarded():
    op, out, fn = _operator(size=3)
    op.process_batch([1, 2], [10, 20], None)
    assert out.events == []  # held: the bundle is not full
    op.process_batch([3, -1], [30, 40], None)  # full: the four rows go as one bundle; -1 is dropped with its time
    assert out.events == [("rows", [2, 4, 6], [10, 20, 30])]
    op.process_batch([5], [50], None)
    op.process_watermark(45)
    assert out.events[1:] == [("rows", [10], [50]), ("watermark", 45)]
    assert fn.bundles == [4, 1]


def test_a_bundle_is_flushed_before_a_checkpoint_barrier_and_at_end_of_input():
    op, out, _ = _operator(size=100)
    op.process_batch([Row(1)[0]], None, None)
    op.prepare_snapshot_pre_barrier(1)
    assert out.events == [("rows", [2], None)]
    op.process_batch([4], None, None)
    op.end_input()
    assert out.events[-1] == ("rows", [8], None)
    op.finish()
    assert len(out.events) == 2  # nothing left to emit twice
