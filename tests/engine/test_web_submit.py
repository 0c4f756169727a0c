"""`web.submit.enable` on a real JobManager process: application mode (`strom jobmanager --job`)
refuses REST submission unless the user turns it on; the refusal comes before the body is read,
so a payload that would run code when unpickled never does."""

from __future__ import annotations

import http.client
import json
import pickle
import re
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from strom import __version__
from strom.common.job_payload import CONTENT_TYPE, FORMAT_VERSION, MAGIC

from tests.engine.cluster_testing import _env


class _WritesAFile:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path(self.path).write_text, ("ran",))


def _hostile_payload(marker: Path) -> bytes:
    """A payload whose header this JobManager accepts and whose body writes `marker` when unpickled."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    header = json.dumps({"job_name": "j", "strom_version": __version__, "python_version": python}).encode()
    return MAGIC + struct.pack(">HI", FORMAT_VERSION, len(header)) + header + pickle.dumps(_WritesAFile(str(marker)))


@pytest.fixture
def application_jobmanager(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[int]:
    """`strom jobmanager --job` (no TaskManager: its job waits for slots, the REST endpoint serves); the REST port."""
    job = tmp_path / "app_job.py"
    job.write_text(textwrap.dedent("""
        from strom.datastream import StreamExecutionEnvironment
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1, 2, 3]).print()
        env.execute("application job")
    """))
    extra = getattr(request, "param", ())
    jm = subprocess.Popen(
        [sys.executable, "-m", "strom.cli", "jobmanager", "--job", str(job), "-D", "rest.port=0",
         "-D", "jobmanager.rpc.port=0", "-D", "metrics.reporter.prom.port=0", *extra, "--log-level", "WARNING"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(),
    )
    try:
        line = jm.stdout.readline()  # type: ignore[union-attr]
        m = re.search(r"rest port (\d+)", line)
        assert m, line
        yield int(m.group(1))
    finally:
        jm.kill()
        jm.wait(10)


def _post_job(port: int, payload: bytes) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/jobs", body=payload, headers={"Content-Type": CONTENT_TYPE})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_application_mode_refuses_rest_submission_and_runs_nothing(application_jobmanager: int, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    status, answer = _post_job(application_jobmanager, _hostile_payload(marker))
    assert (status, answer) == (403, {"errors": ["job submission is disabled (web.submit.enable: false)"]})
    assert not marker.exists()


@pytest.mark.parametrize("application_jobmanager", [("-D", "web.submit.enable=true")], indirect=True)
def test_application_mode_submits_when_the_user_enables_it(application_jobmanager: int, tmp_path: Path) -> None:
    """Enabled, the header check passes and the body is decoded: by design the submitter's code runs
    (which is why only trusted clients may reach REST); a payload that is no job graph is then 400."""
    marker = tmp_path / "ran"
    status, answer = _post_job(application_jobmanager, _hostile_payload(marker))
    assert status == 400 and "StreamGraph" in answer["errors"][0], answer
    assert marker.read_text() == "ran"
