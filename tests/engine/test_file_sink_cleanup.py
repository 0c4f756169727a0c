"""FileSink removes the in-progress files of failed attempts when a subtask starts again.

A killed TaskManager never closes its open parts: each left a hidden `.inprogress` file (9-39 per soak
run before). A starting sink subtask removes those of its own earlier attempts (same sink, same job
submission, its subtask index or one it took over at another parallelism) after it committed the
pending files of the checkpoint it restores — never a pending file that checkpoint commits, another
subtask's or another sink's files, nor finished files.
"""

from __future__ import annotations

import re
import textwrap
import uuid
from collections import Counter
from pathlib import Path

from strom.common import Encoder
from strom.connectors.file_sink_policies import (
    in_progress_name,
    in_progress_owner,
    in_progress_subtask,
    is_leftover_of_earlier_attempt,
)
from strom.connectors.sink_base import SinkInitContext
from strom.datastream.connectors.file_system import BucketAssigner, FileSink, OutputFileConfig

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

# -- which names are whose (pure) ---------------------------------------------------------------------

CONFIG = OutputFileConfig("part", ".txt")
OWNER = in_progress_owner("sink-1", "uid-sink")


def part_name(subtask: int, *, owner: str = OWNER, config: OutputFileConfig = CONFIG) -> str:
    final = f"{config.part_prefix}-{uuid.uuid4()}-{subtask}-7{config.part_suffix}"
    return in_progress_name(final, owner, uuid.uuid4().hex)


def test_the_subtask_index_is_read_from_an_own_in_progress_name():
    assert in_progress_subtask(part_name(3), CONFIG, OWNER) == 3
    assert in_progress_subtask(part_name(12), CONFIG, OWNER) == 12


def test_finished_foreign_and_other_owners_files_are_not_in_progress_files_of_this_sink():
    finished = f"part-{uuid.uuid4()}-0-1.txt"
    assert in_progress_subtask(finished, CONFIG, OWNER) is None
    assert in_progress_subtask("." + finished, CONFIG, OWNER) is None  # hidden, but no in-progress marker
    other_job = part_name(0, owner=in_progress_owner("sink-2", "uid-sink"))  # another submission
    other_sink = part_name(0, owner=in_progress_owner("sink-1", "uid-other"))  # another sink of the job
    assert in_progress_subtask(other_job, CONFIG, OWNER) is None
    assert in_progress_subtask(other_sink, CONFIG, OWNER) is None
    assert in_progress_subtask(part_name(0, config=OutputFileConfig("data", ".txt")), CONFIG, OWNER) is None
    assert in_progress_subtask(".part-x-0-1.txt.inprogress." + OWNER + ".zz", CONFIG, OWNER) is None
    # a prefix with regex characters is taken literally
    odd = OutputFileConfig("a.b+", "")
    assert in_progress_subtask(part_name(2, config=odd), odd, OWNER) == 2
    assert in_progress_subtask(part_name(2, config=OutputFileConfig("aXb+", "")), odd, OWNER) is None


def test_each_old_subtasks_files_have_exactly_one_remover_at_any_parallelism():
    old_files = {k: part_name(k) for k in range(6)}
    for parallelism in (1, 2, 4, 6, 8):
        removers = {
            k: [
                s
                for s in range(parallelism)
                if is_leftover_of_earlier_attempt(
                    name, config=CONFIG, owner=OWNER, subtask_index=s, parallelism=parallelism
                )
            ]
            for k, name in old_files.items()
        }
        # the same rule that hands old subtask k's committables to new subtask k % parallelism
        assert removers == {k: [k % parallelism] for k in old_files}, parallelism


# -- a writer that starts again (in-process) -----------------------------------------------------------


class _Timers:
    def now(self) -> int:
        return 0

    def register_timer(self, timestamp, callback) -> None:
        pass


def _sink(out: Path) -> FileSink:
    return (
        FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )


def _context(subtask: int, parallelism: int, attempt: int) -> SinkInitContext:
    return SinkInitContext(subtask, parallelism, attempt, _Timers(), checkpointing=True, operator_uid="sink")


def _hidden(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob(".*") if p.is_file())


def _published(out: Path) -> Counter[str]:
    return Counter(
        line
        for p in out.rglob("*")
        if p.is_file() and not p.name.startswith(".")
        for line in p.read_text().splitlines()
    )


def test_a_restarted_writer_removes_its_earlier_attempts_in_progress_files_only(tmp_path):
    out = tmp_path / "out"
    sink = _sink(out)
    # attempt 0, subtask 0 of 2: "a" goes into checkpoint 1 as a pending file, "b" is open when the process dies
    first = sink.create_writer(_context(0, 2, 0))
    first.write("a", None)
    checkpoint_1 = first.prepare_commit()
    first.write("b", None)
    # subtask 1 of the same attempt already runs its next attempt's part; another sink writes to the same dir
    neighbour = sink.create_writer(_context(1, 2, 1))
    neighbour.write("n", None)
    other_sink = _sink(out).create_writer(_context(0, 2, 0))
    other_sink.write("o", None)
    # an earlier finished file of this sink
    (out / "part-done-0-0").write_text("done\n")
    before = _hidden(out)
    assert len(before) == 4  # a's pending, b's in-progress, n's and o's in-progress

    # attempt 1 restores checkpoint 1: the subtask commits its pending files first, then opens its writer
    sink.create_committer().commit(checkpoint_1)
    restarted = sink.create_writer(_context(0, 2, 1))

    after = _hidden(out)
    b_file = next(name for name in before if name not in after)
    assert in_progress_subtask(b_file, OutputFileConfig(), in_progress_owner(sink.sink_id, "sink")) == 0
    assert len(after) == 2  # the neighbour's and the other sink's open parts are untouched
    assert _published(out) == Counter({"a": 1, "done": 1})
    # the restarted writer works as any other
    restarted.write("c", None)
    sink.create_committer().commit(restarted.prepare_commit())
    assert _published(out) == Counter({"a": 1, "c": 1, "done": 1})


