"""Index splits: the remaining work of index-based sources (number sequence, data generator) as
arithmetic progressions, so that a checkpoint taken at one parallelism restores at another.

A split is `(next, step, end)`: the indexes next, next + step, ... below `end` (None: forever).
A reader works through its splits in increasing index order; its checkpointed state is its splits
with `next` advanced. Restoring at another parallelism pools the splits of all old subtasks and
deals them out again (`redistribute`); an unbounded progression is cut into interleaved ones
(`(s, p)` -> `(s, 2p), (s + p, 2p)`) when there are fewer splits than subtasks, so a scale-up
gives every new subtask work. The union of indexes never changes: nothing is lost or repeated.
"""

from __future__ import annotations

from collections.abc import Iterable

Split = tuple[int, int, int | None]  # (next index, step, end exclusive or None)


def is_exhausted(split: Split) -> bool:
    nxt, _step, end = split
    return end is not None and nxt >= end


def remaining(split: Split) -> int | None:
    nxt, step, end = split
    return None if end is None else max(0, -(-(end - nxt) // step))


def _halve(split: Split) -> list[Split]:
    """Two interleaved progressions with the same indexes (a split of one index stays whole)."""
    nxt, step, end = split
    if end is not None and remaining(split) is not None and remaining(split) < 2:  # type: ignore[operator]
        return [split]
    return [(nxt, 2 * step, end), (nxt + step, 2 * step, end)]


def redistribute(splits: Iterable[Split], subtask_index: int, parallelism: int) -> list[Split]:
    """The share of new subtask `subtask_index` of `parallelism` of the pooled `splits`;
    every subtask computes the same dealing, so each split goes to exactly one of them."""
    pool = sorted(s for s in splits if not is_exhausted(s))
    # cut the largest splits until every subtask can get one (bounded ones only while they have >= 2 indexes)
    for _ in range(64):
        if len(pool) >= parallelism or not pool:
            break
        widest = max(pool, key=lambda s: (remaining(s) is None, remaining(s) or 0))
        halves = _halve(widest)
        if len(halves) == 1:
            break
        pool.remove(widest)
        pool = sorted([*pool, *halves])
    return [s for k, s in enumerate(pool) if k % parallelism == subtask_index]


class IndexSplitCursor:
    """Hands out the indexes of a set of splits in increasing order, a batch at a time."""

    def __init__(self, splits: Iterable[Split]) -> None:
        self.splits: list[Split] = sorted(s for s in splits if not is_exhausted(s))

    def take(self, n: int) -> list[int] | None:
        """Up to `n` next indexes; None when every split is exhausted."""
        splits = self.splits
        if not splits:
            return None
        if len(splits) == 1:  # the common case: one contiguous or strided range
            nxt, step, end = splits[0]
            stop = nxt + n * step if end is None else min(nxt + n * step, end)
            out = list(range(nxt, stop, step))
            nxt += len(out) * step
            if end is not None and nxt >= end:
                splits.clear()
            else:
                splits[0] = (nxt, step, end)
            return out
        out: list[int] = []
        rounds = self._whole_rounds(n)
        if rounds:
            # interleaved progressions that caught up with each other (e.g. after a scale-down): whole
            # rounds of one index per split, in order, without a per-index choice
            step = splits[0][1]
            nexts = sorted(s[0] for s in splits)
            out = [x + r * step for r in range(rounds) for x in nexts]
            self.splits = splits = sorted((nxt + rounds * step, step, end) for nxt, step, end in splits)
        while len(out) < n and splits:
            # the split with the smallest next index runs until it would pass the next one's
            k = min(range(len(splits)), key=lambda j: splits[j][0])
            nxt, step, end = splits[k]
            others = min((s[0] for j, s in enumerate(splits) if j != k), default=None)
            limit = nxt + (n - len(out)) * step
            if others is not None:
                limit = min(limit, others + 1)
            if end is not None:
                limit = min(limit, end)
            chunk = range(nxt, limit, step)
            out.extend(chunk)
            nxt += len(chunk) * step
            if end is not None and nxt >= end:
                splits.pop(k)
            else:
                splits[k] = (nxt, step, end)
        return out

    def _whole_rounds(self, n: int) -> int:
        """How many rounds of one index per split can be taken at once: every split unbounded with
        the same step and all next indexes within one step of each other."""
        splits = self.splits
        step = splits[0][1]
        if any(end is not None or st != step for _, st, end in splits):
            return 0
        lo, hi = min(s[0] for s in splits), max(s[0] for s in splits)
        return n // len(splits) if hi - lo < step else 0

    def remaining(self) -> int | None:
        counts = [remaining(s) for s in self.splits]
        return None if any(c is None for c in counts) else sum(counts)  # type: ignore[misc]
