"""End-to-end latency of Nexmark q2 and q7 on Strom at a fixed input rate, per `execution.buffer-timeout`.

    python -m benchmarks.nexmark.latency [--seconds 30] [--timeouts 0,10,100] [--speedup 40]

First each query runs unthrottled once per buffer timeout to measure its capacity (events/s); then, at half
the capacity under the default timeout (100 ms), once per buffer timeout, with a sink that records each
output's latency (a timeout whose own capacity is below that rate is overloaded: its latency keeps growing):
* an event's creation time is when the paced source was due to emit it: pacing starts at a recorded
  wall-clock instant and event n is due n / rate seconds later, and n follows from the event time (the
  generator spaces event times evenly). Counting from the schedule, not from when the source got round to
  it, keeps a source that falls behind from hiding its queueing (no coordinated omission).
* q2 (selection): latency = sink wall time - creation of the bid the row came from (its record timestamp).
* q7 (highest bid per 10 s window): a window's rows are due when the watermark (4 s behind the largest
  event time) passes the window's end, so latency = sink wall time - creation of the first event at or past
  end + 4 s; rows of windows closed by the end of the input are left out (nothing created made them due).
  The periodic watermark (`pipeline.auto-watermark-interval`, 200 ms) is part of what is measured.
Event time runs `--speedup` times faster than the wall clock so that q7 closes a window every
10 s / speedup and a run yields enough windows; the per-row work is unchanged.
In-process engine (every subtask a thread), parallelism 1: q2 is one chained task, so the buffer timeout
cannot matter there; q7's key_by edges go through buffers, which is where the timeout acts.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from strom.common.configuration import Configuration
from strom.connectors.base import SourceReader, SourceReaderContext
from strom.connectors.nexmark import NexmarkConfig, NexmarkReader, NexmarkSource
from strom.connectors.nexmark.source import WATERMARK_DELAY_MS
from strom.datastream import SinkFunction, StreamExecutionEnvironment

from benchmarks.nexmark.queries import QUERIES as QUERIES_BY_NAME
from benchmarks.nexmark.runner import CountingSink

QUERIES = ("q2", "q7")
DEFAULT_TIMEOUT_MS = 100  # execution.buffer-timeout's default: the capacity the input rate is half of


class PaceClock:
    """The paced reader's clock (wall time, seconds); remembers its first reading, where pacing starts.
    Class-level, like the runner's CountingSink: the in-process engine may copy the source it is given."""

    started: float | None = None

    def __call__(self) -> float:
        now = time.time()
        if PaceClock.started is None:
            PaceClock.started = now
        return now


class PacedNexmarkSource(NexmarkSource):
    """NexmarkSource whose readers pace on PaceClock."""

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return NexmarkReader(self.config, subtask=context.subtask_index, parallelism=context.parallelism,
                             clock=PaceClock())


@dataclass(frozen=True, slots=True)
class Schedule:
    """When the paced source was due to create the event of a given event time."""

    started: float  # wall-clock seconds: event 0
    base_time: int  # event time of event 0, ms
    event_rate: float  # events per second of event time
    rate: float  # events per wall-clock second

    def created(self, event_time_ms: int) -> float:
        number = (event_time_ms - self.base_time) * self.event_rate / 1000.0
        return self.started + number / self.rate


class LatencySink(SinkFunction):
    """Keeps (sink wall time, record timestamp) per row; latencies are worked out after the run."""

    arrivals: list[tuple[float, int]] = []

    def invoke(self, value: Any, context: Any) -> None:
        LatencySink.arrivals.append((time.time(), context.timestamp()))


def due_event_time(query: str, record_ts: int) -> int:
    """The event time of the event that made the row due (see the module's docstring)."""
    if query == "q7":
        return record_ts + 1 + WATERMARK_DELAY_MS  # the row carries the window's last millisecond
    return record_ts


