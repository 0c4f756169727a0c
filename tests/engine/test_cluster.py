"""The distributed runtime with real processes on loopback: JobManager + TaskManagers with
slot processes, TCP channels, REST, failover."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import urllib.request
from collections import Counter

import pytest

from tests.engine.cluster_testing import ROOT, SessionCluster, _env, wait_until

N = 20_000


def keyed_job(tmp_path, *, parallelism: int, count: int = N, rate: float | None = None, restart: bool = False) -> str:
    out = tmp_path / "out"
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Encoder, WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource
        from strom.datastream.connectors.file_system import FileSink, BucketAssigner

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism({parallelism})
        if {restart!r}:
            from strom.common import Configuration
            env.configure(Configuration({{"restart-strategy.type": "fixed-delay",
                                          "restart-strategy.fixed-delay.attempts": 3,
                                          "restart-strategy.fixed-delay.delay": "200 ms"}}))
        src = env.from_source(DataGeneratorSource(lambda i: (i % 13, i), {count}, {rate!r}),
                              WatermarkStrategy.no_watermarks(), "numbers")
        sums = src.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
        sink = (FileSink.for_row_format({str(out)!r}, Encoder.simple_string_encoder())
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()).build())
        sums.map(lambda s: f"{{s[0]}} {{s[1]}}").sink_to(sink)
        env.execute("keyed sums")
    """)
    )
    return str(job)


def final_sums(out_dir) -> dict[int, int]:
    finals: dict[int, int] = {}
    for root, _, files in os.walk(out_dir):
        for f in files:
            if f.startswith("."):
                continue  # in-progress files of a failed attempt
            for line in open(os.path.join(root, f)):
                k, v = map(int, line.split())
                finals[k] = max(finals.get(k, 0), v)
    return finals


def reference(count: int) -> dict[int, int]:
    sums: Counter[int] = Counter()
    for i in range(count):
        sums[i % 13] += i
    return dict(sums)


@pytest.fixture
def cluster():
    c = SessionCluster(taskmanagers=2, slots=2)
    yield c
    c.close()


def submit(cluster: SessionCluster, job: str) -> str:
    proc = cluster.cli("submit", job)
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split()[-1]
    assert re.fullmatch(r"[0-9a-f]{32}", job_id), proc.stdout
    return job_id


def test_keyed_job_across_two_taskmanagers_gives_reference_result(cluster, tmp_path):
    job_id = submit(cluster, keyed_job(tmp_path, parallelism=4))
    assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED")) == "FINISHED"
    assert final_sums(tmp_path / "out") == reference(N)
    details = cluster.get(f"/jobs/{job_id}")
    hosts = {
        st["taskmanager-id"]
        for v in details["vertices"]
        for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
    }
    assert len(hosts) == 2, "the job's subtasks should span both TaskManagers"
    overview = cluster.get("/overview")
    assert overview["taskmanagers"] == 2 and overview["slots-total"] == 4 and overview["jobs-finished"] == 1


def test_killed_taskmanager_fails_the_job_over_by_its_restart_strategy(tmp_path):
    cluster = SessionCluster(taskmanagers=3, slots=2)
    try:
        job_id = submit(cluster, keyed_job(tmp_path, parallelism=4, count=6000, rate=2000, restart=True))
        cluster.wait_for_state(job_id, ("RUNNING",))
        # kill a TaskManager that runs part of the job
        used = wait_until(
            lambda: {
                st.get("taskmanager-id")
                for v in cluster.get(f"/jobs/{job_id}")["vertices"]
                for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
                if st.get("taskmanager-id")
            },
            what="subtasks deployed",
        )
        victim_id = sorted(used)[0]
        cluster.kill_taskmanager(cluster.tms[int(victim_id.split("-")[1])])
        wait_until(
            lambda: victim_id not in {t["id"] for t in cluster.get("/taskmanagers")["taskmanagers"]},
            what="TaskManager loss noticed",
        )
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=90) == "FINISHED"
        details = cluster.get(f"/jobs/{job_id}")
        assert cluster.get(f"/jobs/{job_id}/metrics?get=numRestarts")[0]["value"] not in ("0", "0.0")
        # Which failure the JobManager notices first is a race (the TaskManager's connection closing, or a
        # downstream task losing its connection to it); as in Flink's exception history, the other one of the
        # same failover is among the entry's concurrentExceptions, so the loss is always there.
        entries = cluster.get(f"/jobs/{job_id}/exceptions")["exceptionHistory"]["entries"]
        failures = [(f.get("taskName"), f["stacktrace"]) for e in entries for f in [e, *e["concurrentExceptions"]]]
        assert any(name == f"TaskManager {victim_id}" and victim_id in trace for name, trace in failures), failures
        assert details["state"] == "FINISHED"
        assert final_sums(tmp_path / "out") == reference(6000)
    finally:
        cluster.close()


