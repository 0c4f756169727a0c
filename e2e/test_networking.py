"""Issue 13's proof: a FlinkJob whose records cross pods, every pod on a network of its own.

The process kubelet gives every pod its own network namespace and IP and resolves Service names
to the ready pods behind them; nothing of what the operator wrote is rewritten. So this job runs
only if every address works as on a cluster: the TaskManagers find the JobManager through its
Service name, advertise their pod IPs (`taskmanager.host=$(POD_IP)`), and the keyed exchange from
the source's pod to four keyed subtasks on two TaskManager pods dials those IPs.

The FlinkJob: e2e/jobs/keyed_counts.py at parallelism 4 on 2 TaskManager pods x 2 slots, with
checkpoints and the exactly-once FileSink. Checked: each TaskManager registered with its own pod
IP (the JobManager's `/taskmanagers`, read at the JobManager pod's IP as the operator reads it,
against status.podIP); the keyed subtasks run on both pods; Prometheus text scraped from each
TaskManager pod's IP and the JobManager's on 9249 carries the job's id; the REST API answers at
the JobManager Service's name from inside a TaskManager pod's network; after SIGKILL of one
TaskManager pod's whole process group mid-run the job recovers from its last checkpoint, and the
output equals the plain-Python reference exactly (no loss, no duplicates).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest

from e2e.flinkjobs import exactly_once_report, indexes_written, keyed_counts_flinkjob, output_dir, read_output
from e2e.platform import Platform, jobmanager_rest

pytestmark = pytest.mark.timeout(360)

KEYS = 7
PHASES = [(6000, 200.0)]  # 30 s of records: the kill lands mid-run
METRICS_PORT = 9249
REST_PORT = 8081
# Run inside a pod's network: GET http://<argv[1]>/overview by name (the pod's hosts file resolves it).
OVERVIEW = ("import json, sys, urllib.request; "
            "print(json.dumps(json.loads(urllib.request.urlopen(f'http://{sys.argv[1]}/overview', timeout=5).read())))")


def registered_hosts(platform: Platform, name: str) -> list[str] | None:
    """The addresses the JobManager knows its TaskManagers by (their `path`, tcp://<advertised host>)."""
    answer = jobmanager_rest(platform, name, "/taskmanagers")
    if not answer:
        return None
    return sorted(str(urlsplit(tm["path"]).hostname) for tm in answer["taskmanagers"])


def subtask_hosts(platform: Platform, name: str, job_id: str) -> dict[str, set[str]] | None:
    """Vertex name -> the hosts (without port) its subtasks run on."""
    job = jobmanager_rest(platform, name, f"/jobs/{job_id}")
    if not job:
        return None
    out: dict[str, set[str]] = {}
    for vertex in job["vertices"]:
        details = jobmanager_rest(platform, name, f"/jobs/{job_id}/vertices/{vertex['id']}")
        if not details:
            return None
        out[vertex["name"]] = {str(s["host"]).rsplit(":", 1)[0] for s in details["subtasks"]}
    return out


def scrape(ip: str) -> str:
    with urllib.request.urlopen(f"http://{ip}:{METRICS_PORT}/metrics", timeout=10) as r:
        return r.read().decode()


def restored_checkpoint(platform: Platform, name: str, job_id: str) -> dict[str, Any] | None:
    answer = jobmanager_rest(platform, name, f"/jobs/{job_id}/checkpoints")
    return ((answer or {}).get("latest") or {}).get("restored")


def test_keyed_job_across_taskmanager_pods_on_their_own_ips_survives_a_pod_kill_exactly_once(platform: Platform):
    if platform.kubelet is None:
        pytest.skip("reads pod IPs and runs commands in pod namespaces: the process kubelet only")
    name = "e2e-net"
    taskmanagers, jobmanager = f"{name}-taskmanager", f"{name}-jobmanager"
    out = output_dir(platform, name)
    platform.create(keyed_counts_flinkjob(platform, name, out, phases=PHASES, keys=KEYS, parallelism=4, slots=2))
    status = platform.wait_running(name, timeout=150)
    job_id = status["jobStatus"]["jobId"]
    platform.wait(name, lambda: indexes_written(out) >= 300, timeout=60, what="output under way")
    platform.wait(name, lambda: platform.status(name)["jobStatus"].get("lastCheckpoint"), timeout=30,
                  what="a completed checkpoint")

    # every TaskManager registered with its own pod's IP, and the keyed subtasks run on both pods
    tm_ips = platform.pod_ips(taskmanagers)
    (jm_ip,) = platform.pod_ips(jobmanager).values()
    assert len(tm_ips) == 2 and len(set(tm_ips.values()) | {jm_ip}) == 3, f"pod IPs {tm_ips}, JobManager {jm_ip}"
    hosts = platform.wait(name, lambda: (h := registered_hosts(platform, name)) and len(h) == 2 and h, timeout=30,
                          what="two TaskManagers registered")
    assert hosts == sorted(tm_ips.values())
    placement = platform.wait(name, lambda: subtask_hosts(platform, name, job_id), timeout=30,
                              what="the job's vertices and their subtasks' hosts")
    keyed = [hosts for vertex, hosts in placement.items() if vertex.startswith("counts")]
    assert keyed == [set(tm_ips.values())], f"keyed subtasks not on both TaskManager pods: {placement}"

    # Prometheus text from each pod's own IP on 9249, with the job's id
    for ip in tm_ips.values():
        text = platform.wait(name, lambda ip=ip: job_id in (t := scrape(ip)) and t, timeout=30,
                             what=f"TaskManager metrics of the job at {ip}:{METRICS_PORT}")
        assert any(line.startswith("flink_taskmanager_job_task_") and f'job_id="{job_id}"' in line
                   for line in text.splitlines()), text[:2000]
    jm_text = platform.wait(name, lambda: job_id in (t := scrape(jm_ip)) and t, timeout=30,
                            what=f"JobManager metrics of the job at {jm_ip}:{METRICS_PORT}")
    assert any(line.startswith("flink_jobmanager_job_") and f'job_id="{job_id}"' in line
               for line in jm_text.splitlines()), jm_text[:2000]

    # the REST API at the JobManager Service's name, from inside a TaskManager pod's network
    tm_pod = sorted(tm_ips)[0]
    host = platform.kubelet.pod(tm_pod).host  # type: ignore[union-attr]
    assert host is not None
    done = host.run([sys.executable, "-c", OVERVIEW, f"{jobmanager}:{REST_PORT}"], timeout=30)
    assert done.returncode == 0, done.stderr
    overview = json.loads(done.stdout)
    assert overview["taskmanagers"] == 2 and overview["jobs-running"] == 1, overview

    # SIGKILL one TaskManager pod's whole process group mid-run
    written_at_kill = indexes_written(out)
    pid = platform.kill_pod_process(taskmanagers, group=True)
    print(f"\nkill -9 the process group of TaskManager pid {pid} at {written_at_kill} records written")
    platform.wait(name, lambda: sum(platform.restart_counts(taskmanagers)) >= 1, timeout=60,
                  what="the killed TaskManager container restarted (restartCount 1)")
    restore = platform.wait(name, lambda: restored_checkpoint(platform, name, job_id), timeout=90,
                            what="the job restored from a checkpoint")
    print(f"restored from checkpoint {restore.get('id')}")

    n = sum(count for count, _ in PHASES)
    platform.wait(name, lambda: indexes_written(out) >= n, timeout=120, what=f"all {n} records in the output")
    report = exactly_once_report(read_output(out), n, KEYS)
    assert report == "", report
    status = platform.wait_running(name, timeout=30)
    assert status["jobStatus"]["jobId"] == job_id  # the same job recovered, not a new deployment
    assert written_at_kill < n  # the kill was mid-run
    # the restarted container kept its pod and IP, and registered with it again
    assert platform.pod_ips(taskmanagers) == tm_ips
    platform.wait(name, lambda: registered_hosts(platform, name) == sorted(tm_ips.values()), timeout=30,
                  what="both TaskManagers registered at their pod IPs after the restart")
    platform.delete("FlinkJob", name)
    platform.wait_gone(name)
