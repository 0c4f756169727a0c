"""The resource manager: registered TaskManagers, their slots, heartbeats.

A slot is free or allocated to one job (slot sharing puts one subtask of every vertex of a
slot sharing group into it). A TaskManager is lost when its connection drops or its
heartbeat is older than `heartbeat.timeout`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class TaskManagerRecord:
    tm_id: str
    host: str
    slots: dict[int, int]  # slot index -> data port
    writer: Any  # asyncio.StreamWriter of the RPC connection
    registered_at: float = field(default_factory=time.time)
    last_heartbeat: float = field(default_factory=time.monotonic)
    allocated: dict[int, str] = field(default_factory=dict)  # slot index -> job id
    metrics: Any = None  # the latest MetricsSnapshot the TaskManager reported

    @property
    def free_slots(self) -> list[int]:
        return [i for i in sorted(self.slots) if i not in self.allocated]


@dataclass(frozen=True, slots=True)
class SlotRef:
    tm_id: str
    slot_index: int


class ResourceManager:
    def __init__(self, *, heartbeat_timeout_s: float) -> None:
        self.taskmanagers: dict[str, TaskManagerRecord] = {}
        self.heartbeat_timeout_s = heartbeat_timeout_s

    def register(self, record: TaskManagerRecord) -> TaskManagerRecord | None:
        """Add or replace a TaskManager; returns the replaced record (its slots are gone)."""
        old = self.taskmanagers.get(record.tm_id)
        self.taskmanagers[record.tm_id] = record
        return old

    def heartbeat(self, tm_id: str) -> None:
        tm = self.taskmanagers.get(tm_id)
        if tm is not None:
            tm.last_heartbeat = time.monotonic()

    def remove(self, tm_id: str) -> TaskManagerRecord | None:
        return self.taskmanagers.pop(tm_id, None)

    def expired(self, now: float | None = None) -> list[str]:
        now = time.monotonic() if now is None else now
        return [t.tm_id for t in self.taskmanagers.values() if now - t.last_heartbeat > self.heartbeat_timeout_s]

    def total_slots(self) -> int:
        return sum(len(t.slots) for t in self.taskmanagers.values())

    def free_slot_count(self) -> int:
        return sum(len(t.free_slots) for t in self.taskmanagers.values())

    def allocate(self, job_id: str, count: int) -> list[SlotRef] | None:
        """`count` free slots for a job, spread over TaskManagers round-robin, or None."""
        if self.free_slot_count() < count:
            return None
        pools = [
            [(t.tm_id, i) for i in t.free_slots] for t in sorted(self.taskmanagers.values(), key=lambda t: t.tm_id)
        ]
        chosen: list[SlotRef] = []
        while len(chosen) < count:
            for pool in pools:
                if pool and len(chosen) < count:
                    tm_id, idx = pool.pop(0)
                    chosen.append(SlotRef(tm_id, idx))
        for ref in chosen:
            self.taskmanagers[ref.tm_id].allocated[ref.slot_index] = job_id
        return chosen

    def release(self, job_id: str) -> None:
        for t in self.taskmanagers.values():
            for idx in [i for i, j in t.allocated.items() if j == job_id]:
                del t.allocated[idx]
