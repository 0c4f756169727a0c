"""The heap state memory guard: a job whose heap state outgrows its slot's share of the TaskManager's memory fails
with a one-line error naming the task, the figures and what to do, instead of the machine swapping.

The job-level tests bound the process a little above its current resident memory (the in-process engine runs in
this test process) and grow heap state by a few hundred MB; nothing near the machine's memory is ever used.
"""

from __future__ import annotations

import pytest
from strom.common import Configuration
from strom.datastream import StreamExecutionEnvironment
from strom.runtime.local_executor import JobExecutionError
from strom.runtime.state.heap.memory_guard import (
    HeapMemoryLimit,
    heap_memory_limit,
    over_limit_message,
    resident_bytes,
)

MB = 1024 * 1024
GB = 1024 * MB


def test_the_limit_is_the_task_heap_then_the_process_size_then_the_machine_per_slot():
    machine = 10 * GB
    both = Configuration({"taskmanager.memory.task.heap.size": "1 gb", "taskmanager.memory.process.size": "4 gb",
                          "taskmanager.numberOfTaskSlots": 2})
    assert heap_memory_limit(both, machine_bytes=machine) == HeapMemoryLimit(
        512 * MB, "taskmanager.memory.task.heap.size 1024 MB / 2 slots"
    )
    process = Configuration({"taskmanager.memory.process.size": "4 gb"})
    assert heap_memory_limit(process, machine_bytes=machine) == HeapMemoryLimit(
        4 * GB, "taskmanager.memory.process.size 4096 MB / 1 slot"
    )
    nothing = Configuration({"taskmanager.numberOfTaskSlots": 3})
    assert heap_memory_limit(nothing, machine_bytes=machine).bytes == int(machine * 0.9) // 3


def test_a_process_within_its_limit_is_left_alone_and_one_past_it_gets_the_error():
    limit = HeapMemoryLimit(100 * MB, "taskmanager.memory.process.size 100 MB / 1 slot")
    assert over_limit_message("Keyed Reduce (1/2)", 100 * MB, limit) is None
    message = over_limit_message("Keyed Reduce (1/2)", 150 * MB, limit)
    assert message == (
        "heap state of Keyed Reduce (1/2) uses 150 MB (the slot process's resident memory), over 100 MB = "
        "taskmanager.memory.process.size 100 MB / 1 slot: use state.backend.type: rocksdb or give the TaskManager "
        "more memory (taskmanager.memory.process.size)"
    )


def test_memory_keys_refuse_what_is_not_a_memory_size():
    with pytest.raises(Exception, match="taskmanager.memory.process.size"):
        Configuration({"taskmanager.memory.process.size": "lots"})


KEYS = 3_000_000  # a (key, count) tuple and a dict entry per key: several hundred MB of heap state


def _growing_job(backend: str, limit_mb: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"state.backend.type": backend, "taskmanager.memory.process.size": f"{limit_mb} mb",
                       "restart-strategy.type": "none"})
    )
    env.set_parallelism(1)
    (
        env.from_collection(range(KEYS))
        .key_by(lambda i: i)
        .reduce(lambda a, b: a + b)
        .filter(lambda v: False)
        .print()
    )
    return env


def test_heap_state_past_the_process_size_fails_the_job_with_the_error():
    limit_mb = resident_bytes() // MB + 150
    env = _growing_job("hashmap", limit_mb)
    with pytest.raises(JobExecutionError) as failure:
        env.execute("heap state grows")
    text = str(failure.value)
    assert "heap state of Keyed Reduce -> Filter -> Sink: Print to Std. Out (1/1) uses " in text, text
    assert f"over {limit_mb} MB = taskmanager.memory.process.size {limit_mb} MB / 1 slot" in text
    assert "use state.backend.type: rocksdb or give the TaskManager more memory" in text


def test_a_small_job_within_the_limit_runs_to_its_end():
    limit_mb = resident_bytes() // MB + 300
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration({"taskmanager.memory.process.size": f"{limit_mb} mb", "restart-strategy.type": "none"})
    )
    env.set_parallelism(1)
    out = env.from_collection(range(1000)).key_by(lambda i: i % 10).reduce(lambda a, b: a + b).execute_and_collect()
    got = list(out)
    assert len(got) == 1000 and max(got) == sum(i for i in range(1000) if i % 10 == 9)
