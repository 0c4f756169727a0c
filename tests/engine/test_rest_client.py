"""The REST client and the `strom submit/list/info/cancel` command functions against the real
REST server (127.0.0.1, port 0) backed by a FakeJobManagerView."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from strom.client.commands import cancel_command, info_command, list_command, submit_command
from strom.client.rest_client import JobManagerUnreachable, RestClient, RestError, parse_address
from strom.runtime.jobmanager.read_model import JobStatus

from tests.engine.fake_jobmanager_view import NOW_MS, FakeJobManagerView, serving
from tests.engine.test_rest_api import JID, MAP, SRC, UNKNOWN, _running_job

JOB = """
import sys
from helpers import scale
from strom.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
factor = int(sys.argv[1]) if len(sys.argv) > 1 else 1
(env.from_collection([("a", 1), ("b", 2), ("a", 3)])
    .map(lambda t: (t[0], scale(t[1], factor)))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .print())
env.execute("submitted by the CLI")
"""


@pytest.fixture
def view() -> FakeJobManagerView:
    v = FakeJobManagerView()
    v.add_job(_running_job())
    return v


@pytest.fixture
def jm(view: FakeJobManagerView) -> Iterator[str]:
    with serving(view) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    (tmp_path / "job.py").write_text(JOB)
    (tmp_path / "helpers.py").write_text("def scale(x, factor):\n    return x * factor * 10\n")
    return tmp_path


def run(command, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = command(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def free_port() -> int:
    """A port nobody listens on: bound and released, so connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- RestClient -----------------------------------------------------------------------------------


def test_client_reads_overview_and_job(jm: str) -> None:
    client = RestClient(*parse_address(jm))
    assert [j["jid"] for j in client.jobs_overview()] == [JID]
    job = client.job(JID)
    assert job["name"] == "keyed job" and [v["id"] for v in job["vertices"]] == [SRC, MAP]
    assert len(client.vertex(JID, MAP)["subtasks"]) == 3


def test_client_cancel_reaches_the_view(jm: str, view: FakeJobManagerView) -> None:
    RestClient(*parse_address(jm)).cancel(JID)
    assert view.cancelled == [JID] and view.details[JID].state is JobStatus.CANCELED


def test_client_raises_the_servers_errors(jm: str) -> None:
    with pytest.raises(RestError) as info:
        RestClient(*parse_address(jm)).job(UNKNOWN)
    assert info.value.status == 404 and info.value.errors == [f"Job {UNKNOWN} not found"]
    assert str(info.value) == f"Job {UNKNOWN} not found (HTTP 404 for GET /jobs/{UNKNOWN})"


def test_client_names_an_unreachable_jobmanager() -> None:
    port = free_port()
    with pytest.raises(JobManagerUnreachable, match=f"cannot reach the JobManager at 127.0.0.1:{port}"):
        RestClient("127.0.0.1", port).jobs_overview()


@pytest.mark.parametrize(("text", "expected"), [
    ("localhost:8081", ("localhost", 8081)), ("jm", ("jm", 8081)), ("[::1]:9000", ("::1", 9000)),
    ("http://10.0.0.1:8082/", ("10.0.0.1", 8082)),
])
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["host:port", ":8081", "host:70000"])
def test_parse_address_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        parse_address(text)


# -- submit ---------------------------------------------------------------------------------------


def test_submit_posts_the_graph_and_prints_the_job_id(jm: str, view: FakeJobManagerView, job_dir: Path) -> None:
    code, out, err = run(submit_command, str(job_dir / "job.py"), "3", "--jobmanager", jm, "-p", "2")
    assert (code, err) == (0, "")
    (jid,) = [j for j in view.submitted if j != JID]
    assert out == f"Job has been submitted with JobID {jid}\n"
    graph = view.submitted[jid]
    assert graph.job_name == "submitted by the CLI"
    assert [n.kind for n in graph.nodes.values()][::3] == ["source", "sink"] and len(graph.nodes) == 4
    assert [n.parallelism for n in graph.nodes.values()][1:] == [2, 2, 2]  # -p reached the environment
    assert view.details[jid].state is JobStatus.CREATED  # submitted, nothing run locally


