"""FileSource and FileSink against files written and read back by plain Python."""

from __future__ import annotations

import datetime as dt
import gzip
import os
import re
from collections import Counter
from zoneinfo import ZoneInfo

import pytest
from strom.common import Encoder, Time, WatermarkStrategy
from strom.connectors.base import Boundedness, SourceReaderContext
from strom.connectors.file_enumeration import enumerate_files, owner_of, static_share
from strom.connectors.file_sink_policies import format_java_date, parse_java_date_pattern
from strom.connectors.sink_base import SinkInitContext
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService
from strom.testing import collect

from .connector_testing import RecordedJob, wait_until

PART_NAME = re.compile(r"^part-[0-9a-f-]{36}-(\d+)-(\d+)$")


def write(path: os.PathLike[str] | str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def text_source(*paths: str) -> FileSource:
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)
    return builder.process_static_file_set().build()


def finished_files(base: str) -> list[str]:
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(base) for f in fs if not f.startswith("."))


def lines_of(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            out.extend(f.read().splitlines())
    return out


# -- FileSource -------------------------------------------------------------------------------


def test_file_source_reads_every_line_of_a_directory_tree_and_skips_hidden_files(tmp_path):
    write(tmp_path / "a.txt", "one\ntwo\r\nthree")  # CRLF and no final newline
    write(tmp_path / "sub" / "deeper" / "b.txt", "four\n\nsix\n")  # an empty line is a record
    write(tmp_path / "sub" / "c.log", "seven\n")
    write(tmp_path / ".hidden.txt", "never\n")
    write(tmp_path / "_SUCCESS", "never\n")
    write(tmp_path / "_tmp" / "d.txt", "never\n")
    write(tmp_path / "sub" / ".staging" / "e.txt", "never\n")
    expected = ["one", "two", "three", "four", "", "six", "seven"]

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    got = collect(env.from_source(text_source(str(tmp_path)), WatermarkStrategy.no_watermarks(), "files"))

    assert Counter(got) == Counter(expected)


def test_file_source_reads_gzip_files_and_file_uris(tmp_path):
    with gzip.open(tmp_path / "data.txt.gz", "wt", encoding="utf-8") as f:
        f.write("x\ny\n")
    write(tmp_path / "plain.txt", "z\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    src = text_source(f"file://{tmp_path / 'data.txt.gz'}", str(tmp_path / "plain.txt"))
    assert Counter(collect(env.from_source(src, WatermarkStrategy.no_watermarks(), "f"))) == Counter("xyz")


def test_read_text_file_is_a_bounded_file_source(tmp_path):
    write(tmp_path / "in.txt", "\n".join(str(i) for i in range(500)) + "\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    got = collect(env.read_text_file(str(tmp_path)).map(int))
    assert sorted(got) == list(range(500))


def test_missing_path_fails_the_job_naming_the_path(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    missing = str(tmp_path / "nope")
    with pytest.raises(Exception, match="nope"):
        collect(env.from_source(text_source(missing), WatermarkStrategy.no_watermarks(), "f"))


def test_static_share_gives_subtask_i_files_i_plus_multiples_of_p():
    files = [f"f{i}" for i in range(7)]
    shares = [static_share(files, i, 3) for i in range(3)]
    assert shares == [["f0", "f3", "f6"], ["f1", "f4"], ["f2", "f5"]]


def test_enumeration_is_sorted_and_deduplicated(tmp_path):
    write(tmp_path / "b", "")
    write(tmp_path / "a", "")
    assert enumerate_files([str(tmp_path), str(tmp_path / "a")]) == [str(tmp_path / "a"), str(tmp_path / "b")]


def test_monitored_readers_read_each_new_file_exactly_once_across_subtasks(tmp_path):
    write(tmp_path / "first.txt", "a\nb\n")
    src = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .monitor_continuously(Time.milliseconds(10))
        .build()
    )
    assert src.get_boundedness() == Boundedness.CONTINUOUS_UNBOUNDED
    readers = [src.create_reader(SourceReaderContext(i, 2)) for i in range(2)]
    got: list[str] = []

    def drain_until(n: int) -> None:
        def step() -> bool:
            for r in readers:
                batch = r.poll(100)
                assert batch is not None, "a monitored source never ends"
                got.extend(batch)
            return len(got) >= n

        wait_until(step, what=f"{n} lines")

    drain_until(2)
    for i in range(6):
        write(tmp_path / f"later-{i}.txt", f"l{i}\n")
    drain_until(8)
    # More scans happen; no file is read twice.
    write(tmp_path / "last.txt", "z\n")
    drain_until(9)
    assert Counter(got) == Counter(["a", "b", "z"] + [f"l{i}" for i in range(6)])
    # Ownership follows a stable hash of the path, the same in every process.
    assert owner_of(str(tmp_path / "last.txt"), 2) == owner_of(str(tmp_path / "last.txt"), 2)
    for r in readers:
        r.close()


def test_monitored_source_job_picks_up_files_added_while_running(tmp_path):
    write(tmp_path / "0.txt", "0\n1\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    src = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .monitor_continuously(Time.milliseconds(20))
        .build()
    )
    job = RecordedJob(env.from_source(src, WatermarkStrategy.no_watermarks(), "monitor").map(int))
    try:
        job.wait_for(2)
        write(tmp_path / "1.txt", "2\n3\n4\n")
        got = job.wait_for(5)
    finally:
        job.cancel()
    assert sorted(got) == [0, 1, 2, 3, 4]


def test_monitor_continuously_rejects_a_non_positive_interval():
    with pytest.raises(ValueError, match="positive"):
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/tmp").monitor_continuously(0)


# -- FileSink ---------------------------------------------------------------------------------


def test_file_sink_publishes_every_record_once_in_part_files_named_like_flink(tmp_path):
    out = str(tmp_path / "out")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    env.from_sequence(1, 2000).map(lambda n: f"record-{n}").sink_to(sink)
    env.execute("file sink")

    assert not [f for _, _, fs in os.walk(out) for f in fs if f.startswith(".")], "no in-progress file remains"
    files = finished_files(out)
    assert all(os.path.dirname(f) == out for f in files)
    subtasks = {int(PART_NAME.match(os.path.basename(f)).group(1)) for f in files}  # type: ignore[union-attr]
    assert subtasks <= {0, 1, 2}
    assert Counter(lines_of(files)) == Counter(f"record-{n}" for n in range(1, 2001))


def test_part_size_rolls_files_and_keeps_record_order_within_a_subtask(tmp_path):
    """Records are 10 bytes ('%09d\\n'); part_size=100. The policy rolls before writing a
    record when the part already holds more than 100 bytes, so every part but the last
    holds 11 records (110 bytes): 1000 records -> 90 parts of 11 and one of 10."""
    out = str(tmp_path / "out")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=100))
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("pre").with_part_suffix(".txt").build())
        .build()
    )
    env.from_sequence(0, 999).map(lambda n: f"{n:09d}").sink_to(sink)
    env.execute("rolling")

    names = os.listdir(out)
    pattern = re.compile(r"^pre-[0-9a-f-]{36}-0-(\d+)\.txt$")
    assert all(pattern.match(n) for n in names), names
    ordered = sorted(names, key=lambda n: int(pattern.match(n).group(1)))  # type: ignore[union-attr]
    sizes = [os.path.getsize(os.path.join(out, n)) for n in ordered]
    assert sizes == [110] * 90 + [100]
    assert lines_of([os.path.join(out, n) for n in ordered]) == [f"{n:09d}" for n in range(1000)]


