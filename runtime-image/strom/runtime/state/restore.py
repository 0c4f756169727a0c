"""The one restore path of keyed state, for every backend.

`restore_keyed` takes the snapshots of ALL old subtasks of an operator and keeps the key groups
of the backend's own range, so state restores at any parallelism (rescaling). In order:
1. checks: one operator uid; the same max parallelism (it fixes which key group a key belongs
   to); ranges that neither overlap nor leave a gap in the new range;
2. the snapshots' states are declared in the backend, refusing a kind or TTL flag that differs;
3. per snapshot, the backend may take it in its own format (`restore_native`: RocksDB files);
   otherwise its canonical form (`snapshot.canonical()`) is walked by key group and each group
   in range is written (`write_key_group`);
4. the timers of the key groups in range are registered with the timer service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from strom.common.key_groups import KeyGroupRange, assign_to_key_group
from strom.runtime.state.api import StateRestoreError, Timer, TimerRegistry, describe_state
from strom.runtime.state.snapshots import (
    KeyGroupState,
    SerializedKeyedState,
    StateMeta,
    deserialize_key_group,
    key_groups_of,
)


def restore_keyed(backend: Any, timer_service: TimerRegistry | None, snapshots: Sequence[Any]) -> None:
    """Restore the key groups of `backend.key_group_range` from the snapshots of all old subtasks.

    Call it before the operator opens (as Flink's initializeState), on an empty backend.
    Restored processing-time timers are scheduled as usual, so overdue ones fire at the
    next run of the processing-time service."""
    if not snapshots:
        return
    uid = common_uid(snapshots)
    check_max_parallelism(uid, backend.max_parallelism, snapshots)
    rng = backend.key_group_range
    check_coverage(uid, rng, snapshots)
    if not backend.operator_uid:
        backend.operator_uid = uid
    tables = declare_states(uid, backend.tables, snapshots, backend.new_table)
    saved_key = backend.current_key
    try:
        whole = len(snapshots) == 1 and snapshots[0].key_group_range == rng
        for snap in snapshots:
            timers = backend.restore_native(snap, whole=whole)
            if timers is not None:
                _register_timers(uid, backend, timer_service, *timers, rng=rng)
                continue
            canon = snap.canonical()
            serialized = isinstance(canon, SerializedKeyedState)
            parts: dict[int, Any] = canon.key_groups if serialized else key_groups_of(canon)
            for g, part in parts.items():
                if g not in rng:
                    continue
                if g not in canon.key_group_range:
                    raise StateRestoreError(
                        f"operator uid {uid!r}: a snapshot of key groups {canon.key_group_range} holds key group {g}"
                    )
                state: KeyGroupState = (
                    deserialize_key_group(part, operator_uid=uid, key_group=g) if serialized else part
                )
                for name in state.entries:
                    if name not in tables:
                        raise StateRestoreError(
                            f"operator uid {uid!r}: the snapshot has entries of undeclared state {name!r}"
                        )
                backend.write_key_group(g, state.entries, copy=not serialized)
                _register_timers(uid, backend, timer_service, state.event_timers, state.processing_timers)
    finally:
        backend.current_key = saved_key


def _register_timers(
    uid: str,
    backend: Any,
    timer_service: TimerRegistry | None,
    event: list[Timer],
    processing: list[Timer],
    *,
    rng: KeyGroupRange | None = None,
) -> None:
    """Register restored timers (only those of key groups in `rng`, when given) for their keys."""
    if rng is not None:
        max_p = backend.max_parallelism
        event = [t for t in event if assign_to_key_group(t[1], max_p) in rng]
        processing = [t for t in processing if assign_to_key_group(t[1], max_p) in rng]
    if not (event or processing):
        return
    if timer_service is None:
        raise StateRestoreError(f"operator uid {uid!r}: the snapshot has timers but the operator has no timer service")
    for ts, key, ns in event:
        backend.current_key = key
        timer_service.register_event_time_timer(ns, ts)
    for ts, key, ns in processing:
        backend.current_key = key
        timer_service.register_processing_time_timer(ns, ts)


# -- checks --------------------------------------------------------------------------------------
def common_uid(snapshots: Sequence[Any]) -> str:
    uids = sorted({s.operator_uid for s in snapshots})
    if len(uids) != 1:
        raise StateRestoreError(f"keyed snapshots of different operators restored together: uids {uids}")
    return uids[0]  # type: ignore[no-any-return]


def check_max_parallelism(uid: str, max_parallelism: int, snapshots: Sequence[Any]) -> None:
    for s in snapshots:
        if s.max_parallelism != max_parallelism:
            raise StateRestoreError(
                f"operator uid {uid!r}: the snapshot was taken with max parallelism {s.max_parallelism}, but the "
                f"operator now has max parallelism {max_parallelism}; the max parallelism of an operator with keyed "
                f"state cannot change (set it to {s.max_parallelism})"
            )


def check_coverage(uid: str, rng: KeyGroupRange, snapshots: Sequence[Any]) -> None:
    """The old subtasks' ranges must not overlap and must cover the new range: else state is lost or doubled."""
    ranges = sorted((s.key_group_range for s in snapshots), key=lambda r: r.start)
    for a, b in zip(ranges, ranges[1:], strict=False):
        if b.start <= a.end:
            raise StateRestoreError(
                f"operator uid {uid!r}: snapshots of overlapping key groups {a} and {b}; "
                "were snapshots of different checkpoints mixed?"
            )
    covered = sum(len(KeyGroupRange(max(r.start, rng.start), min(r.end, rng.end))) for r in ranges)
    if covered != len(rng):
        raise StateRestoreError(
            f"operator uid {uid!r}: key groups {rng} are not all in the given snapshots "
            f"(they hold {[(r.start, r.end) for r in ranges]}); is a subtask's snapshot missing?"
        )


def declare_states(uid: str, tables: dict[str, Any], snapshots: Sequence[Any], make_table: Any) -> dict[str, Any]:
    """Declare the states of `snapshots` in a backend's `tables` (by name; `make_table(name, kind, ttl)`
    for new ones), refusing a state whose kind or TTL setting differs between snapshots or from the one
    already declared."""
    metas: dict[str, StateMeta] = {}
    for s in snapshots:
        for meta in s.states:
            seen = metas.setdefault(meta.name, meta)
            if seen != meta:
                raise StateRestoreError(
                    f"operator uid {uid!r}: state {meta.name!r} is {describe_state(seen.kind, seen.ttl)} in one "
                    f"subtask's snapshot and {describe_state(meta.kind, meta.ttl)} in another"
                )
    for meta in metas.values():
        table = tables.get(meta.name)
        if table is None:
            tables[meta.name] = make_table(meta.name, meta.kind, meta.ttl)
        elif table.kind != meta.kind or table.ttl != meta.ttl:
            raise StateRestoreError(
                f"operator uid {uid!r}: state {meta.name!r} was snapshotted as {describe_state(meta.kind, meta.ttl)} "
                f"state but is declared as {describe_state(table.kind, table.ttl)} state; a state's kind and "
                "TTL setting cannot change for the same name (use a new state name)"
            )
    return tables