def test_a_rescaled_writer_removes_the_files_of_the_old_subtasks_it_took_over(tmp_path):
    out = tmp_path / "out"
    sink = _sink(out)
    for k in range(4):  # attempt 0 at parallelism 4, every subtask killed with an open part
        sink.create_writer(_context(k, 4, 0)).write(f"lost {k}", None)
    assert len(_hidden(out)) == 4
    sink.create_writer(_context(1, 2, 1))  # attempt 1 at parallelism 2: subtask 1 takes old 1 and 3
    owner = in_progress_owner(sink.sink_id, "sink")
    assert sorted(in_progress_subtask(n, OutputFileConfig(), owner) for n in _hidden(out)) == [0, 2]
    sink.create_writer(_context(0, 2, 1))
    assert _hidden(out) == []


# -- a checkpointing job on a session cluster, a TaskManager killed mid-run -------------------------------


def counting_job(tmp_path: Path, *, count: int, rate: float, keys: int = 7) -> tuple[str, Path]:
    """A keyed running count per key into an exactly-once FileSink (parallelism 2, checkpoints every
    300 ms, fixed-delay restarts)."""
    out = tmp_path / "out"
    job = tmp_path / "counting.py"
    conf = {
        "execution.checkpointing.interval": "300 ms",
        "state.checkpoints.dir": f"file://{tmp_path / 'chk'}",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "5",
        "restart-strategy.fixed-delay.delay": "200 ms",
    }
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Encoder, Types, WatermarkStrategy
        from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner
        from strom.datastream.state import ValueStateDescriptor

        class CountPerKey(KeyedProcessFunction):
            def open(self, runtime_context):
                self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

            def process_element(self, value, ctx):
                n = (self.count.value() or 0) + 1
                self.count.update(n)
                yield f"{{ctx.get_current_key()}} {{n}}"

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(lambda i: i, {count}, {rate!r}),
                              WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        (src.key_by(lambda v: v % {keys}).process(CountPerKey()).uid("counts")
            .sink_to(sink).uid("sink"))
        env.execute("counting")
    """)
    )
    return str(job), out


def expected_counts(count: int, keys: int = 7) -> Counter[str]:
    """Plain Python: each key's running counts 1..n(key), once each."""
    per_key = Counter(i % keys for i in range(count))
    return Counter(f"{k} {n}" for k, total in per_key.items() for n in range(1, total + 1))


def published_counts(out: Path) -> Counter[str]:
    return _published(out)


def running_subtasks(cluster: SessionCluster, job_id: str) -> dict[str, int]:
    """TaskManager id -> the subtask index it runs (one slot per TaskManager: slot sharing puts subtask i
    of every vertex, the sink's too, into the same slot)."""
    return wait_until(
        lambda: {
            st["taskmanager-id"]: st["subtask"]
            for v in cluster.get(f"/jobs/{job_id}")["vertices"]
            for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
            if st.get("status") == "RUNNING"
        },
        what="subtasks running",
    )


def in_progress_files(out: Path, subtask: int | None = None) -> list[str]:
    """Hidden in-progress (or pending) part files, of one subtask when given."""
    names = [p.name for p in out.rglob("*") if ".inprogress" in p.name]
    if subtask is None:
        return names
    return [n for n in names if (m := re.match(r"\.part-[0-9a-f-]{36}-(\d+)-", n)) and int(m.group(1)) == subtask]


def test_no_in_progress_file_remains_after_a_killed_taskmanager_and_the_output_is_exact(tmp_path):
    count = 12_000
    cluster = SessionCluster(taskmanagers=3, slots=1)  # one slot each: every TaskManager of the job runs a sink
    try:
        path, out = counting_job(tmp_path, count=count, rate=1600.0)
        job_id = submit(cluster, path)
        wait_until(
            lambda: cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= 2,
            timeout=60,
            what="two completed checkpoints",
        )
        victim, subtask = sorted(running_subtasks(cluster, job_id).items())[0]
        # kill it while its sink subtask has a part open (between two checkpoints it nearly always has)
        wait_until(lambda: in_progress_files(out, subtask), timeout=10, what="an open part")
        cluster.kill_taskmanager(cluster.tms[int(victim.split("-")[1])])
        assert in_progress_files(out, subtask), "the killed subtask left no in-progress file to clean up"
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED"), timeout=120) == "FINISHED"
        assert cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["restored"] >= 1
        assert in_progress_files(out) == []
        assert published_counts(out) == expected_counts(count)
    finally:
        cluster.close()