def test_default_bucket_assigner_writes_into_an_hourly_directory(tmp_path):
    out = str(tmp_path / "out")
    before = dt.datetime.now().astimezone()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["a", "b"]).sink_to(FileSink.for_row_format(out, Encoder.simple_string_encoder()).build())
    env.execute("hourly")
    after = dt.datetime.now().astimezone()
    assert os.listdir(out) in ([before.strftime("%Y-%m-%d--%H")], [after.strftime("%Y-%m-%d--%H")])
    assert sorted(lines_of(finished_files(out))) == ["a", "b"]


def test_java_date_patterns_format_like_datetimeformatter():
    utc = ZoneInfo("UTC")
    t = int(dt.datetime(2024, 3, 7, 5, 9, 2, 45_000, tzinfo=utc).timestamp() * 1000)
    assert format_java_date(parse_java_date_pattern("yyyy-MM-dd--HH"), t, utc) == "2024-03-07--05"
    assert format_java_date(parse_java_date_pattern("'dt='yyyyMMdd/'hour='H"), t, utc) == "dt=20240307/hour=5"
    assert format_java_date(parse_java_date_pattern("yy-M-d HH:mm:ss.SSS"), t, utc) == "24-3-7 05:09:02.045"
    with pytest.raises(ValueError, match="'q'"):
        parse_java_date_pattern("yyyy-qq")


def test_date_time_bucket_assigner_uses_the_given_time_zone():
    assigner = BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd--HH", "Asia/Kolkata")

    class Ctx:
        def current_processing_time(self) -> int:
            return 0

    assert assigner.get_bucket_id("x", Ctx()) == "1970-01-01--05"  # UTC+05:30


class _Ctx:
    def timestamp(self) -> None:
        return None

    def current_watermark(self) -> int:
        return 0


def test_inactive_part_is_published_by_the_processing_time_check(tmp_path):
    clock = ManualClock(1_000)
    pts = ProcessingTimeService(clock)
    sink = (
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(rollover_interval=10_000, inactivity_interval=500))
        .with_bucket_check_interval(100)
        .build()
    )
    writer = sink.create_writer(SinkInitContext(0, 1, 0, pts))
    writer.write("a", _Ctx())
    writer.write("b", _Ctx())
    clock.advance(400)
    pts.run_due()
    assert finished_files(str(tmp_path)) == []  # idle 400 ms < 500 ms
    clock.advance(200)
    pts.run_due()
    [first] = finished_files(str(tmp_path))
    assert lines_of([first]) == ["a", "b"]
    writer.write("c", _Ctx())
    writer.flush(True)
    writer.close()
    files = finished_files(str(tmp_path))
    assert len(files) == 2 and Counter(lines_of(files)) == Counter("abc")


def test_writer_closed_without_end_of_input_publishes_nothing(tmp_path):
    pts = ProcessingTimeService(ManualClock(0))
    sink = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).with_bucket_assigner(
        BucketAssigner.base_path_bucket_assigner()
    ).build()
    writer = sink.create_writer(SinkInitContext(0, 1, 0, pts))
    writer.write("lost", _Ctx())
    writer.close()
    names = os.listdir(tmp_path)
    assert len(names) == 1 and names[0].startswith(".part-") and ".inprogress." in names[0]
    assert finished_files(str(tmp_path)) == []
