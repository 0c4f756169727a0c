"""The job `uptime` gauge follows Flink's UpTimeGauge (issue 16 item 13): milliseconds since the last
switch to RUNNING, 0 while not (yet) running, -1 once the job reached a terminal state."""

from __future__ import annotations

import re
import urllib.request

import pytest
from strom.runtime.jobmanager.job_master import TERMINAL_JOB_STATES
from strom.runtime.metrics.uptime import uptime_ms

from .cluster_testing import SessionCluster, wait_until
from .test_cluster import submit


@pytest.mark.parametrize(
    ("state", "running_since", "now", "expected"),
    [
        ("RUNNING", 100.0, 102.5, 2500),  # 2.5 s since RUNNING
        ("RUNNING", 100.0, 99.0, 0),  # a clock stepping back never gives a negative uptime
        ("CREATED", None, 102.5, 0),
        ("RESTARTING", 100.0, 102.5, 0),  # down at the moment: 0, as Flink's "not up at the moment"
        ("FINISHED", 100.0, 102.5, -1),
        ("CANCELED", 100.0, 102.5, -1),
        ("FAILED", None, 102.5, -1),
    ],
)
def test_uptime_follows_flinks_gauge(state, running_since, now, expected):
    assert uptime_ms(state, running_since, now, terminal_states=TERMINAL_JOB_STATES) == expected


def test_a_finished_jobs_exported_uptime_is_minus_one(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(
        "from strom.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2, 3]).map(lambda v: v).print()\n"
        "env.execute('short')\n"
    )
    cluster = SessionCluster(taskmanagers=1, slots=1)
    try:
        job_id = submit(cluster, str(job))
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED")) == "FINISHED"

        def exported() -> str | None:
            with urllib.request.urlopen(f"http://127.0.0.1:{cluster.metrics_port}/metrics", timeout=10) as r:
                text = r.read().decode()
            m = re.search(rf'flink_jobmanager_job_uptime\{{[^}}]*job_id="{job_id}"[^}}]*\}} (\S+)', text)
            return m.group(1) if m else None

        assert wait_until(exported, what="the job's uptime exported") == "-1.0"
    finally:
        cluster.close()