def test_list_info_and_cancel_through_the_cli(cluster, tmp_path):
    job_id = submit(cluster, keyed_job(tmp_path, parallelism=2, count=10_000_000, rate=1000))
    cluster.wait_for_state(job_id, ("RUNNING",))
    listed = cluster.cli("list")
    assert listed.returncode == 0 and job_id in listed.stdout and "RUNNING" in listed.stdout
    info = cluster.cli("info", job_id)
    assert info.returncode == 0 and "keyed sums" in info.stdout
    cancelled = cluster.cli("cancel", job_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cluster.job_state(job_id) == "CANCELED"


def test_unknown_job_is_a_404_with_errors(cluster):
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as info:
        cluster.get("/jobs/" + "0" * 32)
    assert info.value.code == 404
    assert "errors" in __import__("json").loads(info.value.read())


def test_application_mode_runs_the_job_and_exits_with_its_outcome(tmp_path):
    job = keyed_job(tmp_path, parallelism=2, count=5000)
    jm = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "strom.cli",
            "jobmanager",
            "--job",
            job,
            "-D",
            "rest.port=0",
            "-D",
            "jobmanager.rpc.port=0",
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        line = jm.stdout.readline()
        rpc_port = int(re.search(r"rpc port (\d+)", line).group(1))
        tm = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "strom.cli",
                "taskmanager",
                "--jobmanager",
                f"127.0.0.1:{rpc_port}",
                "-D",
                "taskmanager.numberOfTaskSlots=2",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        try:
            assert jm.wait(120) == 0, jm.stderr.read()
        finally:
            tm.terminate()
            tm.wait(10)
    finally:
        if jm.poll() is None:
            jm.kill()
    assert final_sums(tmp_path / "out") == reference(5000)


def test_strom_run_uses_processes_and_reports_a_failing_job(tmp_path):
    job = tmp_path / "bad.py"
    job.write_text(
        textwrap.dedent("""
        from strom.datastream import StreamExecutionEnvironment
        def explode(v):
            if v == 7:
                raise ValueError("record seven is bad")
            return v
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection(list(range(10))).map(explode).print()
        env.execute("bad")
    """)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", str(job)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert "record seven is bad" in proc.stderr and "explode" in proc.stderr


def scrape(port: int) -> dict[str, list]:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_slow_sink_back_pressures_its_producer_with_bounded_memory(tmp_path):
    cluster = SessionCluster(taskmanagers=1, slots=1, extra=("-D", "metrics.fetcher.update-interval=300"))
    job = tmp_path / "slow.py"
    job.write_text(
        textwrap.dedent("""
        import time
        from strom.common import WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource

        def slow(v):
            time.sleep(0.0005)

        env = StreamExecutionEnvironment.get_execution_environment()
        src = env.from_source(DataGeneratorSource(lambda i: ("x" * 100, i), 10**9), WatermarkStrategy.no_watermarks(),
                              "fast source")
        src.add_sink(slow).disable_chaining()
        env.execute("back pressure")
    """)
    )
    try:
        job_id = submit(cluster, str(job))
        cluster.wait_for_state(job_id, ("RUNNING",))
        source = next(v for v in cluster.get(f"/jobs/{job_id}")["vertices"] if v["name"].startswith("Source"))
        path = f"/jobs/{job_id}/vertices/{source['id']}"

        def back_pressured():
            bp = cluster.get(path + "/backpressure")
            return bp.get("backpressure-level") == "high" and bp

        bp = wait_until(back_pressured, timeout=60, what="source back pressure 'high'")
        assert bp["subtasks"][0]["ratio"] > 0.5
        metric = cluster.get(path + "/subtasks/metrics?get=backPressuredTimeMsPerSecond")
        assert float(metric[0]["max"]) > 500
        # memory stays bounded while the source could produce far more than the sink takes
        tm_id = cluster.get("/taskmanagers")["taskmanagers"][0]["id"]

        def rss():
            values = cluster.get(f"/taskmanagers/{tm_id}/metrics?get=Status.Process.Memory.RSS")
            return float(values[0]["value"]) if values else 0.0

        first = wait_until(rss, what="RSS reported")
        import time

        deadline = time.monotonic() + 3
        samples = [first]
        while time.monotonic() < deadline:
            samples.append(rss())
            time.sleep(0.3)
        assert max(samples) - first < 64 * 2**20, f"TaskManager memory grew: {samples}"
        # Prometheus: the TaskManager's task metrics and the JobManager's gauges, by Flink's names
        tm_families = scrape(cluster.tm_metrics_ports[0])
        bp_samples = tm_families["flink_taskmanager_job_task_backPressuredTimeMsPerSecond"]
        src_sample = next(s for s in bp_samples if s.labels["task_name"].startswith("Source"))
        assert src_sample.labels["job_id"] == job_id and src_sample.labels["subtask_index"] == "0"
        assert src_sample.value > 500
        for name in (
            "flink_taskmanager_job_task_numRecordsOutPerSecond",
            "flink_taskmanager_job_task_busyTimeMsPerSecond",
            "flink_taskmanager_job_task_idleTimeMsPerSecond",
        ):
            assert name in tm_families
        jm_families = scrape(cluster.metrics_port)
        assert jm_families["flink_jobmanager_numRegisteredTaskManagers"][0].value == 1
        assert any(s.labels.get("job_id") == job_id for s in jm_families["flink_jobmanager_job_uptime"])
        assert cluster.cli("cancel", job_id).returncode == 0
    finally:
        cluster.close()


def test_unresponsive_taskmanager_is_lost_by_heartbeat_timeout(tmp_path):
    """SIGSTOP keeps the TaskManager's connection open but silences it: only the heartbeat
    timeout (3 s in this cluster) can notice."""
    import signal
    import time

    cluster = SessionCluster(taskmanagers=2, slots=2)
    try:
        job_id = submit(cluster, keyed_job(tmp_path, parallelism=2, count=8000, rate=1000, restart=True))
        cluster.wait_for_state(job_id, ("RUNNING",))
        used = wait_until(
            lambda: {
                st.get("taskmanager-id")
                for v in cluster.get(f"/jobs/{job_id}")["vertices"]
                for st in cluster.get(f"/jobs/{job_id}/vertices/{v['id']}")["subtasks"]
                if st.get("taskmanager-id")
            },
            what="subtasks deployed",
        )
        victim = sorted(used)[0]
        tm = cluster.tms[int(victim.split("-")[1])]
        stopped_at = time.monotonic()
        os.killpg(tm.pid, signal.SIGSTOP)
        try:
            wait_until(
                lambda: victim not in {t["id"] for t in cluster.get("/taskmanagers")["taskmanagers"]},
                timeout=30,
                what="heartbeat timeout",
            )
            noticed_after = time.monotonic() - stopped_at
            assert 2.0 <= noticed_after <= 15.0, noticed_after
            assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=90) == "FINISHED"
            entries = cluster.get(f"/jobs/{job_id}/exceptions")["exceptionHistory"]["entries"]
            assert any("heartbeat" in e["stacktrace"] for e in entries)
            assert final_sums(tmp_path / "out") == reference(8000)
        finally:
            os.killpg(tm.pid, signal.SIGKILL)
    finally:
        cluster.close()


def test_run_detached_submits_to_a_running_cluster_and_prints_the_job_id(cluster, tmp_path):
    job = keyed_job(tmp_path, parallelism=2, count=3000)
    proc = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", "--detached", job, "--jobmanager", f"127.0.0.1:{cluster.rest_port}"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    job_id = proc.stdout.strip().split()[-1]
    assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED")) == "FINISHED"
    assert final_sums(tmp_path / "out") == reference(3000)


def test_taskmanager_registers_again_with_a_restarted_jobmanager():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        rpc_port = s.getsockname()[1]
    first = SessionCluster(taskmanagers=1, slots=1, extra=("-D", f"jobmanager.rpc.port={rpc_port}"))
    try:
        first.jm.terminate()
        first.jm.wait(10)
        second = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "strom.cli",
                "jobmanager",
                "-D",
                "rest.port=0",
                "-D",
                f"jobmanager.rpc.port={rpc_port}",
                "-D",
                "metrics.reporter.prom.port=0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(),
        )
        try:
            rest_port = int(re.search(r"rest port (\d+)", second.stdout.readline()).group(1))
            first.rest_port = rest_port
            wait_until(
                lambda: first.get("/overview")["taskmanagers"] == 1, timeout=30, what="TaskManager registered again"
            )
        finally:
            second.terminate()
            second.wait(10)
            second.stdout.close()
    finally:
        first.close()


