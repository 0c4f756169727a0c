"""A SQL job datagen(sequence) -> projection -> partitioned filesystem sink on a session cluster of real
processes, checkpointing every 300 ms; its TaskManager is killed with SIGKILL twice (each time after a
checkpoint completed since the previous kill) and replaced. The committed part files must hold every
row exactly once: a part published before its checkpoint completed would duplicate rows on restore, one
never committed would lose them. The reference is plain Python over the same sequence."""

from __future__ import annotations

import random
import textwrap
from collections import Counter
from pathlib import Path

from tests.engine.chaos_testing import kill_taskmanagers_until_finished, published
from tests.engine.cluster_testing import SessionCluster
from tests.engine.test_cluster import submit

COUNT = 3_000
RATE = 500  # rows/s: ~6 s of input
KILLS = 2


def sql_job(tmp_path: Path, out: Path) -> str:
    conf = {
        "parallelism.default": "2",
        "execution.checkpointing.interval": "300 ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "20",
        "restart-strategy.fixed-delay.delay": "200 ms",
        "state.checkpoints.dir": f"file://{tmp_path / 'chk'}",
    }
    job = tmp_path / "sql_job.py"
    job.write_text(textwrap.dedent(f"""
        from strom.table import EnvironmentSettings, TableEnvironment

        t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
        for key, value in {conf!r}.items():
            t_env.get_config().set(key, value)
        t_env.execute_sql(
            "CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', "
            "'fields.id.start' = '0', 'fields.id.end' = '{COUNT - 1}', 'rows-per-second' = '{RATE}')")
        t_env.execute_sql(
            "CREATE TABLE out (id BIGINT, doubled BIGINT, tag STRING, p INT) PARTITIONED BY (p) WITH ("
            "'connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv', "
            "'sink.partition-commit.policy.kind' = 'success-file')")
        t_env.execute_sql("INSERT INTO out SELECT id, id * 2, CONCAT('r', CAST(id AS STRING)), "
                          "CAST(id % 3 AS INT) FROM gen")
    """))
    return str(job)


def test_sql_filesystem_sink_is_exactly_once_across_kill_9(tmp_path: Path) -> None:
    out = tmp_path / "out"
    seed = random.randrange(1 << 30)
    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        job_id = submit(cluster, sql_job(tmp_path, out))
        kill_taskmanagers_until_finished(cluster, job_id, kills=KILLS, rng=random.Random(seed), slots=2)
    finally:
        cluster.close()
    assert published(out) == Counter(f"{i},{2 * i},r{i}" for i in range(COUNT)), f"seed {seed}"
    partitions = {f.parent.name for f in out.rglob("part-*")}
    assert partitions == {"p=0", "p=1", "p=2"}
    assert all((out / p / "_SUCCESS").exists() for p in partitions)
    # each row sits in its own partition's directory
    for p in partitions:
        rows = [line for f in (out / p).glob("part-*") for line in f.read_text().splitlines()]
        assert all(int(line.split(",")[0]) % 3 == int(p[2:]) for line in rows)
