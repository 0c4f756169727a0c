"""What Rows cost per record, against tuples in the same run (issue 18: Row became a mutable class).

Two parts, each printed as a ratio Row / tuple measured in one run (absolute figures vary with the load):
  ops       creating N records (positional, and named through Types.ROW_NAMED's conversion), reading a
            field by index, and pickling batches of 512 (what a remote channel sends)
  pipeline  N events through map (builds the record) -> key_by(field 0) -> reduce (sum of field 1) -> sink
            at parallelism 1, once with Rows (Types.ROW_NAMED) and once with tuples (Types.TUPLE)

    python -m benchmarks.row_records [--events 300000] [--repeat 3] [--parts ops,pipeline]

BENCH_CPU=1 measures CPU seconds of the process instead of wall-clock time, as benchmarks.micro does.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable
from typing import Any

from strom.common.row import Row
from strom.common.typeinfo import Types
from strom.datastream import StreamExecutionEnvironment

from benchmarks.micro import _CLOCK, CountingSink, EventSource

ROW_TYPE = Types.ROW_NAMED(["k", "v"], [Types.INT(), Types.LONG()])
TUPLE_TYPE = Types.TUPLE([Types.INT(), Types.LONG()])


def _best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = _CLOCK()
        fn()
        times.append(_CLOCK() - start)
    return min(times)


def ops(n: int, repeat: int) -> list[tuple[str, float, float]]:
    """(what, row seconds, tuple seconds) for each per-record operation."""
    rows = [Row(i % 1000, i) for i in range(n)]
    tuples = [(i % 1000, i) for i in range(n)]
    row_batches = [rows[i:i + 512] for i in range(0, n, 512)]
    tuple_batches = [tuples[i:i + 512] for i in range(0, n, 512)]
    row_convert, tuple_convert = ROW_TYPE.convert, TUPLE_TYPE.convert
    return [
        ("create", _best(lambda: [Row(i, i) for i in range(n)], repeat),
         _best(lambda: [(i, i) for i in range(n)], repeat)),
        ("declared type", _best(lambda: [row_convert(r) for r in rows], repeat),
         _best(lambda: [tuple_convert(t) for t in tuples], repeat)),
        ("field [1]", _best(lambda: [r[1] for r in rows], repeat), _best(lambda: [t[1] for t in tuples], repeat)),
        ("pickle batch", _best(lambda: [pickle.loads(pickle.dumps(b, 5)) for b in row_batches], repeat),
         _best(lambda: [pickle.loads(pickle.dumps(b, 5)) for b in tuple_batches], repeat)),
    ]


def _as_row(e: tuple[int, int, int]) -> Row:
    return Row(e[0], e[2])


def _as_tuple(e: tuple[int, int, int]) -> tuple[int, int]:
    return (e[0], e[2])


def _sum_rows(a: Row, b: Row) -> Row:
    return Row(a[0], a[1] + b[1])


def _sum_tuples(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return (a[0], a[1] + b[1])


def pipeline(n: int, *, rows: bool) -> int:
    CountingSink.count = 0
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_source(EventSource(n), _no_watermarks(), "events")
    if rows:
        records = ds.map(_as_row, output_type=ROW_TYPE).key_by(lambda r: r[0]).reduce(_sum_rows)
    else:
        records = ds.map(_as_tuple, output_type=TUPLE_TYPE).key_by(lambda t: t[0]).reduce(_sum_tuples)
    records.add_sink(CountingSink())
    env.execute("bench-rows")
    return CountingSink.count


def _no_watermarks() -> Any:
    from strom.common.watermark_strategy import WatermarkStrategy

    return WatermarkStrategy.no_watermarks()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts", default="ops,pipeline", help="comma-separated: ops, pipeline")
    args = parser.parse_args()
    n, parts = args.events, set(args.parts.split(","))
    print(f"{n} records, best of {args.repeat}")
    for what, row_s, tuple_s in ops(n, args.repeat) if "ops" in parts else []:
        print(f"  {what:14s} Row {row_s * 1e9 / n:7.1f} ns  tuple {tuple_s * 1e9 / n:7.1f} ns  "
              f"ratio {row_s / tuple_s:5.2f}")
    if "pipeline" not in parts:
        return
    row_s = _best(lambda: pipeline(n, rows=True), args.repeat)
    tuple_s = _best(lambda: pipeline(n, rows=False), args.repeat)
    print(f"  pipeline       Row {n / row_s:9.0f} rec/s  tuple {n / tuple_s:9.0f} rec/s  ratio {row_s / tuple_s:5.2f}")


if __name__ == "__main__":
    main()
