"""The side-by-side table: events/s per workload and engine from one run, the ratios Strom is read by, and
the targets of issue 8 (reported, never asserted: figures depend on the machine and its load)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

LABELS = {
    "a": "(a) map -> filter",
    "b": "(b) key_by -> tumbling 1s -> sum",
    "q0": "nexmark q0 pass-through",
    "q2": "nexmark q2 selection",
    "q5": "nexmark q5 hot items",
}
# (workload, baseline engine, least strom/baseline): the targets of issue 8 for the engine-core pipelines
TARGETS = (
    ("a", "python", 0.5), ("b", "python", 0.5),
    ("a", "pyflink", 10.0), ("b", "pyflink", 10.0),
    ("a", "bytewax", 1.0), ("b", "bytewax", 5.0),
)


@dataclass(frozen=True, slots=True)
class Result:
    engine: str
    workload: str
    events: int
    seconds: float  # best run, job start included
    outputs: int
    start_seconds: float | None = None  # a one-event run of the same job: what starting it costs

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds


Results = Mapping[tuple[str, str], Result]  # (engine, workload) -> result


def ratio(results: Results, workload: str, engine: str, baseline: str) -> float | None:
    a, b = results.get((engine, workload)), results.get((baseline, workload))
    return a.events_per_second / b.events_per_second if a and b else None


def table(results: Results, engines: list[str], workloads: list[str]) -> str:
    others = [e for e in engines if e != "strom"]
    head = f"{'workload':<34}" + "".join(f"{e + ' ev/s':>15}" for e in engines)
    head += "".join(f"{'strom/' + e:>15}" for e in others if "strom" in engines)
    lines = [head]
    for w in workloads:
        row = f"{LABELS[w]:<34}"
        for e in engines:
            r = results.get((e, w))
            row += f"{r.events_per_second:>15,.0f}" if r else f"{'-':>15}"
        if "strom" in engines:
            for e in others:
                x = ratio(results, w, "strom", e)
                row += f"{x:>15.2f}" if x is not None else f"{'-':>15}"
        lines.append(row)
    return "\n".join(lines)


def details(results: Results, engines: list[str], workloads: list[str]) -> str:
    """Events, output rows and job start time per cell: what each figure was measured on."""
    lines = [f"{'workload':<10}{'engine':<10}{'events':>11}{'outputs':>10}{'best s':>9}{'job start s':>13}"]
    for w in workloads:
        for e in engines:
            r = results.get((e, w))
            if r:
                start = f"{r.start_seconds:.2f}" if r.start_seconds is not None else "-"
                lines.append(f"{w:<10}{e:<10}{r.events:>11,}{r.outputs:>10,}{r.seconds:>9.2f}{start:>13}")
    return "\n".join(lines)


def targets(results: Results) -> str:
    lines = []
    for w, baseline, least in TARGETS:
        x = ratio(results, w, "strom", baseline)
        if x is None:
            continue
        verdict = "met" if x >= least else "NOT met"
        lines.append(f"({w}) strom/{baseline} = {x:.2f}, target >= {least:g}: {verdict}")
    return "\n".join(lines)


def mismatches(results: Results, workloads: list[str]) -> list[str]:
    """Cells whose output row count differs from the plain-Python loop's at the same number of events."""
    out = []
    for (engine, w), r in results.items():
        ref = results.get(("python", w))
        if engine != "python" and ref and ref.events == r.events and ref.outputs != r.outputs:
            out.append(f"{engine} {w}: {r.outputs} output rows, the plain-Python loop {ref.outputs}")
    return out
