"""Tumbling processing-time windows on every backend against a plain-Python replay: random keys arrive in
batches while a manual clock moves (often exactly onto window bounds), due timers run as the task's mailbox
runs them. With the default trigger and with Nexmark q12's (a processing-time timer at the window's end and
an event-time one at the end of input per element, FIRE_AND_PURGE), each (key, window) reports its count
once, when the clock passes the window's last millisecond, windows in order of their end.

The assigner hands out the window of the previous element again while the clock stays inside it (and the
operator then skips rebinding the window state): a window reused one millisecond too long or a binding
kept past a purge shows up here as a wrong count.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.time import MAX_WATERMARK
from strom.datastream import AggregateFunction, ProcessWindowFunction, StreamExecutionEnvironment
from strom.datastream.window import Trigger, TriggerResult, TumblingProcessingTimeWindows
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext
from strom.runtime.operators.window_operator import WindowOperator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

from tests.state_contract.test_windows import Collect  # the operator tests' output that keeps what it is given

SIZE = 1000


class Count(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, acc: int) -> int:
        return acc + 1

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


class WithBounds(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        w = context.window()
        for count in elements:
            yield (key, count, w.start, w.end)


class ProcessingTimeOrEndOfInput(Trigger):
    """Nexmark q12's trigger (benchmarks/nexmark/windows.py): three timer calls per element."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        ctx.register_event_time_timer(MAX_WATERMARK)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if time == MAX_WATERMARK else TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())
        ctx.delete_event_time_timer(MAX_WATERMARK)


def _operator(backend: str, trigger: str, offset: int, clock: ManualClock, out: Collect) -> tuple[Any, Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    windowed = env.from_collection(["a"]).key_by(lambda k: k).window(TumblingProcessingTimeWindows.of(SIZE, offset))
    if trigger == "q12":
        windowed = windowed.trigger(ProcessingTimeOrEndOfInput())
    t = windowed.aggregate(Count(), WithBounds())._t
    pts = ProcessingTimeService(clock)
    op = WindowOperator(t.operator, key_selectors=t.key_selectors)
    op.setup(
        OperatorContext(
            task_name="t", operator_name=t.name, operator_uid="w", subtask_index=0, parallelism=1,
            max_parallelism=128, attempt=0, config=Configuration({"state.backend.type": backend}),
            processing_time_service=pts, metrics=MetricGroup(),
        ),
        out,
    )
    op.open()
    return op, pts


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
@pytest.mark.parametrize("trigger", ["default", "q12"])
def test_tumbling_processing_time_windows_count_each_key_and_window_once_as_a_plain_python_replay(backend, trigger):
    rnd = random.Random(f"{backend}-{trigger}")
    on_bounds = 0
    for _ in range(25):
        offset = rnd.choice([0, 300, -200])
        clock = ManualClock(rnd.randint(0, 5000))
        out = Collect()
        op, pts = _operator(backend, trigger, offset, clock, out)
        counts: dict[tuple[str, int], int] = {}  # the reference: (key, window start) -> elements
        for _ in range(rnd.randint(1, 80)):
            if rnd.random() < 0.6:
                batch = [rnd.choice("abcdef") for _ in range(rnd.randint(1, 6))]
                start = clock.ms - (clock.ms - offset) % SIZE
                on_bounds += clock.ms in (start, start + SIZE - 1)
                for k in batch:
                    counts[(k, start)] = counts.get((k, start), 0) + 1
                op.process_batch(batch, None, None)
                continue
            start = clock.ms - (clock.ms - offset) % SIZE
            clock.ms = rnd.choice([clock.ms + rnd.randint(0, 1500), start + SIZE - 1, start + SIZE, start + SIZE + 1])
            pts.run_due()
            due = sorted((ks, n) for ks, n in counts.items() if ks[1] + SIZE - 1 <= clock.ms)
            for ks, _ in due:
                del counts[ks]
            got, out.records = out.records, []
            assert [r[3] for r in got] == sorted(r[3] for r in got)  # windows in order of their end
            assert sorted(got) == sorted((k, n, s, s + SIZE) for (k, s), n in due)
        clock.ms += 10 * SIZE
        pts.run_due()
        assert sorted(out.records) == sorted((k, n, s, s + SIZE) for (k, s), n in counts.items())
        op.close()
    assert on_bounds > 20  # elements do arrive on a window's first and last millisecond