def test_collect_and_execute_async_work_on_the_mini_cluster(tmp_path):
    job = tmp_path / "collect.py"
    job.write_text(
        textwrap.dedent("""
        from strom.datastream import StreamExecutionEnvironment
        from strom.testing import collect
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        print("COLLECTED", sorted(collect(env.from_collection(list(range(10))).map(lambda v: v * 2))))
        env.from_collection([1, 2]).map(lambda v: v).print()
        client = env.execute_async("async")
        print("ASYNC", client.get_job_execution_result(60).get_job_id() == client.get_job_id())
    """)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", str(job)], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "COLLECTED [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]" in proc.stdout
    assert "ASYNC True" in proc.stdout


def test_killed_slot_process_fails_the_job_over_and_its_taskmanager_stays(tmp_path):
    import signal
    import time

    cluster = SessionCluster(taskmanagers=1, slots=2)
    try:
        job_id = submit(cluster, keyed_job(tmp_path, parallelism=2, count=6000, rate=2000, restart=True))
        cluster.wait_for_state(job_id, ("RUNNING",))
        wait_until(lambda: cluster.get(f"/jobs/{job_id}/metrics?get=uptime"), what="job running")
        tm_pid = cluster.tms[0].pid
        children = [int(p) for p in open(f"/proc/{tm_pid}/task/{tm_pid}/children").read().split()]
        slot_pids = [p for p in children if "spawn_main" in open(f"/proc/{p}/cmdline").read()]
        assert slot_pids, children
        time.sleep(0.3)  # let the job make some progress before the kill (not a wait for a condition)
        os.kill(slot_pids[0], signal.SIGKILL)
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=90) == "FINISHED"
        entries = cluster.get(f"/jobs/{job_id}/exceptions")["exceptionHistory"]["entries"]
        assert any("exited with code" in e["stacktrace"] or "connection" in e["stacktrace"].lower() for e in entries), (
            entries
        )
        assert cluster.get("/overview")["taskmanagers"] == 1
        assert final_sums(tmp_path / "out") == reference(6000)
    finally:
        cluster.close()


