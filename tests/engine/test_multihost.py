"""The engine across hosts: JobManager and TaskManagers each in a network namespace of its own
(tests/netns.py), so nothing shares a loopback that separate machines would not share.

The JobManager binds 0.0.0.0 and is reached by name ("jobmanager", in the TaskManagers' hosts files);
the TaskManagers get no taskmanager.host and must advertise their own namespace's address, derived
from their route to the JobManager; the job is submitted from this machine through the JobManager's
address. A TaskManager advertising 127.0.0.1 to a JobManager on another host is refused with one line.
Needs root (CI runs as root): skipped otherwise.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import netns
from tests.engine.cluster_testing import ROOT, _env, wait_until

UNAVAILABLE = netns.unavailable_reason()
pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=UNAVAILABLE or "")

JOB = os.path.join(ROOT, "tests", "engine", "keyed_sums_job.py")
RPC_PORT, REST_PORT, PROM_PORT, DATA_PORT = 6123, 8081, 9249, 6121
COUNT = 20_000


class Hosts:
    """A test network and the strom processes started on its hosts (logs in files, not pipes)."""

    def __init__(self, logs: Path) -> None:
        self.net = netns.TestNetwork.create()
        self.logs = logs
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, host: netns.TestHost, name: str, *args: str) -> subprocess.Popen[bytes]:
        argv = host.command([sys.executable, "-m", "strom.cli", *args])
        with open(self.logs / f"{name}.out", "wb") as out, open(self.logs / f"{name}.err", "wb") as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, env=_env(), start_new_session=True)
        self.processes[name] = proc
        return proc

    def stderr(self, name: str) -> str:
        return (self.logs / f"{name}.err").read_text()

    def close(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self.net.close()


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    h = Hosts(tmp_path)
    yield h
    h.close()


def start_jobmanager(hosts: Hosts, host: netns.TestHost) -> None:
    hosts.start(
        host, "jobmanager", "jobmanager",
        "-D", "jobmanager.rpc.address=jobmanager", "-D", "jobmanager.bind-host=0.0.0.0",
        "-D", "rest.address=jobmanager", "-D", "rest.bind-address=0.0.0.0",
        "-D", f"jobmanager.rpc.port={RPC_PORT}", "-D", f"rest.port={REST_PORT}",
        "-D", "heartbeat.interval=500", "-D", "heartbeat.timeout=5000",
    )


def start_taskmanager(hosts: Hosts, host: netns.TestHost, tm_id: str, *extra: str) -> subprocess.Popen[bytes]:
    return hosts.start(
        host, tm_id, "taskmanager", "--jobmanager", f"jobmanager:{RPC_PORT}",
        "-D", f"taskmanager.resource-id={tm_id}", "-D", "taskmanager.numberOfTaskSlots=1",
        "-D", f"taskmanager.data.port={DATA_PORT}", "-D", "metrics.fetcher.update-interval=500 ms", *extra,
    )


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        body = r.read()
    return json.loads(body) if r.headers.get_content_type() == "application/json" else body.decode()


def rest(jm: netns.TestHost, path: str) -> Any:
    return get(f"http://{jm.ip}:{REST_PORT}{path}")


def serving(jm: netns.TestHost) -> bool:
    try:
        rest(jm, "/overview")
    except OSError:
        return False
    return True


def registered(jm: netns.TestHost) -> dict[str, dict[str, Any]]:
    try:
        return {tm["id"]: tm for tm in rest(jm, "/taskmanagers")["taskmanagers"]}
    except OSError:
        return {}  # the JobManager is not up yet


def final_sums(out_dir: Path) -> tuple[dict[int, int], int]:
    """Per key the largest running sum (the final one: sums only grow), and the number of lines."""
    finals: dict[int, int] = {}
    lines = 0
    for path in out_dir.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            for line in path.read_text().splitlines():
                key, total = map(int, line.split())
                finals[key] = max(finals.get(key, 0), total)
                lines += 1
    return finals, lines


def reference_sums(count: int) -> dict[int, int]:
    sums: Counter[int] = Counter()
    for i in range(count):
        sums[i % 13] += i
    return dict(sums)


def test_keyed_job_across_namespaces_gives_the_reference_result_and_every_address_is_the_hosts_own(
    hosts: Hosts, tmp_path: Path
):
    jm = hosts.net.add_host("jobmanager")
    tms = {"tm-a": hosts.net.add_host("taskmanager-a"), "tm-b": hosts.net.add_host("taskmanager-b")}
    # As on Kubernetes, the TaskManagers start first, while the JobManager's name resolves nowhere yet
    for tm_id, host in tms.items():
        start_taskmanager(hosts, host, tm_id)
    for host in [jm, *tms.values()]:
        hosts.net.set_names(host, {jm.ip: ["jobmanager"]})
    start_jobmanager(hosts, jm)
    wait_until(lambda: len(registered(jm)) == 2, 60, "both TaskManagers registered")

    for tm_id, info in registered(jm).items():
        assert info["path"] == f"tcp://{tms[tm_id].ip}", info  # its own namespace's address, not loopback
        assert info["dataPort"] == DATA_PORT

    out = tmp_path / "out"
    submitted = subprocess.run(
        [sys.executable, "-m", "strom.cli", "submit", JOB, str(out), str(COUNT),
         "--jobmanager", f"{jm.ip}:{REST_PORT}"],
        capture_output=True, text=True, env=_env(), timeout=120,
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = re.search(r"JobID ([0-9a-f]+)", submitted.stdout).group(1)  # type: ignore[union-attr]
    state = wait_until(
        lambda: (s := rest(jm, f"/jobs/{job_id}")["state"]) in ("FINISHED", "FAILED", "CANCELED") and s,
        120, "the job's end",
    )
    assert state == "FINISHED", rest(jm, f"/jobs/{job_id}/exceptions")

    finals, lines = final_sums(out)
    assert finals == reference_sums(COUNT)
    assert lines == COUNT  # one running sum per record

    # the keyed vertex ran a subtask on each TaskManager: records crossed between namespaces
    job = rest(jm, f"/jobs/{job_id}")
    keyed = next(v for v in job["vertices"] if "numbers" not in v["name"].lower())
    subtasks = rest(jm, f"/jobs/{job_id}/vertices/{keyed['id']}")["subtasks"]
    assert {s["host"].rsplit(":", 1)[0] for s in subtasks} == {host.ip for host in tms.values()}

    # Prometheus scrapes each TaskManager at its own address (exporter bound to the derived address)
    for tm_id, host in tms.items():
        text = get(f"http://{host.ip}:{PROM_PORT}/metrics")
        assert f'flink_taskmanager_Status_TaskSlots_Total{{tm_id="{tm_id}"}} 1.0' in text
    assert "flink_jobmanager_numRegisteredTaskManagers 2.0" in get(f"http://{jm.ip}:{PROM_PORT}/metrics")


def test_taskmanager_advertising_loopback_to_a_jobmanager_on_another_host_is_refused(hosts: Hosts):
    """The issue's check that nothing on the cluster path advertises loopback."""
    jm = hosts.net.add_host("jobmanager")
    tm = hosts.net.add_host("taskmanager-l")
    for host in (jm, tm):
        hosts.net.set_names(host, {jm.ip: ["jobmanager"]})
    start_jobmanager(hosts, jm)
    wait_until(lambda: serving(jm), 60, "the JobManager's REST API")
    proc = start_taskmanager(hosts, tm, "tm-l", "-D", "taskmanager.host=127.0.0.1")
    assert proc.wait(60) == 1
    stderr = hosts.stderr("tm-l")
    assert "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if line.startswith("strom: error:")] == [
        f"strom: error: TaskManager tm-l advertises 127.0.0.1:{DATA_PORT} but the JobManager cannot reach it "
        f"(a loopback address, while the TaskManager connects from {tm.ip}): set taskmanager.host to an address "
        "of this TaskManager that the JobManager can reach"
    ], stderr
    assert registered(jm) == {}


@pytest.mark.parametrize(
    ("jobmanager", "reason"),
    [
        ("nowhere", r"the name does not resolve \(.+\)"),  # no DNS in a test host: fails at once
        ("198.19.255.254", "network is unreachable"),  # no route out of the test network
    ],
)
def test_taskmanager_that_cannot_reach_its_jobmanager_exits_with_one_line(hosts: Hosts, jobmanager, reason):
    tm = hosts.net.add_host("taskmanager")
    proc = hosts.start(tm, "tm", "taskmanager", "--jobmanager", f"{jobmanager}:{RPC_PORT}",
                       "-D", "taskmanager.registration.timeout=2 s")
    assert proc.wait(60) == 1
    stderr = hosts.stderr("tm")
    assert "Traceback" not in stderr
    [line] = [line for line in stderr.splitlines() if line.startswith("strom: error:")]
    assert re.fullmatch(
        rf"strom: error: TaskManager could not register at JobManager {re.escape(jobmanager)}:{RPC_PORT} "
        rf"\(--jobmanager\) within 2 s: {reason}; check that the JobManager runs and that the address is "
        "reachable from this host",
        line,
    ), line
