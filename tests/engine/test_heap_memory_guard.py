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


def test_an_in_process_engine_holds_every_slot_so_its_limit_is_not_divided():
    conf = Configuration({"taskmanager.memory.process.size": "4 gb", "taskmanager.numberOfTaskSlots": 4})
    assert heap_memory_limit(conf, machine_bytes=10 * GB, slot_process=False) == HeapMemoryLimit(
        4 * GB, "taskmanager.memory.process.size 4096 MB"
    )


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
    assert f"over {limit_mb} MB = taskmanager.memory.process.size {limit_mb} MB:" in text  # in-process: not divided
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


SLOT_JOB = """
from strom.common import Configuration
from strom.datastream import StreamExecutionEnvironment

def payload(i):
    return (i, b"x" * 10_000)  # a new 10 kB value per key: 100k keys would hold ~1 GB of heap state

env = StreamExecutionEnvironment.get_execution_environment()
env.configure(Configuration({"taskmanager.memory.process.size": "600 mb", "restart-strategy.type": "none"}))
env.set_parallelism(1)
env.from_collection(range(100_000)).map(payload).key_by(lambda r: r[0]).reduce(lambda a, b: b) \\
    .filter(lambda r: False).print()
env.execute("heap state in a slot process")
"""


def test_a_slot_process_whose_heap_state_outgrows_its_share_fails_the_job_with_the_error(tmp_path):
    """A real TaskManager with 2 slots: each slot process may use 600 MB / 2 = 300 MB; the job would grow its slot
    process past 1 GB. It fails with the one-line error instead (exception history of the REST API)."""
    from tests.engine.cluster_testing import SessionCluster
    from tests.engine.test_cluster import submit

    path = tmp_path / "job.py"
    path.write_text(SLOT_JOB)
    cluster = SessionCluster(taskmanagers=1, slots=2, extra=("-D", "taskmanager.numberOfTaskSlots=2"))
    try:
        job_id = submit(cluster, str(path))
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=120) == "FAILED"
        entries = cluster.get(f"/jobs/{job_id}/exceptions")["exceptionHistory"]["entries"]
        traces = " ".join(e["stacktrace"] for e in entries)
        assert "HeapStateMemoryError: heap state of Keyed Reduce" in traces, traces[-2000:]
        assert "over 300 MB = taskmanager.memory.process.size 600 MB / 2 slots: use state.backend.type: rocksdb" \
            in traces, traces[-2000:]
    finally:
        cluster.close()