def latencies_ms(query: str, schedule: Schedule, last_event_time: int,
                 arrivals: list[tuple[float, int]]) -> list[float]:
    out = []
    for at, ts in arrivals:
        due = due_event_time(query, ts)
        if due <= last_event_time:
            out.append((at - schedule.created(due)) * 1000.0)
    return out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def run_job(query: str, source: NexmarkSource, sink: SinkFunction, timeout_ms: int) -> float:
    """Runs the query from `source` into `sink` with the given buffer timeout; returns the wall seconds."""
    from strom.datastream.executors import load_executor

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"execution.buffer-timeout": timeout_ms}))
    env.set_parallelism(1)
    events = env.from_source(source, NexmarkSource.watermark_strategy(), "Nexmark Source")
    QUERIES_BY_NAME[query](events).add_sink(sink).name("sink")
    graph = env.get_stream_graph(f"nexmark-{query}-latency")
    start = time.perf_counter()
    load_executor().start_job(graph).wait()
    return time.perf_counter() - start


def capacity(query: str, events: int, timeout_ms: int) -> float:
    """Unthrottled events/s of the query with this buffer timeout."""
    return events / run_job(query, NexmarkSource(NexmarkConfig(events=events)), CountingSink(), timeout_ms)


def measure(query: str, config: NexmarkConfig, timeout_ms: int) -> tuple[list[float], int]:
    """One paced run with the given buffer timeout: latencies (ms) and the number of output rows."""
    PaceClock.started = None
    LatencySink.arrivals = []
    run_job(query, PacedNexmarkSource(config), LatencySink(), timeout_ms)
    assert PaceClock.started is not None, "the paced source never polled"
    schedule = Schedule(PaceClock.started, config.base_time, config.event_rate or config.rate, config.rate)
    last_event_time = config.timestamp_for_event(config.events - 1)
    return latencies_ms(query, schedule, last_event_time, LatencySink.arrivals), len(LatencySink.arrivals)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="wall-clock length of each paced run")
    ap.add_argument("--timeouts", default="0,10,100", help="execution.buffer-timeout values, ms")
    ap.add_argument("--speedup", type=float, default=40.0, help="event time per wall-clock time")
    ap.add_argument("--capacity-events", type=int, default=500_000, help="events of the unthrottled run")
    ap.add_argument("--queries", default=",".join(QUERIES))
    args = ap.parse_args(argv)
    timeouts = [int(t) for t in args.timeouts.split(",")]
    rows = []
    for query in args.queries.split(","):
        capacity(query, 20_000, DEFAULT_TIMEOUT_MS)  # warm-up: the generator's string pools, imports
        capacities = {t: capacity(query, args.capacity_events, t) for t in {*timeouts, DEFAULT_TIMEOUT_MS}}
        rate = capacities[DEFAULT_TIMEOUT_MS] / 2
        config = NexmarkConfig(events=int(rate * args.seconds), rate=rate, event_rate=rate / args.speedup)
        for timeout in timeouts:
            lat, outputs = measure(query, config, timeout)
            rows.append((query, capacities[timeout], rate, timeout, outputs, lat))
            print(f"  {query} buffer-timeout {timeout} ms: {len(lat)} samples", flush=True)
    print(f"Strom in-process engine, parallelism 1, input for {args.seconds:g} s at half the capacity with the "
          f"default buffer timeout, event time x{args.speedup:g}; capacity: unthrottled, with that row's timeout")
    print(f"{'query':<6}{'buffer-timeout':>15}{'capacity ev/s':>15}{'rate ev/s':>12}{'rows':>8}{'samples':>9}"
          f"{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for query, cap, rate, timeout, outputs, lat in rows:
        p50, p99, top = (percentile(lat, 50), percentile(lat, 99), max(lat)) if lat else (float("nan"),) * 3
        note = "  overloaded" if rate > cap else ""
        print(f"{query:<6}{f'{timeout} ms':>15}{cap:>15,.0f}{rate:>12,.0f}{outputs:>8,}{len(lat):>9,}"
              f"{p50:>10.1f}{p99:>10.1f}{top:>10.1f}{note}")


if __name__ == "__main__":
    main()
