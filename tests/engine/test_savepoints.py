"""Savepoints on a session cluster of real processes: triggered through REST, stop-with-savepoint,
and jobs restored from them at other keyed parallelisms, from a moved directory, and without one
of the savepoint's operators.

The job sums values per key (source -> key_by -> reduce -> sink). Its output is read as the
largest sum seen per key: a restored job's sums continue from the savepoint's state, so the
restored job's own output ends at the plain-Python reference only if that state was restored
exactly (lost state would give smaller sums, state restored twice larger ones).
"""

from __future__ import annotations

import json
import shutil
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import final_sums, reference, submit

COUNT = 6000
RATE = 2000.0  # records/s over both source subtasks: the first job runs ~3 s, long enough to stop it


def sums_job(
    tmp_path: Path,
    name: str,
    *,
    keyed_parallelism: int,
    sums_uid: str = "sums",
    checkpointing: bool = True,
    source_parallelism: int = 2,
) -> tuple[str, Path]:
    """A job file whose reduce runs at `keyed_parallelism` (everything else at 2); its output dir."""
    out = tmp_path / f"out-{name}"
    job = tmp_path / f"{name}.py"
    conf = {"execution.checkpointing.interval": "200 ms", "state.checkpoints.dir": f"file://{tmp_path / 'chk'}"}
    if not checkpointing:
        conf = {}
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.configure(Configuration({conf!r}))
        src = env.from_source(DataGeneratorSource(lambda i: (i % 13, i), {COUNT}, {RATE!r}),
                              WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
        src = src.set_parallelism({source_parallelism})
        sums = (src.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
                .uid({sums_uid!r}).set_parallelism({keyed_parallelism}))
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        sums.map(lambda s: f"{{s[0]}} {{s[1]}}").uid("format").sink_to(sink).uid("sink")
        env.execute("savepointed sums {name}")
    """)
    )
    return str(job), out


def post(cluster: SessionCluster, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{cluster.rest_port}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def savepoint_location(cluster: SessionCluster, job_id: str, trigger_id: str) -> str:
    answer = wait_until(
        lambda: (a := cluster.get(f"/jobs/{job_id}/savepoints/{trigger_id}"))["status"]["id"] == "COMPLETED" and a,
        what="the savepoint to complete",
    )
    assert "location" in answer["operation"], answer
    return answer["operation"]["location"]


def local(uri: str) -> Path:
    assert uri.startswith("file://"), uri
    return Path(uri[len("file://") :])


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One cluster; a keyed job at parallelism 2 that took a savepoint through REST and was then
    stopped with a second one."""
    tmp_path = tmp_path_factory.mktemp("savepoints")
    cluster = SessionCluster(taskmanagers=2, slots=2)
    try:
        job, _ = sums_job(tmp_path, "first", keyed_parallelism=2)
        job_id = submit(cluster, job)
        cluster.wait_for_state(job_id, ("RUNNING",))
        status, answer = post(cluster, f"/jobs/{job_id}/savepoints", {"target-directory": str(tmp_path / "sp")})
        assert status == 202, answer
        running_savepoint = savepoint_location(cluster, job_id, answer["request-id"])
        proc = cluster.cli("savepoint", job_id, str(tmp_path / "cli"))
        assert proc.returncode == 0, proc.stderr
        cli_savepoint = proc.stdout.strip().splitlines()[-1].removeprefix("Savepoint completed. Path: ")
        status, answer = post(cluster, f"/jobs/{job_id}/stop", {"targetDirectory": str(tmp_path / "stop")})
        assert status == 202, answer
        stop_trigger = answer["request-id"]
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FINISHED"
        # the result stays readable after the job ended: the operator polls it after a stop
        stop_savepoint = savepoint_location(cluster, job_id, stop_trigger)
        yield {
            "cluster": cluster,
            "tmp": tmp_path,
            "job_id": job_id,
            "running": running_savepoint,
            "cli": cli_savepoint,
            "stopped": stop_savepoint,
        }
    finally:
        cluster.close()


def run_restored(scenario: Any, name: str, savepoint: str, *extra: str, **job: Any) -> dict[int, int]:
    cluster = scenario["cluster"]
    path, out = sums_job(scenario["tmp"], name, **job)
    proc = cluster.cli("submit", path, "--from-savepoint", savepoint, *extra)
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split()[-1]
    assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED")) == "FINISHED"
    return final_sums(out)


def test_savepoint_is_a_self_contained_directory_marked_as_savepoint(scenario):
    directory = local(scenario["running"])
    assert directory.parent == scenario["tmp"] / "sp"
    assert directory.name.startswith(f"savepoint-{scenario['job_id'][:6]}-")
    metadata = json.loads((directory / "_metadata").read_text())
    assert metadata["is_savepoint"] is True
    assert {"numbers", "sums", "format", "sink"} <= set(metadata["operators"])
    for op in metadata["operators"].values():
        for path in [*op["keyed"].values(), *op["operator_state"].values()]:
            assert "/" not in path and (directory / path).is_file()


@pytest.mark.parametrize("keyed_parallelism", [1, 4])
def test_restore_at_another_keyed_parallelism_continues_exactly(scenario, keyed_parallelism):
    sums = run_restored(scenario, f"p{keyed_parallelism}", scenario["stopped"], keyed_parallelism=keyed_parallelism)
    assert sums == reference(COUNT)


@pytest.mark.parametrize("source_parallelism", [1, 3])
def test_restore_at_another_source_parallelism_continues_exactly(scenario, source_parallelism):
    # the generator's remaining index ranges are pooled and dealt out to the new source subtasks
    sums = run_restored(
        scenario,
        f"src{source_parallelism}",
        scenario["running"],
        keyed_parallelism=2,
        source_parallelism=source_parallelism,
    )
    assert sums == reference(COUNT)


def test_moved_savepoint_directory_restores(scenario):
    moved = scenario["tmp"] / "moved" / "renamed-savepoint"
    moved.parent.mkdir()
    shutil.copytree(local(scenario["running"]), moved)
    sums = run_restored(scenario, "moved", f"file://{moved}", keyed_parallelism=2)
    assert sums == reference(COUNT)


def test_restore_without_an_operator_of_the_savepoint_fails_unless_allowed(scenario):
    cluster = scenario["cluster"]
    path, _ = sums_job(scenario["tmp"], "renamed", keyed_parallelism=2, sums_uid="sums-v2")
    proc = cluster.cli("submit", path, "--from-savepoint", scenario["stopped"])
    assert proc.returncode != 0
    assert "'sums'" in proc.stderr and "allow-non-restored-state" in proc.stderr, proc.stderr
    # allowed: the sums start from nothing, so they are those of the records after the savepoint
    sums = run_restored(
        scenario,
        "renamed-allowed",
        scenario["stopped"],
        "--allow-non-restored-state",
        keyed_parallelism=2,
        sums_uid="sums-v2",
    )
    assert set(sums) == set(reference(COUNT))
    assert all(sums[k] < reference(COUNT)[k] for k in sums)


def test_savepoint_command_prints_the_location_of_a_complete_savepoint(scenario):
    directory = local(scenario["cli"])
    assert directory.parent == scenario["tmp"] / "cli"
    assert json.loads((directory / "_metadata").read_text())["is_savepoint"] is True


def test_stop_command_of_an_ended_job_fails_naming_its_state(scenario):
    proc = scenario["cluster"].cli("stop", scenario["job_id"], "--savepoint-path", str(scenario["tmp"] / "late"))
    assert proc.returncode == 1
    assert "FINISHED" in proc.stderr and "409" in proc.stderr, proc.stderr


def test_unknown_savepoint_trigger_id_is_not_found(scenario):
    job_id = scenario["job_id"]
    with pytest.raises(urllib.error.HTTPError) as e:
        scenario["cluster"].get(f"/jobs/{job_id}/savepoints/{'0' * 32}")
    assert e.value.code == 404


def test_savepoint_without_a_target_directory_names_the_keys(scenario):
    status, answer = post(scenario["cluster"], f"/jobs/{scenario['job_id']}/savepoints", {})
    assert status == 400, answer
    assert "target-directory" in answer["errors"][0] and "state.savepoints.dir" in answer["errors"][0]


def test_job_without_checkpointing_stops_with_a_savepoint_into_the_clusters_directory(tmp_path):
    """Flink takes savepoints of jobs without periodic checkpoints: the tasks stage the savepoint
    under the cluster's `state.savepoints.dir`, and the job restored from it continues exactly."""
    default_dir = tmp_path / "cluster-savepoints"
    cluster = SessionCluster(taskmanagers=1, slots=2, extra=("-D", f"state.savepoints.dir=file://{default_dir}"))
    try:
        job, _ = sums_job(tmp_path, "unchecked", keyed_parallelism=2, checkpointing=False)
        job_id = submit(cluster, job)
        cluster.wait_for_state(job_id, ("RUNNING",))
        status, answer = post(cluster, f"/jobs/{job_id}/stop", {})
        assert status == 202, answer
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FINISHED"
        location = savepoint_location(cluster, job_id, answer["request-id"])
        assert local(location).parent == default_dir
        # only the savepoint stays: the staging directory of its files is gone
        assert [p.name for p in default_dir.iterdir()] == [local(location).name]
        path, out = sums_job(tmp_path, "unchecked-restored", keyed_parallelism=1, checkpointing=False)
        proc = cluster.cli("submit", path, "--from-savepoint", location)
        assert proc.returncode == 0, proc.stderr
        restored = proc.stdout.strip().split()[-1]
        assert cluster.wait_for_state(restored, ("FINISHED", "FAILED")) == "FINISHED"
        assert final_sums(out) == reference(COUNT)
    finally:
        cluster.close()


def windowed_job(tmp_path: Path, name: str) -> tuple[str, Path]:
    """Counts and sums per key in 100 ms event-time windows over a rate-limited prefix of the
    numbers (one source subtask, so what it emitted is 0..N-1 for some N)."""
    out = tmp_path / f"out-{name}"
    job = tmp_path / f"{name}.py"
    conf = {"execution.checkpointing.interval": "200 ms", "state.checkpoints.dir": f"file://{tmp_path / 'chk'}"}
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration, Duration, Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner
        from strom.datastream.window import TumblingEventTimeWindows

        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(Configuration({conf!r}))
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e[1])
        src = env.from_source(DataGeneratorSource(lambda i: (i % 5, i), 10**9, 2000.0), strategy, "numbers")
        counts = (src.set_parallelism(1).uid("numbers")
                  .map(lambda e: (e[0], e[1] // 100, 1, e[1])).uid("tag")
                  .key_by(lambda t: t[0])
                  .window(TumblingEventTimeWindows.of(Duration.of_millis(100)))
                  .reduce(lambda a, b: (a[0], a[1], a[2] + b[2], a[3] + b[3])).uid("windows").set_parallelism(2))
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        counts.map(lambda t: " ".join(map(str, t))).uid("format").sink_to(sink).uid("sink")
        env.execute("drained windows {name}")
    """)
    )
    return str(job), out


def test_stop_with_drain_fires_every_window_and_the_job_finishes(scenario):
    cluster, tmp = scenario["cluster"], scenario["tmp"]
    path, out = windowed_job(tmp, "drained")
    job_id = submit(cluster, path)
    cluster.wait_for_state(job_id, ("RUNNING",))
    wait_until(lambda: any(p.is_file() for p in out.rglob("*")), timeout=90, what="the first window results")
    # a client-named trigger id makes the request idempotent: repeated, it is the same one savepoint
    body = {"target-directory": str(tmp / "named"), "triggerId": "operator-nonce-1"}
    assert post(cluster, f"/jobs/{job_id}/savepoints", body) == (202, {"request-id": "operator-nonce-1"})
    assert post(cluster, f"/jobs/{job_id}/savepoints", body) == (202, {"request-id": "operator-nonce-1"})
    savepoint_location(cluster, job_id, "operator-nonce-1")
    assert len(list((tmp / "named").iterdir())) == 1
    assert post(cluster, f"/jobs/{job_id}/savepoints", {"triggerId": "not/valid"})[0] == 400
    status, answer = post(cluster, f"/jobs/{job_id}/stop", {"targetDirectory": str(tmp / "drain"), "drain": True})
    assert status == 202, answer
    assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED")) == "FINISHED"
    assert local(savepoint_location(cluster, job_id, answer["request-id"])).parent == tmp / "drain"
    windows: dict[tuple[int, int], tuple[int, int]] = {}
    for f in out.rglob("*"):
        if f.is_file() and not f.name.startswith("."):
            for line in f.read_text().splitlines():
                key, window, count, total = map(int, line.split())
                assert (key, window) not in windows, f"window {(key, window)} fired twice"
                windows[(key, window)] = (count, total)
    # the source emitted 0..n-1 and nothing after the savepoint's barrier; the maximum watermark fired
    # every window of them, the last (partial) one included
    n = sum(count for count, _ in windows.values())
    expected: dict[tuple[int, int], tuple[int, int]] = {}
    for i in range(n):
        count, total = expected.get((i % 5, i // 100), (0, 0))
        expected[(i % 5, i // 100)] = (count + 1, total + i)
    assert n > 0 and windows == expected


def test_dispose_deletes_a_savepoint_and_refuses_a_checkpoint(scenario, tmp_path):
    cluster = scenario["cluster"]
    copy = tmp_path / "to-dispose"
    shutil.copytree(local(scenario["running"]), copy)
    proc = cluster.cli("savepoint", "--dispose", f"file://{copy}")
    assert proc.returncode == 0, proc.stderr
    assert "disposed" in proc.stdout and not copy.exists()
    # a checkpoint is not a savepoint: refused, nothing deleted
    checkpoint = tmp_path / "a-checkpoint"
    shutil.copytree(local(scenario["running"]), checkpoint)
    metadata = json.loads((checkpoint / "_metadata").read_text())
    metadata["is_savepoint"] = False
    (checkpoint / "_metadata").write_text(json.dumps(metadata))
    proc = cluster.cli("savepoint", "--dispose", f"file://{checkpoint}")
    assert proc.returncode == 1 and "not a savepoint" in proc.stderr, proc.stderr
    assert (checkpoint / "_metadata").is_file()
    proc = cluster.cli("savepoint", "--dispose", f"file://{tmp_path / 'nothing-here'}")
    assert proc.returncode == 1 and "_metadata" in proc.stderr, proc.stderr


def test_dispose_keeps_an_unrelated_file_placed_in_the_savepoint_directory(scenario, tmp_path):
    """As Flink's disposal: the files the _metadata lists and the _metadata go, the directory stays
    while someone else's file is in it."""
    cluster = scenario["cluster"]
    copy = tmp_path / "shared-dir"
    shutil.copytree(local(scenario["running"]), copy)
    (copy / "notes.txt").write_text("not the savepoint's")
    proc = cluster.cli("savepoint", "--dispose", f"file://{copy}")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in copy.iterdir()) == ["notes.txt"]
    assert (copy / "notes.txt").read_text() == "not the savepoint's"


def test_dispose_over_rest_refuses_a_relative_path(scenario):
    status, answer = post(scenario["cluster"], "/savepoint-disposal", {"savepoint-path": "relative/savepoint"})
    assert status == 400 and "savepoint-path" in answer["errors"][0], answer


def test_threads_mode_restores_a_savepoint_taken_on_the_cluster(scenario):
    """`strom run --threads --from-savepoint`: the embedded executor restores it too (at keyed parallelism 1)."""
    import subprocess
    import sys

    from tests.engine.cluster_testing import _env

    path, out = sums_job(scenario["tmp"], "threads", keyed_parallelism=1)
    proc = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", "--threads", path, "--from-savepoint", scenario["stopped"]],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert final_sums(out) == reference(COUNT)
    path, _ = sums_job(scenario["tmp"], "threads-renamed", keyed_parallelism=1, sums_uid="other")
    proc = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", "--threads", path, "--from-savepoint", scenario["stopped"]],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert proc.returncode != 0 and "allow-non-restored-state" in proc.stderr, proc.stderr
