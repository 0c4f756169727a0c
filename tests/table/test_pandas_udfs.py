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
from strom.table import DataTypes, EnvironmentSettings, TableEnvironment, TableException, ValidationException
from strom.table.expressions import col
from strom.table.udf import udaf, udf

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
        # 1.0E0: a DOUBLE (1.0 is DECIMAL(2, 1) in Flink, which reaches a pandas UDF as decimal.Decimal objects)
        "SELECT a, weighted(a, w) AS x, length(s) + 1 AS n FROM T WHERE weighted(a, 1.0E0) > 2").execute().collect()),
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


def test_a_bundle_is_flushed_once_bundle_time_has_passed():
    from types import SimpleNamespace

    from strom.runtime.tasks.processing_time import ProcessingTimeService

    now = [1_000]
    service = ProcessingTimeService(clock=lambda: now[0])
    fn = _Double()
    op = BundledMapOperator(OperatorDescriptor("bundled_map", fn, {"bundle_size": 100, "bundle_time_ms": 50}))
    out = _Recording()
    op.output = out
    op.ctx = SimpleNamespace(processing_time_service=service, operator_name="Calc[pandas]")
    op.open()
    op.process_batch([1], None, None)
    op.process_batch([2], None, None)
    now[0] = 1_049
    service.run_due()
    assert out.events == []  # 49 ms: still within bundle.time
    now[0] = 1_050
    service.run_due()
    assert out.events == [("rows", [2, 4], None)] and fn.bundles == [2]


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


# -- pandas aggregate functions ----------------------------------------------------------------------
GROUPS = [("a", 1), ("a", 3), ("b", None), ("b", 4), ("a", 8), ("c", None)]


def _mean_per_group(rows):
    """Plain Python: the mean of each key's non-NULL values (NaN skipped as pandas' mean does); None if none."""
    out = {}
    for k, _ in rows:
        vs = [v for kk, v in rows if kk == k and v is not None]
        out[k] = sum(vs) / len(vs) if vs else None
    return sorted(out.items(), key=repr)


def test_a_pandas_udaf_in_a_batch_group_by_is_the_function_over_each_groups_series():
    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    env.create_temporary_function("pmean", udaf(lambda v: v.mean(), result_type=DataTypes.DOUBLE(),
                                                func_type="pandas"))
    env.create_temporary_view("G", env.from_elements(GROUPS, ["k", "v"]))
    got = sorted((tuple(r) for r in env.sql_query("SELECT k, pmean(v) FROM G GROUP BY k").execute().collect()),
                 key=repr)
    assert got == _mean_per_group(GROUPS)


def test_a_pandas_udaf_in_a_streaming_group_by_is_refused_as_flink_does():
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.create_temporary_function("pmean", udaf(lambda v: v.mean(), result_type=DataTypes.DOUBLE(),
                                                func_type="pandas"))
    env.create_temporary_view("G", env.from_elements(GROUPS, ["k", "v"]))
    with pytest.raises(TableException, match="Pandas UDAFs are not supported in streaming mode currently"):
        env.sql_query("SELECT k, pmean(v) FROM G GROUP BY k")
    with pytest.raises(ValidationException, match="callable over pandas.Series with a result_type"):
        udaf(lambda v: v.mean(), func_type="pandas")


def test_a_pandas_udaf_in_a_streaming_window_aggregation_matches_duckdb():
    from .test_windows_vs_duckdb import _ON_TIME, _TUMBLE, _duckdb, _final_rows, _t_env

    t_env = _t_env()
    t_env.create_temporary_function("psum", udaf(lambda v: v.sum(), result_type=DataTypes.INT(),
                                                 func_type="pandas"))
    got = _final_rows(t_env.execute_sql(
        "SELECT item, window_start, window_end, psum(price) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), "
        "INTERVAL '10' SECOND)) GROUP BY item, window_start, window_end"))
    assert got == _duckdb(f"SELECT item, ws, we, SUM(price) FROM bids, {_TUMBLE} WHERE {_ON_TIME} "
                          "GROUP BY item, ws, we")
