"""DataGeneratorSource against plain Python computations of the same indexes."""

from __future__ import annotations

from collections import Counter

import pytest
from strom.common import Types, WatermarkStrategy
from strom.connectors.base import Boundedness, SourceReaderContext
from strom.connectors.datagen import TokenBucket
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.testing import collect

from .connector_testing import RecordedJob


def drain(reader) -> list:
    out: list = []
    while (batch := reader.poll(7)) is not None:
        out.extend(batch)
    return out


def test_bounded_generator_emits_f_of_every_index_once_across_subtasks():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    src = DataGeneratorSource(lambda i: i * i, 1000, type_info=Types.LONG())
    got = collect(env.from_source(src, WatermarkStrategy.no_watermarks(), "gen"))
    assert Counter(got) == Counter(i * i for i in range(1000))


def test_indexes_are_split_into_contiguous_ranges_like_number_sequence_source():
    src = DataGeneratorSource(lambda i: i, 10)
    shares = [drain(src.create_reader(SourceReaderContext(i, 3))) for i in range(3)]
    assert shares == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]


def test_unbounded_generator_strides_indexes_across_subtasks_and_never_ends():
    src = DataGeneratorSource(lambda i: i, None)
    assert src.get_boundedness() == Boundedness.CONTINUOUS_UNBOUNDED
    reader = src.create_reader(SourceReaderContext(1, 3))
    assert reader.poll(4) == [1, 4, 7, 10]
    assert reader.poll(2) == [13, 16]


def test_unbounded_generator_job_produces_distinct_records_until_cancelled():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    src = DataGeneratorSource(lambda i: f"event-{i}", None)
    job = RecordedJob(env.from_source(src, WatermarkStrategy.no_watermarks(), "g"))
    try:
        got = job.wait_for(500)
    finally:
        job.cancel()
    assert len(set(got)) == len(got)
    assert all(s.startswith("event-") for s in got)


def test_generator_function_object_is_opened_mapped_and_closed():
    calls: list[str] = []

    class Squares:
        def open(self, ctx: SourceReaderContext) -> None:
            calls.append(f"open {ctx.subtask_index}")

        def map(self, index: int) -> int:
            return index * index

        def close(self) -> None:
            calls.append("close")

    reader = DataGeneratorSource(Squares(), 4).create_reader(SourceReaderContext(0, 1))
    assert drain(reader) == [0, 1, 4, 9]
    reader.close()
    assert calls == ["open 0", "close"]


def test_rate_limited_generator_still_emits_everything():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    src = DataGeneratorSource(lambda i: i, 40, rate_limit=400.0)
    assert sorted(collect(env.from_source(src, WatermarkStrategy.no_watermarks(), "g"))) == list(range(40))


def test_token_bucket_grants_rate_times_elapsed_and_saves_at_most_one_second():
    now = [0.0]
    bucket = TokenBucket(10.0, clock=lambda: now[0])
    assert bucket.take(100) == 1  # the first permit is free
    assert bucket.take(100) == 0
    assert bucket.seconds_until_next() == pytest.approx(0.1)
    now[0] = 0.5
    assert bucket.take(100) == 5
    now[0] = 100.0  # a long stall saves at most one second of permits
    assert bucket.take(100) == 10


def test_rate_limited_reader_returns_empty_batches_instead_of_spinning():
    src = DataGeneratorSource(lambda i: i, 100, rate_limit=0.001)
    reader = src.create_reader(SourceReaderContext(0, 1))
    assert reader.poll(10) == [0]
    assert reader.poll(10) == []  # waits at most ~50 ms for the next permit, then yields


def test_invalid_arguments_are_rejected_with_their_name():
    with pytest.raises(ValueError, match="count"):
        DataGeneratorSource(lambda i: i, -1)
    with pytest.raises(ValueError, match="rate_limit"):
        DataGeneratorSource(lambda i: i, 1, rate_limit=0)
    with pytest.raises(TypeError, match="generator_function"):
        DataGeneratorSource(42, 1)
