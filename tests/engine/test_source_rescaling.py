"""Sources restored at another parallelism: index splits pooled and dealt out again.

Properties (hypothesis) of the split arithmetic against plain sets of indexes, and jobs whose
keyed sums continue exactly after a checkpoint taken at one source parallelism is restored at
another (test_savepoints.py: a savepoint of a job whose source ran at 2 restored at 1 and 3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strom.connectors.datagen import DataGeneratorSource
from strom.connectors.index_splits import IndexSplitCursor, redistribute
from strom.connectors.number_sequence import NumberSequenceSource


def _indexes(splits, limit=10_000):
    cursor = IndexSplitCursor(splits)
    out = []
    while len(out) < limit:
        batch = cursor.take(97)
        if batch is None:
            break
        out.extend(batch)
    return out


@settings(max_examples=60, deadline=None)
@given(
    total=st.integers(0, 400),
    old_p=st.integers(1, 5),
    new_p=st.integers(1, 7),
    progress=st.lists(st.integers(0, 150), min_size=5, max_size=5),
)
def test_bounded_splits_rescale_without_loss_or_repetition(total, old_p, new_p, progress):
    from strom.connectors.base import SourceReaderContext

    source = NumberSequenceSource(0, total) if total else NumberSequenceSource(0, 0)
    end = total if total else 0
    pooled, emitted = [], []
    for i in range(old_p):
        reader = source.create_reader(SourceReaderContext(subtask_index=i, parallelism=old_p))
        emitted += reader.poll(progress[i]) or [] if progress[i] else []
        pooled += reader.snapshot_splits()
    rest = [x for j in range(new_p) for x in _indexes(redistribute(pooled, j, new_p))]
    assert sorted(emitted + rest) == list(range(end + 1))
    for j in range(new_p):  # each new subtask emits in increasing order (monotonous event time stays so)
        got = _indexes(redistribute(pooled, j, new_p))
        assert got == sorted(got)


@settings(max_examples=40, deadline=None)
@given(old_p=st.integers(1, 4), new_p=st.integers(1, 6), progress=st.lists(st.integers(0, 60), min_size=4, max_size=4))
def test_unbounded_progressions_rescale_and_every_new_subtask_gets_work(old_p, new_p, progress):
    from strom.connectors.base import SourceReaderContext

    source = DataGeneratorSource(lambda i: i, None)
    pooled, emitted = [], []
    for i in range(old_p):
        reader = source.create_reader(SourceReaderContext(subtask_index=i, parallelism=old_p))
        if progress[i]:
            emitted += reader.poll(progress[i])
        pooled += reader.snapshot_splits()
    horizon = 2_000
    rest = []
    for j in range(new_p):
        mine = redistribute(pooled, j, new_p)
        assert mine, f"new subtask {j} of {new_p} got no split"
        got = [x for x in _indexes(mine, limit=4 * horizon) if x < horizon]
        assert got == sorted(got)
        rest += got
    assert sorted(emitted + rest) == list(range(horizon))  # nothing lost, nothing repeated


def _file_source(tmp_path, files: int, lines: int, *, gzip_some: bool = True):
    import gzip

    from strom.connectors.file_source import FileSource, StreamFormat

    expected = []
    for f in range(files):
        rows = [f"file{f}-line{n}" for n in range(lines)]
        expected += rows
        text = "\n".join(rows) + "\n"
        if gzip_some and f % 2:
            with gzip.open(tmp_path / f"part-{f}.txt.gz", "wt") as out:
                out.write(text)
        else:
            (tmp_path / f"part-{f}.txt").write_text(text)
    return FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path)).build(), expected


@pytest.mark.parametrize("old_p,new_p", [(2, 2), (2, 1), (2, 3)])
def test_file_source_resumes_mid_file_at_any_parallelism(tmp_path, old_p, new_p):
    from strom.connectors.base import SourceReaderContext

    source, expected = _file_source(tmp_path, files=5, lines=40)
    emitted, pooled = [], []
    for i in range(old_p):
        reader = source.create_reader(SourceReaderContext(subtask_index=i, parallelism=old_p))
        emitted += reader.poll(17 + 30 * i) or []  # stops inside a (possibly compressed) file
        pooled += reader.snapshot_splits()
        reader.close()
    rest = []
    for j in range(new_p):
        reader = source.create_reader(SourceReaderContext(subtask_index=j, parallelism=new_p))
        reader.restore_splits(pooled[j::new_p])  # the SourceOperator's default dealing
        while (batch := reader.poll(64)) is not None:
            rest += batch
        reader.close()
    assert sorted(emitted + rest) == sorted(expected)


def test_monitoring_file_source_restores_seen_files_and_offset(tmp_path):
    from strom.connectors.base import SourceReaderContext
    from strom.connectors.file_source import FileSource, StreamFormat

    for f in range(3):
        (tmp_path / f"in-{f}.txt").write_text("".join(f"{f}:{n}\n" for n in range(30)))
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .monitor_continuously(__import__("strom.common.time", fromlist=["Duration"]).Duration.of_millis(10))
        .build()
    )
    reader = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    first = reader.poll(45)
    position = reader.snapshot_position()
    reader.close()
    restored = source.create_reader(SourceReaderContext(subtask_index=0, parallelism=1))
    restored.restore_position(position)
    rest = []
    while len(first) + len(rest) < 90:
        rest += restored.poll(64) or []
    restored.close()
    assert sorted(first + rest) == sorted(f"{f}:{n}" for f in range(3) for n in range(30))
