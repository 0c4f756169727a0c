"""Network memory and checkpoints under back pressure, on a local cluster of real processes.

    python -m benchmarks.network_memory [--records-20k 1500] [--records-1m 150] [--bp-records 1000]

1. Peak resident memory (VmHWM) of the slot workers running a back-pressured job (a source rebalancing
   to a slow checksum map, parallelism 2 over one TaskManager with two slots) with 20 KB and with 1 MB
   records, before and after buffers were bounded in bytes. "Before" is the old behaviour reproduced by
   configuration: buffers cut only at 1,024 records (`taskmanager.memory.segment-size: 1 gb`), so a buffer,
   a source batch and a channel's ten credits grow with the record size. "After" is the default 32 kb
   segment. A fresh cluster per figure, so that each peak is that run's.
2. Checkpoint duration under sustained back pressure (1,000-byte records, a map taking 10 ms per record,
   checkpoints every second): aligned vs unaligned (`execution.checkpointing.unaligned.enabled`), the
   completed checkpoints' end-to-end durations from the REST API.

Prints the figures (no assertions).
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.progress import step
from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit
from tests.engine.test_network_memory_rss import peak_rss, slot_workers

BEFORE = {"taskmanager.memory.segment-size": "1 gb", "taskmanager.memory.network.max": "64 gb"}
AFTER: dict[str, str] = {}


def rss_job(path: Path, *, size: int, count: int, conf: dict[str, str]) -> str:
    path.write_text(
        textwrap.dedent(f"""
        import time, zlib
        from strom.common import Configuration, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource

        def record(i):
            return (i.to_bytes(4, "big") * ({size} // 4 + 1))[:{size}]

        def slow_checksum(b):
            time.sleep(0.002)
            return zlib.crc32(b)

        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(record, {count}), WatermarkStrategy.no_watermarks(), "records")
        src.set_parallelism(1).rebalance().map(slow_checksum).set_parallelism(2).filter(lambda c: False)
        env.execute("rss")
    """)
    )
    return str(path)


def peak_slot_rss_mb(size: int, count: int, conf: dict[str, str]) -> tuple[float, float]:
    """(largest slot worker peak RSS in MB, run seconds) of one run on a fresh cluster."""
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        workers = wait_until(lambda: len(w := slot_workers(cluster.tms[0].pid)) == 2 and w, what="slot workers")
        with tempfile.TemporaryDirectory() as d:
            start = time.perf_counter()
            job_id = submit(cluster, rss_job(Path(d) / "job.py", size=size, count=count, conf=conf))
            state = cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=600)
            seconds = time.perf_counter() - start
            if state != "FINISHED":
                raise SystemExit(f"the {size}-byte job ended {state}")
        return max(peak_rss(pid) for pid in workers) / 2**20, seconds
    finally:
        cluster.close()


def checkpoint_durations(records: int, *, unaligned: bool) -> list[float]:
    """End-to-end durations (s) of the checkpoints completed while a back-pressured job ran."""
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        with tempfile.TemporaryDirectory() as d:
            conf = {
                "execution.checkpointing.interval": "1 s",
                "execution.checkpointing.unaligned.enabled": unaligned,
                "state.checkpoints.dir": f"file://{d}/checkpoints",
                "state.checkpoints.num-retained": 100,
            }
            path = Path(d) / "bp.py"
            path.write_text(
                textwrap.dedent(f"""
                import time
                from strom.common import Configuration, WatermarkStrategy
                from strom.datastream import StreamExecutionEnvironment
                from strom.datastream.connectors import DataGeneratorSource

                def slow(b):
                    time.sleep(0.01)
                    return len(b)

                env = StreamExecutionEnvironment.get_execution_environment()
                env.configure(Configuration({conf!r}))
                src = env.from_source(DataGeneratorSource(lambda i: bytes(1000), {records}),
                                      WatermarkStrategy.no_watermarks(), "records").set_parallelism(1)
                src.rebalance().map(slow).set_parallelism(1).slot_sharing_group("slow").filter(lambda n: False)
                env.execute("back pressure")
            """)
            )
            job_id = submit(cluster, str(path))
            cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=600)
            history = cluster.get(f"/jobs/{job_id}/checkpoints")["history"]
            return sorted(c["end_to_end_duration"] / 1000 for c in history if c["status"] == "COMPLETED")
    finally:
        cluster.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records-20k", type=int, default=1500)
    ap.add_argument("--records-1m", type=int, default=150)
    ap.add_argument("--bp-records", type=int, default=1000)
    args = ap.parse_args(argv)

    print("slot worker peak RSS (largest of the two slots), back-pressured job")
    for size, count, label in ((20 * 1024, args.records_20k, "20 KB"), (1 << 20, args.records_1m, "1 MB")):
        for name, conf in (("before (1,024-record buffers)", BEFORE), ("after (32 kb segments)", AFTER)):
            with step(f"{label} records x {count}, {name}"):
                mb, seconds = peak_slot_rss_mb(size, count, conf)
            print(f"  {label} records x {count}, {name:<30} {mb:8.1f} MB   ({seconds:.1f} s)")

    print(f"checkpoint duration under sustained back pressure ({args.bp_records} records of 1,000 bytes, 10 ms each)")
    for unaligned in (False, True):
        with step(f"checkpoints under back pressure, {'unaligned' if unaligned else 'aligned'}"):
            durations = checkpoint_durations(args.bp_records, unaligned=unaligned)
        name = "unaligned" if unaligned else "aligned"
        if durations:
            avg = sum(durations) / len(durations)
            print(f"  {name:<10} {len(durations)} completed: min {durations[0]:.2f} s, avg {avg:.2f} s, "
                  f"max {durations[-1]:.2f} s")
        else:
            print(f"  {name:<10} no checkpoint completed while the job ran")


if __name__ == "__main__":
    main()