def test_application_mode_can_stay_up_after_its_job_for_clients_to_read_it(tmp_path):
    """execution.shutdown-on-application-finish: false — the Kubernetes operator reads the final
    state (and a stop's savepoint) from the REST API after the job ended."""
    job = keyed_job(tmp_path, parallelism=2, count=2000)
    jm = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "strom.cli",
            "jobmanager",
            "--job",
            job,
            "-D",
            "rest.port=0",
            "-D",
            "jobmanager.rpc.port=0",
            "-D",
            "metrics.reporter.prom.port=0",
            "-D",
            "execution.shutdown-on-application-finish=false",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    tm = None
    try:
        line = jm.stdout.readline()
        rpc_port, rest_port = (int(p) for p in re.search(r"rpc port (\d+), rest port (\d+)", line).groups())
        tm = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "strom.cli",
                "taskmanager",
                "--jobmanager",
                f"127.0.0.1:{rpc_port}",
                "-D",
                "taskmanager.numberOfTaskSlots=2",
                "-D",
                "metrics.reporter.prom.port=0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )

        def job_states() -> list[str]:
            with urllib.request.urlopen(f"http://127.0.0.1:{rest_port}/jobs/overview", timeout=5) as r:
                return [j["state"] for j in json.loads(r.read())["jobs"]]

        assert wait_until(lambda: job_states() == ["FINISHED"], timeout=120, what="the job FINISHED")
        assert jm.poll() is None, "the JobManager exited although told to stay up"
        assert final_sums(tmp_path / "out") == reference(2000)
        jm.send_signal(signal.SIGTERM)
        assert jm.wait(30) == 0, jm.stderr.read()
    finally:
        if tm is not None:
            tm.terminate()
            tm.wait(10)
        if jm.poll() is None:
            jm.kill()
