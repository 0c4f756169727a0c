"""Slot worker memory does not grow with the record size: 1 MB records through a back-pressured job.

A session cluster of real processes (one TaskManager, two slots) runs the same job twice: a source
(parallelism 1) rebalancing records to a slow checksum map (parallelism 2: one subtask shares the
source's slot, an in-process channel; the other is in the second slot, a TCP channel), written by a
FileSink. First with tiny records, which measures the baseline of the slot workers (interpreter,
modules, job, sink); then with 1 MB records. The peak resident memory of each slot worker (VmHWM in
/proc) after the 1 MB run must stay within the baseline plus the configured network memory
(`taskmanager.memory.network.max`) plus the few records a task holds in hand while (de)serializing
one (the record, its pickled copy, the reassembled fragments and the unpickled batch: `IN_HAND`
records per task, two tasks in a slot). With buffers counted in records (1,024 per buffer, 10 per
channel) the 1 MB run would need gigabytes. Output is compared with a plain-Python computation of
each record's checksum.
"""

from __future__ import annotations

import os
import textwrap
import zlib

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

COUNT = 160
NETWORK_MAX = 8 << 20  # taskmanager.memory.network.max: the job needs ~12 buffers of 32 kb of it
BIG = 1 << 20
TINY = 64
IN_HAND = 4  # records a task holds while one moves through it (see the module docstring)
TASKS_PER_SLOT = 2


def record(i: int, size: int) -> bytes:
    return (i.to_bytes(4, "big") * (size // 4 + 1))[:size]


def job(tmp_path, size: int, out: str) -> str:
    path = tmp_path / f"job-{size}.py"
    path.write_text(
        textwrap.dedent(f"""
        import time, zlib
        from strom.common import Configuration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        SIZE = {size}

        def record(i):
            return (i.to_bytes(4, "big") * (SIZE // 4 + 1))[:SIZE]

        def slow_checksum(b):
            time.sleep(0.01)  # the slow sink: the source is back-pressured for the whole run
            return f"{{int.from_bytes(b[:4], 'big')}} {{zlib.crc32(b)}} {{len(b)}}"

        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(Configuration({{"taskmanager.memory.network.max": "{NETWORK_MAX}"}}))
        src = env.from_source(DataGeneratorSource(record, {COUNT}), WatermarkStrategy.no_watermarks(), "records")
        checks = src.set_parallelism(1).rebalance().map(slow_checksum).set_parallelism(2)
        sink = (FileSink.for_row_format({out!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        checks.sink_to(sink).set_parallelism(2)
        env.execute("records of {size} bytes")
    """)
    )
    return str(path)


def slot_workers(tm_pid: int) -> list[int]:
    """The TaskManager's slot processes (spawned children; not multiprocessing's resource tracker)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == tm_pid and b"spawn_main" in cmdline:
            pids.append(int(entry))
    return sorted(pids)


def peak_rss(pid: int) -> int:
    """The process's peak resident set size so far (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for process {pid}")


def outputs(out_dir) -> list[tuple[int, int, int]]:
    rows = []
    for root, _, files in os.walk(out_dir):
        for f in files:
            if not f.startswith("."):
                rows += [tuple(map(int, line.split())) for line in open(os.path.join(root, f))]
    return sorted(rows)  # type: ignore[arg-type]


def run(cluster: SessionCluster, tmp_path, size: int) -> list[tuple[int, int, int]]:
    out = tmp_path / f"out-{size}"
    job_id = submit(cluster, job(tmp_path, size, str(out)))
    assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=120) == "FINISHED"
    return outputs(out)


def test_slot_worker_memory_is_bounded_by_network_memory_not_record_size(tmp_path):
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        workers = wait_until(lambda: len(w := slot_workers(cluster.tms[0].pid)) == 2 and w, what="two slot workers")
        assert run(cluster, tmp_path, TINY) == [(i, zlib.crc32(record(i, TINY)), TINY) for i in range(COUNT)]
        baseline = {pid: peak_rss(pid) for pid in workers}
        assert run(cluster, tmp_path, BIG) == [(i, zlib.crc32(record(i, BIG)), BIG) for i in range(COUNT)]
        bound = NETWORK_MAX + IN_HAND * TASKS_PER_SLOT * BIG
        for pid in workers:
            grown = peak_rss(pid) - baseline[pid]
            print(f"slot worker {pid}: baseline {baseline[pid] >> 20} MB, grew {grown / 2**20:.1f} MB (1 MB records)")
            assert grown <= bound, f"slot worker {pid} grew by {grown >> 20} MB, beyond {bound >> 20} MB"
    finally:
        cluster.close()
