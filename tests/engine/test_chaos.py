"""Chaos: exactly-once under kill -9 of slot processes, TaskManagers and the JobManager.

A keyed, windowed job (event-time tumbling windows: count and sum per key) writes through an
exactly-once FileSink; its source is a deterministic, rate-limited generator; checkpoints every
500 ms; two TaskManagers x two slots; JobManager high availability on the same storage as the
checkpoints. While it runs, at random moments (seeded, printed), one of a slot process, a whole
TaskManager (then replaced) or the JobManager (then restarted on its ports) is killed with
SIGKILL, five times, each kind at least once, each kill after the job made progress (a new
checkpoint completed). The published output must equal the plain-Python reference exactly:
nothing lost, nothing duplicated. Runs on the heap backend with file:// storage and on RocksDB
(incremental) with s3:// storage on a real local S3 server.
"""

from __future__ import annotations

import os
import random
import signal
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.chaos_testing import completed_since, published, running
from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.s3_server import s3_server_fixture  # noqa: F401  (registers `s3_server`)
from tests.engine.test_cluster import submit

COUNT = 30_000
RATE = 1_000.0  # events/s: ~30 s of input, so that five failures and recoveries happen while it runs
KEYS = 7
WINDOW_MS = 1_000
KILLS = 5


def windowed_job(tmp_path: Path, out: Path, conf: dict[str, Any]) -> str:
    job = tmp_path / "chaos_job.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Duration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner
        from strom.datastream.window import TumblingEventTimeWindows

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e[1])
        src = env.from_source(DataGeneratorSource(lambda i: (i % {KEYS}, i), {COUNT}, {RATE!r}), strategy,
                              "numbers").uid("numbers")
        windows = (src.map(lambda e: (e[0], e[1] // {WINDOW_MS}, 1, e[1])).uid("tag")
                   .key_by(lambda t: t[0])
                   .window(TumblingEventTimeWindows.of(Duration.of_millis({WINDOW_MS})))
                   .reduce(lambda a, b: (a[0], a[1], a[2] + b[2], a[3] + b[3])).uid("windows"))
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        windows.map(lambda t: " ".join(map(str, t))).uid("format").sink_to(sink).uid("sink")
        env.execute("chaos")
    """)
    )
    return str(job)


def reference() -> Counter[str]:
    windows: dict[tuple[int, int], list[int]] = {}
    for i in range(COUNT):
        w = windows.setdefault((i % KEYS, i // WINDOW_MS), [0, 0])
        w[0] += 1
        w[1] += i
    return Counter(f"{k} {w} {c} {s}" for (k, w), (c, s) in windows.items())


def slot_processes(tm_pid: int) -> list[int]:
    """The slot worker processes (multiprocessing spawn children) of a TaskManager."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == tm_pid and b"spawn_main" in cmdline:
            pids.append(int(entry))
    return pids


@pytest.mark.parametrize("backend,storage", [("hashmap", "file"), ("rocksdb", "s3")])
def test_exactly_once_output_under_repeated_kill_9(tmp_path, backend, storage, request):
    conf: dict[str, Any] = {
        "execution.checkpointing.interval": "500 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "50",
        "restart-strategy.fixed-delay.delay": "200 ms",
        "state.backend.type": backend,
    }
    cluster_conf: dict[str, Any] = {"high-availability.type": "file"}
    if storage == "s3":
        s3 = request.getfixturevalue("s3_server")
        prefix = f"s3://{s3.bucket}/chaos-{tmp_path.name}"
        conf.update(s3.config(), **{"state.checkpoints.dir": f"{prefix}/chk", "state.backend.incremental": "true"})
        cluster_conf.update(s3.config(), **{"high-availability.storageDir": f"{prefix}/ha"})
    else:
        conf["state.checkpoints.dir"] = f"file://{tmp_path / 'chk'}"
        cluster_conf["high-availability.storageDir"] = f"file://{tmp_path / 'ha'}"
    extra = tuple(arg for k, v in cluster_conf.items() for arg in ("-D", f"{k}={v}"))
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    victims_kinds = ["slot", "taskmanager", "jobmanager"]
    kinds = victims_kinds + [rng.choice(victims_kinds) for _ in range(KILLS - len(victims_kinds))]
    rng.shuffle(kinds)
    print(f"chaos seed {seed}: {kinds}")
    out = tmp_path / "out"
    cluster = SessionCluster(taskmanagers=2, slots=2, extra=extra)
    try:
        job_id = submit(cluster, windowed_job(tmp_path, out, conf))
        killed_at_ms = -1
        for kind in kinds:
            wait_until(
                lambda since=killed_at_ms: running(cluster, job_id) and completed_since(cluster, job_id, since),
                timeout=180,  # a restore (RocksDB from S3) on a loaded 2-core machine can take a while
                what=f"progress (a checkpoint triggered after the previous kill) before killing a {kind}",
            )
            time.sleep(rng.uniform(0.0, 0.6))  # a random moment, not a wait for a condition
            state = cluster.job_state(job_id)
            assert state == "RUNNING", (
                f"the job is {state} before the {kind} was killed (chaos seed {seed}: {kinds}); "
                f"exceptions: {cluster.get(f'/jobs/{job_id}/exceptions')}"
            )
            killed_at_ms = int(time.time() * 1000)
            if kind == "slot":
                victims = [p for tm in cluster.tms if tm.poll() is None for p in slot_processes(tm.pid)]
                os.kill(rng.choice(victims), signal.SIGKILL)
            elif kind == "taskmanager":
                alive = [tm for tm in cluster.tms if tm.poll() is None]
                cluster.kill_taskmanager(rng.choice(alive))
                cluster.add_taskmanager(2)
            else:
                cluster.kill_jobmanager()
                cluster.restart_jobmanager()
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED"), timeout=180) == "FINISHED"
        assert published(out) == reference(), f"chaos seed {seed}: {kinds}"
    finally:
        cluster.close()
