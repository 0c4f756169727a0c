"""Savepoint history pruning by count and age, keeping the newest and the protected ones."""

from __future__ import annotations

from datetime import timedelta

from strom_operator.crd.status import Savepoint
from strom_operator.lifecycle.savepoint_history import format_age, prune_savepoint_history, trigger_id

from tests.operator.fakes import T0

DAY = 86400.0


def _history(*hours_ago: float) -> tuple[Savepoint, ...]:
    return tuple(Savepoint(f"s3://b/sp-{h}", T0 - timedelta(hours=h), "periodic") for h in hours_ago)


def test_count_keeps_the_newest():
    kept, disposed = prune_savepoint_history(_history(5, 4, 3, 2, 1), max_history=2, max_age_s=DAY, now=T0)
    assert [s.path for s in kept] == ["s3://b/sp-2", "s3://b/sp-1"]
    assert [s.path for s in disposed] == ["s3://b/sp-5", "s3://b/sp-4", "s3://b/sp-3"]


def test_age_prunes_old_ones_but_never_the_newest():
    kept, disposed = prune_savepoint_history(_history(50, 30), max_history=10, max_age_s=DAY, now=T0)
    assert [s.path for s in kept] == ["s3://b/sp-30"] and [s.path for s in disposed] == ["s3://b/sp-50"]


def test_protected_paths_are_kept():
    kept, disposed = prune_savepoint_history(_history(50, 3, 2), max_history=1, max_age_s=DAY, now=T0,
                                             protected={"s3://b/sp-50"})
    assert [s.path for s in kept] == ["s3://b/sp-50", "s3://b/sp-2"]
    assert [s.path for s in disposed] == ["s3://b/sp-3"]


def test_empty_history():
    assert prune_savepoint_history((), max_history=1, max_age_s=1, now=T0) == ((), ())


def test_trigger_ids_are_flink_shaped_and_deterministic():
    a = trigger_id("wc", "upgrade", T0)
    assert len(a) == 32 and int(a, 16) >= 0 and a == trigger_id("wc", "upgrade", T0)
    assert a != trigger_id("wc", "manual", T0)


def test_format_age():
    assert [format_age(s) for s in (5, 120, 7200, 3 * DAY)] == ["5 s", "2 min", "2 h", "3 d"]
