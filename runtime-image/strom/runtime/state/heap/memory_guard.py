"""Heap state memory guard: a slot process whose heap state outgrows its share of the TaskManager's memory fails
its heap-state tasks with a one-line error, before the machine swaps or the container is OOM-killed.

Flink's heap state lives in the JVM heap, so an outgrown TaskManager ends in `OutOfMemoryError: Java heap space`.
Python has no heap bound, so this guard is the bound: every CHECK_INTERVAL_S a daemon thread compares the
process's resident memory with the slot's share of Flink's memory keys, and on the first crossing submits a
failure to the mailbox of every task of the process that keeps keyed state on the heap:

    taskmanager.memory.task.heap.size / taskmanager.numberOfTaskSlots     when set, else
    taskmanager.memory.process.size   / taskmanager.numberOfTaskSlots     when set, else
    90% of the machine's (or the container's cgroup) memory / taskmanager.numberOfTaskSlots

divided by the slots only in a slot process (a child process the TaskManager started); the in-process engine
(`strom run`'s embedded mode, tests) holds every slot in one process, which gets the whole.

The task fails as any task does (restart strategy, exception history), with the error naming the task, the
figures, the key that set the bound, and what to do: move the state to RocksDB or give the TaskManager more memory.
The decision (`heap_memory_limit`, `over_limit_message`) is pure; the thread only reads /proc and submits.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from strom.common import config_options as opts

CHECK_INTERVAL_S = 0.25
MACHINE_SHARE = 0.9  # of the machine's memory when no key bounds the TaskManager
_MB = 1024 * 1024


class HeapStateMemoryError(MemoryError):
    """Heap state outgrew the memory its slot process may use."""


@dataclass(frozen=True, slots=True)
class HeapMemoryLimit:
    bytes: int
    source: str  # what set it, e.g. "taskmanager.memory.process.size 1 gb / 2 slots"


def _read(config: Any, opt: Any) -> Any:
    raw = config.get(opt.key) if config is not None else None
    return opt.default if raw is None else opt.parse(raw)


def heap_memory_limit(config: Any, *, machine_bytes: int, slot_process: bool = True) -> HeapMemoryLimit:
    """The resident memory a slot process with heap state may use (see the module docstring); `slot_process`
    False: the process holds every slot."""
    slots = max(1, int(_read(config, opts.TASK_SLOTS))) if slot_process else 1
    per = f" / {slots} slot{'s' if slots > 1 else ''}" if slot_process else ""
    for opt in (opts.TASK_HEAP_MEMORY, opts.PROCESS_MEMORY):
        size = int(_read(config, opt))
        if size > 0:
            return HeapMemoryLimit(size // slots, f"{opt.key} {size // _MB} MB{per}")
    size = int(machine_bytes * MACHINE_SHARE)
    return HeapMemoryLimit(size // slots, f"90% of this machine's memory ({size // _MB} MB){per}")


def over_limit_message(task: str, rss_bytes: int, limit: HeapMemoryLimit) -> str | None:
    """The failure of `task` when its process uses more than the limit, else None."""
    if rss_bytes <= limit.bytes:
        return None
    return (
        f"heap state of {task} uses {rss_bytes // _MB} MB (the slot process's resident memory), over "
        f"{limit.bytes // _MB} MB = {limit.source}: use state.backend.type: rocksdb or give the TaskManager more "
        f"memory (taskmanager.memory.process.size)"
    )


def machine_memory_bytes() -> int:
    """Physical memory, or the container's cgroup limit when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                raw = f.read().strip()
        except OSError:
            continue
        if raw.isdigit():
            total = min(total, int(raw))
    return total


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Watched:
    __slots__ = ("task", "ctx", "backend", "limit")

    def __init__(self, task: str, ctx: Any, backend: Any, limit: HeapMemoryLimit) -> None:
        self.task, self.ctx, self.limit = task, ctx, limit
        self.backend = weakref.ref(backend)


class HeapMemoryGuard:
    """The process's watcher thread and the heap-state tasks it watches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: list[_Watched] = []
        self._thread: threading.Thread | None = None

    def watch(self, task: str, ctx: Any, backend: Any, limit: HeapMemoryLimit) -> None:
        with self._lock:
            self._watched.append(_Watched(task, ctx, backend, limit))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="heap-memory-guard", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        stop = threading.Event()
        while True:
            stop.wait(CHECK_INTERVAL_S)
            with self._lock:
                # a task's backend goes with its operators: a closed task drops out
                self._watched = [w for w in self._watched if w.backend() is not None]
                watched = list(self._watched)
            if not watched:
                continue
            try:
                rss = resident_bytes()
            except OSError:
                return  # no /proc: nothing to guard with
            failed = []
            for w in watched:
                message = over_limit_message(w.task, rss, w.limit)
                submit = getattr(w.ctx, "mailbox", None)
                if message is not None and submit is not None:
                    submit(_failure(message))
                    failed.append(w)
            if failed:
                with self._lock:  # once per task: its restart registers anew
                    self._watched = [w for w in self._watched if w not in failed]


def _failure(message: str) -> Any:
    def fail() -> None:
        raise HeapStateMemoryError(message)

    return fail


_GUARD = HeapMemoryGuard()


def watch_heap_state(ctx: Any, backend: Any) -> None:
    """Watch the heap backend an operator of `ctx`'s task just got (until the backend is gone)."""
    slot_process = multiprocessing.parent_process() is not None  # a slot worker, started by its TaskManager
    limit = heap_memory_limit(ctx.config, machine_bytes=machine_memory_bytes(), slot_process=slot_process)
    task = f"{ctx.task_name} ({ctx.subtask_index + 1}/{ctx.parallelism})"
    _GUARD.watch(task, ctx, backend, limit)
