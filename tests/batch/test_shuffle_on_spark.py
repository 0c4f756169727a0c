"""The chunked shuffle through real Spark with records that span many chunks (and one record larger
than a chunk): a keyed function sees each key's records complete and in timestamp order."""

import random

import pytest
from strom.batch.shuffle_write import CHUNK_BYTES
from strom.common import Configuration, Types
from strom.common.time import Duration
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import KeyedProcessFunction
from strom.datastream.state import ValueStateDescriptor

from tests.batch.batch_testing import run_batch

pytestmark = pytest.mark.usefixtures("spark")


class PositionInKey(KeyedProcessFunction):
    """Emits (key, position of the record among its key's records as seen, timestamp, payload size)."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def process_element(self, value, ctx):
        n = self.seen.value() or 0
        self.seen.update(n + 1)
        yield (value[0], n, value[2], len(value[1]))


@pytest.mark.parametrize("worker_memory", [None, "1k"], ids=["in-memory", "spilled"])
def test_keyed_records_spanning_many_chunks_arrive_complete_and_in_timestamp_order(worker_memory):
    """With spark.python.worker.memory=1k nearly every chunk waits in a local file before it is read."""
    rng = random.Random(11)
    stamps = rng.sample(range(1_000_000), 24_000)  # distinct: the expected position is the rank by time
    events = [(f"k{i % 7}", "x" * rng.randint(100, 600), ts) for i, ts in enumerate(stamps)]
    events.append(("k0", "y" * (2 * CHUNK_BYTES), 500_000))  # one record larger than a whole chunk
    rng.shuffle(events)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(
        lambda e, _ts: e[2]
    )

    def build(env):
        if worker_memory is not None:
            env.configure(Configuration({"spark.python.worker.memory": worker_memory}))
        return (
            env.from_collection(events)
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda e: e[0])
            .process(PositionInKey())
        )

    got = run_batch(build)
    expected = []
    for key in {k for k, _, _ in events}:
        mine = sorted((ts, len(p)) for k, p, ts in events if k == key)
        expected += [(key, n, ts, size) for n, (ts, size) in enumerate(mine)]
    assert sorted(got) == sorted(expected)


def test_united_streams_feeding_a_keyed_reduce_are_folded_in_timestamp_order():
    """Two sources united into one keyed input: a reduce keeping the later record ends with each
    key's latest record (the chunks of each stream form runs of their own, merged by time)."""
    rng = random.Random(12)
    stamps = rng.sample(range(1_000_000), 6_000)
    events = [(f"k{i % 5}", i, ts) for i, ts in enumerate(stamps)]
    rng.shuffle(events)
    half = len(events) // 2
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(
        lambda e, _ts: e[2]
    )

    def build(env):
        first = env.from_collection(events[:half]).assign_timestamps_and_watermarks(strategy)
        second = env.from_collection(events[half:]).assign_timestamps_and_watermarks(strategy)
        return first.union(second).key_by(lambda e: e[0]).reduce(lambda a, b: b)

    latest = {}
    for e in sorted(events, key=lambda e: e[2]):
        latest[e[0]] = e
    assert sorted(run_batch(build)) == sorted(latest.values())
