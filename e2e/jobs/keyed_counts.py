"""Keyed running counts with exactly-once file output: the job every e2e scenario runs.

    keyed_counts.py OUT_DIR [--phases COUNT@RATE,...] [--keys K] [--cost-ms MS] [--tag TAG]

The source emits the records 0..N-1, N the sum of the phases' counts, each phase at its own rate
(records/s), and then stays idle without ending: a streaming job does not finish, so the
operator's upgrades, savepoints and restarts meet a RUNNING job. Record i has key i % K; a
KeyedProcessFunction keeps a count per key in ValueState and writes `key count index tag` for
every record to an exactly-once FileSink (published only when its checkpoint completed).

So the output is checkable against a plain-Python reference, whatever happened in between: for
record i the count is the number of records j <= i with the same key. State lost in an upgrade
restarts counts, state restored twice or records replayed into the output repeat lines. `--tag`
marks which deployment wrote a line; `--cost-ms` is per-record CPU work in the keyed function
(the load the autoscaler sees).

The source keeps parallelism 1 and max parallelism 1 (its position is one index), so the
autoscaler and spec parallelism change only the keyed function and the sink.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from strom.common import Encoder, Types, WatermarkStrategy
from strom.datastream import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from strom.datastream.connectors import FileSink, Source
from strom.datastream.connectors.base import Boundedness
from strom.datastream.connectors.file_system import BucketAssigner
from strom.datastream.state import ValueStateDescriptor

_MAX_POLL_WAIT_S = 0.05


def parse_phases(text: str) -> list[tuple[int, float]]:
    """'2000@100,6000@600' -> [(2000, 100.0), (6000, 600.0)]."""
    phases = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        count, _, rate = part.partition("@")
        phases.append((int(count), float(rate)))
    return phases


class PhasedReader:
    """Emits indexes in order, paced by the rate of the phase each index falls in; idle after the last."""

    def __init__(self, phases: list[tuple[int, float]]) -> None:
        self._bounds: list[tuple[int, float]] = []  # (end index exclusive, rate)
        end = 0
        for count, rate in phases:
            end += count
            self._bounds.append((end, rate))
        self._next = 0
        self._phase_start_index = 0
        self._phase_start_time = time.monotonic()
        self._phase = -1
        self._cancelled = threading.Event()

    def _phase_of(self, index: int) -> int:
        for k, (end, _) in enumerate(self._bounds):
            if index < end:
                return k
        return len(self._bounds)

    def poll(self, max_records: int) -> list[Any] | None:
        phase = self._phase_of(self._next)
        if phase == len(self._bounds):
            self._cancelled.wait(_MAX_POLL_WAIT_S)  # all emitted: idle, never "finished"
            return []
        if phase != self._phase:  # pace each phase from its own start (also after a restore)
            self._phase, self._phase_start_index, self._phase_start_time = phase, self._next, time.monotonic()
        end, rate = self._bounds[phase]
        due = self._phase_start_index + int((time.monotonic() - self._phase_start_time) * rate) + 1
        n = min(self._next + max_records, end, due) - self._next
        if n <= 0:
            self._cancelled.wait(min(_MAX_POLL_WAIT_S, 1.0 / rate))
            return []
        start, self._next = self._next, self._next + n
        return list(range(start, self._next))

    def snapshot_position(self) -> int:
        return self._next

    def restore_position(self, position: int) -> None:
        self._next = int(position)

    def pending_records(self) -> int | None:
        """The backlog: records of the current phase that are due by now and not yet emitted (a source
        held back by back pressure falls behind its rate). Read from another thread: an estimate."""
        phase, nxt = self._phase, self._next
        if phase < 0 or phase >= len(self._bounds):
            return 0
        end, rate = self._bounds[phase]
        due = self._phase_start_index + int((time.monotonic() - self._phase_start_time) * rate)
        return max(0, min(end, due) - nxt)

    def cancel(self) -> None:
        self._cancelled.set()

    def close(self) -> None:
        pass


class PhasedSource(Source):
    name = "PhasedSource"

    def __init__(self, phases: list[tuple[int, float]]) -> None:
        self.phases = phases

    def get_boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_reader(self, context: Any) -> PhasedReader:
        if context.parallelism != 1:
            raise ValueError(f"PhasedSource runs at parallelism 1, got {context.parallelism}")
        return PhasedReader(self.phases)

    @property
    def max_parallelism(self) -> int | None:
        return 1


class KeyedCount(KeyedProcessFunction):
    def __init__(self, cost_ms: float, tag: str) -> None:
        self.cost_s = cost_ms / 1000.0
        self.tag = tag

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.cost_s:
            until = time.perf_counter() + self.cost_s
            while time.perf_counter() < until:  # CPU work, not sleep: busy time is what the autoscaler reads
                pass
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{ctx.get_current_key()} {count} {value[1]} {self.tag}"


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="keyed_counts.py")
    p.add_argument("out")
    p.add_argument("--phases", default="3000@300")
    p.add_argument("--keys", type=int, default=7)
    p.add_argument("--cost-ms", type=float, default=0.0)
    p.add_argument("--tag", default="v1")
    args = p.parse_args(argv)
    keys = args.keys

    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = (env.from_source(PhasedSource(parse_phases(args.phases)), WatermarkStrategy.no_watermarks(), "numbers")
               .uid("numbers").set_parallelism(1).set_max_parallelism(1))
    records = numbers.map(lambda i: (i % keys, i)).uid("records").set_parallelism(1).set_max_parallelism(1)
    counts = records.key_by(lambda r: r[0]).process(KeyedCount(args.cost_ms, args.tag)).uid("counts").name("counts")
    sink = (FileSink.for_row_format(args.out, Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
    counts.sink_to(sink).uid("sink").name("sink")
    env.execute("keyed counts")


if __name__ == "__main__":
    main(sys.argv[1:])
