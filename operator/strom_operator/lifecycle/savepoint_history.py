"""Savepoint bookkeeping: trigger ids, recording completed savepoints, pruning the history.

Pruning returns the paths to dispose of; deleting the files is the handler's I/O. The latest
completed savepoint is never pruned, nor one the job restored from or is about to restore from:
those are the state that must not be lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime

from strom_operator.crd.status import FlinkJobStatus, PendingSavepoint, Savepoint, format_time


def trigger_id(name: str, kind: str, now: datetime) -> str:
    """A Flink trigger id (32 hex digits), fixed by what the trigger is for and when it was decided.

    It is written to status before the trigger is sent; re-sending the same id after an
    operator restart does not start a second savepoint.
    """
    return hashlib.sha256(f"{name}|{kind}|{format_time(now)}".encode()).hexdigest()[:32]


def with_pending(status: FlinkJobStatus, name: str, kind: str, now: datetime, nonce: int | None = None
                 ) -> FlinkJobStatus:
    pending = PendingSavepoint(trigger_id(name, kind, now), kind, now, nonce)
    return replace(status, savepoints=replace(status.savepoints, pending=pending, last_triggered_at=now))


def record_completed(status: FlinkJobStatus, path: str, now: datetime) -> FlinkJobStatus:
    """The pending savepoint completed at `path`: it becomes the last one and joins the history."""
    pending = status.savepoints.pending
    kind = pending.kind if pending else "manual"
    savepoint = Savepoint(path, now, kind)
    nonce = pending.nonce if pending is not None and pending.nonce is not None else status.savepoints.last_trigger_nonce
    return replace(status, savepoints=replace(status.savepoints, last=savepoint, pending=None,
                                              history=status.savepoints.history + (savepoint,),
                                              last_trigger_nonce=nonce))


def clear_pending(status: FlinkJobStatus) -> FlinkJobStatus:
    """The pending savepoint failed: forget it (a manual one's nonce counts as answered)."""
    pending = status.savepoints.pending
    nonce = pending.nonce if pending is not None and pending.nonce is not None else status.savepoints.last_trigger_nonce
    return replace(status, savepoints=replace(status.savepoints, pending=None, last_trigger_nonce=nonce))


def prune_savepoint_history(history: tuple[Savepoint, ...], *, max_history: int, max_age_s: float,
                            now: datetime, protected: Collection[str] = ()) -> tuple[tuple[Savepoint, ...],
                                                                                    tuple[Savepoint, ...]]:
    """(kept, disposed): beyond `max_history` newest or older than `max_age_s` goes, except the
    newest savepoint and `protected` paths. Both keep the history's order (oldest first)."""
    if not history:
        return (), ()
    newest = max(history, key=lambda s: s.timestamp)
    by_age = sorted(history, key=lambda s: s.timestamp, reverse=True)
    within_count = {id(s) for s in by_age[:max(1, max_history)]}
    kept: list[Savepoint] = []
    disposed: list[Savepoint] = []
    for s in history:
        too_old = (now - s.timestamp).total_seconds() > max_age_s
        if s is newest or s.path in protected or (id(s) in within_count and not too_old):
            kept.append(s)
        else:
            disposed.append(s)
    return tuple(kept), tuple(disposed)


def format_age(seconds: float) -> str:
    """'45 s', '12 min', '3 h', '2 d': the coarse age shown in status.restoredFrom."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h"
    return f"{s // 86400} d"
