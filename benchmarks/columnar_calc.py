"""Columnar Calc vs the row path (issue 19): a projection/filter query over a bounded datagen table into a
blackhole sink, with `table.exec.columnar.enabled` off and on, in one run; plus the same pipeline with a
pass-through select (source and sink alone) so the Calc's own CPU per row can be read off.

    python -m benchmarks.columnar_calc [--rows 1000000]

Each variant runs in its own Python process (the job's TaskManager processes are its children), and its CPU
time is read when it has exited (user + system, every descendant included); the pass-through variant's
figure holds interpreter start-up, source and sink, so a Calc's own cost is the difference. Prints events
per CPU-second; not asserted. CPU time on a shared machine: read the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys

from strom.table import EnvironmentSettings, TableEnvironment

FIELDS = {"fields.a.min": "-1000", "fields.a.max": "1000", "fields.b.min": "0", "fields.b.max": "1000000",
          "fields.x.min": "0", "fields.x.max": "100", "fields.s.length": "8"}
DDL = ("CREATE TABLE src (a INT, b BIGINT, x DOUBLE, s STRING, f BOOLEAN) WITH ('connector' = 'datagen', "
       "'number-of-rows' = '{rows}', " + ", ".join(f"'{k}' = '{v}'" for k, v in FIELDS.items()) + ")")
SINK = "CREATE TABLE out_{name} ({columns}) WITH ('connector' = 'blackhole')"
QUERIES = {
    "pass-through": "SELECT a, b, x, s, f FROM src",
    "projection/filter": "SELECT a + 1 AS a1, b * 2 + a AS b2, x * 3 - 1 AS x3, CHAR_LENGTH(s) AS n, s "
                         "FROM src WHERE (a > 0 AND x < 50) OR f",
}


# Flink's mini-batch options: with them the columnar Calc gathers up to .size rows (flushed before watermarks)
MINI_BATCH = {"table.exec.mini-batch.enabled": "true", "table.exec.mini-batch.size": "5000",
              "table.exec.mini-batch.allow-latency": "1 s"}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # exited, waited-for descendants
    return usage.ru_utime + usage.ru_stime


def run(query: str, rows: int, columnar: bool, mini_batch: bool = False) -> float:
    """CPU seconds of one variant in a fresh process, every descendant included."""
    before = cpu_seconds()
    subprocess.run([sys.executable, "-m", "benchmarks.columnar_calc", "--rows", str(rows), "--one", query,
                    *(["--columnar"] if columnar else []), *(["--mini-batch"] if mini_batch else [])], check=True)
    return cpu_seconds() - before


def run_one(query: str, rows: int, columnar: bool, mini_batch: bool) -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("table.exec.columnar.enabled", "true" if columnar else "false")
    for key, value in (MINI_BATCH if mini_batch else {}).items():
        t_env.get_config().set(key, value)
    t_env.execute_sql(DDL.format(rows=rows))
    table = t_env.sql_query(QUERIES[query])
    schema = table.get_schema()
    columns = ", ".join(f"`{n}` {t.base()}" for n, t in zip(schema.get_field_names(), schema.get_field_data_types(),
                                                              strict=True))
    name = "q" + str(abs(hash((query, columnar))) % 10_000)
    t_env.execute_sql(SINK.format(name=name, columns=columns))
    table.execute_insert(f"out_{name}").wait()


def calc_alone(rows: int) -> list[tuple[int, float, float, float]]:
    """The Calc's function alone over the datagen table's own rows (no job): CPU us/row of the interpreted row
    path (filter predicate + projection closures per row), of the generated row code (calc_codegen, what a job
    runs when the columnar switch is off) and of ColumnarCalc.map_bundle, per bundle size."""
    import time

    from strom.table.connectors.datagen import DatagenSpec
    from strom.table.planner.columnar_calc import compile_columnar
    from strom.table.planner.scalar import compile_scalar
    from strom.table.planner.translate import _CalcMap

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.execute_sql(DDL.format(rows=rows))
    calc = t_env.sql_query(QUERIES["projection/filter"])._node
    columns = calc.input.columns
    spec = DatagenSpec("src", columns, {"number-of-rows": str(rows), **FIELDS})
    data = [spec(i) for i in range(rows)]
    columnar = compile_columnar(columns, list(calc.projections), calc.condition, calc.names())
    assert columnar is not None
    pred = compile_scalar(calc.condition, columns)[0]
    row_map = _CalcMap([compile_scalar(e, columns)[0] for e in calc.projections], calc.names())
    from strom.table.planner import calc_codegen

    steps, _ = calc_codegen.calc_chain(calc, lambda c: True)
    generated = calc_codegen.compile_calc(steps, calc.names())
    gen = generated.flat_map if isinstance(generated, calc_codegen.CompiledCalcFlatMap) else None
    out = []
    for size in (100, 1000, 5000):
        start = time.process_time()
        for i in range(0, rows, size):
            columnar.map_bundle(data[i:i + size])
        col = time.process_time() - start
        start = time.process_time()
        for i in range(0, rows, size):
            [row_map(r) for r in data[i:i + size] if pred(r) is True]
        row = time.process_time() - start
        start = time.process_time()
        for i in range(0, rows, size):
            for r in data[i:i + size]:
                gen(r) if gen is not None else generated.map(r)  # a 1-tuple or None per row
        code = time.process_time() - start
        out.append((size, row / rows * 1e6, code / rows * 1e6, col / rows * 1e6))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--one", choices=list(QUERIES), help=argparse.SUPPRESS)  # a variant's own process
    parser.add_argument("--columnar", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mini-batch", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_one(args.one, args.rows, args.columnar, args.mini_batch)
        return
    base = run("pass-through", args.rows, False)
    variants = [("projection/filter, row path", run("projection/filter", args.rows, False)),
                ("projection/filter, columnar", run("projection/filter", args.rows, True)),
                ("  + mini-batch 5000 rows / 1 s", run("projection/filter", args.rows, True, mini_batch=True))]
    print(f"{args.rows:,} datagen rows; ev/CPU-s = events per CPU-second (each variant's process and its children)")
    print(f"{'pipeline':<34}{'CPU s':>8}{'ev/CPU-s':>12}{'Calc CPU us/row':>17}")
    print(f"{'source -> sink (pass-through)':<34}{base:>8.2f}{args.rows / base:>12,.0f}{'-':>17}")
    for label, cpu in variants:
        calc = f"{max(cpu - base, 0.0) / args.rows * 1e6:.2f}"
        print(f"{label:<34}{cpu:>8.2f}{args.rows / cpu:>12,.0f}{calc:>17}")
    print("\nthe Calc function alone over 100,000 of the same rows (no job), CPU us/row:")
    print(f"{'bundle rows':>12}{'interpreted':>12}{'generated':>11}{'columnar':>10}")
    for size, row_us, code_us, col_us in calc_alone(100_000):
        print(f"{size:>12}{row_us:>12.2f}{code_us:>11.2f}{col_us:>10.2f}")


if __name__ == "__main__":
    main()
