"""Sources restored at another parallelism: index splits pooled and dealt out again.

Properties (hypothesis) of the split arithmetic against plain sets of indexes, and jobs whose
keyed sums continue exactly after a checkpoint taken at one source parallelism is restored at
another (test_savepoints.py: a savepoint of a job whose source ran at 2 restored at 1 and 3)."""

from __future__ import annotations

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