def test_submitted_payload_decodes_where_the_job_directory_is_unknown(
    jm: str, view: FakeJobManagerView, job_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The JobManager has neither job.py nor helpers.py: the payload must carry their code."""
    assert run(submit_command, str(job_dir / "job.py"), "3", "--jobmanager", jm)[0] == 0
    (jid,) = [j for j in view.submitted if j != JID]
    elsewhere = tmp_path_factory.mktemp("jobmanager")
    (elsewhere / "payload.bin").write_bytes(view.payloads[jid])
    probe = textwrap.dedent("""
        import sys
        from strom.common.job_payload import decode_job
        graph = decode_job(open("payload.bin", "rb").read())
        mapper = graph.nodes[2].transformation.operator.function
        print(mapper.map(("a", 2)), "helpers" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, capture_output=True, text=True,
                            timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)
                                             .replace(str(job_dir), "/nonexistent")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["('a',", "60)", "False"]  # 2 * 3 * 10, without importing helpers


def test_submit_of_a_missing_job_file_is_one_line(jm: str, tmp_path: Path) -> None:
    code, out, err = run(submit_command, str(tmp_path / "nope.py"), "--jobmanager", jm)
    assert code == 2 and err.count("\n") == 1 and "does not exist" in err


def test_submit_of_a_file_that_builds_no_graph_is_one_line(jm: str, tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text(
        "from strom.datastream import StreamExecutionEnvironment\n"
        "StreamExecutionEnvironment.get_execution_environment().execute('nothing')\n")
    code, out, err = run(submit_command, str(tmp_path / "empty.py"), "--jobmanager", jm)
    assert code == 1 and err.count("\n") == 1 and "no operators" in err and "Traceback" not in err


def test_submit_of_a_file_that_never_executes_is_one_line(jm: str, tmp_path: Path) -> None:
    (tmp_path / "idle.py").write_text("x = 1\n")
    code, out, err = run(submit_command, str(tmp_path / "idle.py"), "--jobmanager", jm)
    assert code == 1 and err.count("\n") == 1 and "never called env.execute()" in err


def test_submit_failure_shows_the_traceback_only_with_verbose(jm: str, tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise ValueError('bad input path')\n")
    code, _, err = run(submit_command, str(tmp_path / "broken.py"), "--jobmanager", jm)
    assert code == 1 and err.count("\n") == 1 and "ValueError: bad input path" in err
    code, _, err = run(submit_command, str(tmp_path / "broken.py"), "--jobmanager", jm, "--verbose")
    assert code == 1 and "Traceback" in err and err.rstrip().splitlines()[-1].startswith("strom: error:")


def test_submit_to_an_unreachable_jobmanager_is_one_line(job_dir: Path) -> None:
    port = free_port()
    code, out, err = run(submit_command, str(job_dir / "job.py"), "--jobmanager", f"127.0.0.1:{port}")
    assert code == 1 and err == f"strom: error: cannot reach the JobManager at 127.0.0.1:{port}: Connection refused\n"


def test_submit_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run(submit_command)[0] == 2
    assert run(submit_command, "job.py", "--jobmanager")[0] == 2
    assert run(submit_command, "job.py", "--jobmanager", "host:notaport")[0] == 2
    assert run(submit_command, "job.py", "-D", "no.such.key=1")[0] == 2


# -- list, info, cancel ---------------------------------------------------------------------------


def test_list_prints_a_table_of_jobs(jm: str) -> None:
    code, out, err = run(list_command, "--jobmanager", jm)
    assert code == 0 and err == ""
    header, row = out.splitlines()
    assert header.split() == ["JOB", "ID", "NAME", "STATE", "START", "TIME"]
    assert row.startswith(JID) and "keyed job" in row and "RUNNING" in row


def test_list_of_an_empty_cluster(view: FakeJobManagerView, jm: str) -> None:
    view.details.clear()
    assert run(list_command, "--jobmanager", jm)[:2] == (0, "No jobs.\n")


def test_info_shows_vertices_and_subtask_states(jm: str) -> None:
    code, out, err = run(info_command, JID, "--jobmanager", jm)
    assert code == 0 and err == ""
    assert f"Job {JID}: keyed job" in out and "RUNNING" in out
    assert f"Vertex {MAP}: Map -> Sink" in out
    subtask_rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[:3] for r in subtask_rows] == [["0", "RUNNING", "0"], ["0", "RUNNING", "0"], ["1", "RUNNING", "1"],
                                             ["2", "RUNNING", "0"]]


def test_info_of_an_unknown_job_is_one_line(jm: str) -> None:
    code, out, err = run(info_command, UNKNOWN, "--jobmanager", jm)
    assert code == 1 and err == f"strom: error: Job {UNKNOWN} not found (HTTP 404 for GET /jobs/{UNKNOWN})\n"


def test_cancel_waits_until_canceled(jm: str, view: FakeJobManagerView) -> None:
    code, out, err = run(cancel_command, JID, "--jobmanager", jm)
    assert code == 0 and out == f"Cancelling job {JID}.\nCancelled job {JID}.\n"
    assert view.details[JID].end_time == NOW_MS


def test_cancel_of_a_finished_job_is_one_line(jm: str) -> None:
    assert run(cancel_command, JID, "--jobmanager", jm)[0] == 0
    code, out, err = run(cancel_command, JID, "--jobmanager", jm)
    # README "Stopping, errors and exit codes": one line naming the job and its state, exit 1, and no
    # "Cancelling job" claimed before it (the state is read first instead of relaying the REST 409)
    assert (code, out) == (1, "")
    assert err == f"strom: error: job {JID} has already ended (CANCELED); only a running job can be cancelled\n"


def test_info_and_cancel_need_exactly_one_job_id(jm: str) -> None:
    assert run(info_command, "--jobmanager", jm)[0] == 2
    assert run(cancel_command, JID, JID, "--jobmanager", jm)[0] == 2


def test_commands_against_an_unreachable_jobmanager_are_one_line() -> None:
    address = f"127.0.0.1:{free_port()}"
    for command, argv in ((list_command, []), (info_command, [JID]), (cancel_command, [JID])):
        code, _, err = run(command, *argv, "--jobmanager", address)
        assert code == 1 and err.count("\n") == 1 and "cannot reach the JobManager" in err
