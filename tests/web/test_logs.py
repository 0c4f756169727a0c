"""Logs and stdout of the JobManager and TaskManagers: Flink's REST paths and the dashboard's log pages.

The truth is the files on disk: a session cluster started with `env.log.dir` writes `jobmanager.log`
and `taskmanager-tm-0.log`/`.out` there, and a job's print() lands in the TaskManager's `.out`. What
the REST API and the page show must be those files' text. Names from the request never leave the log
directory; a process without log files says which key to set.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from strom.runtime.jobmanager.log_requests import TaskManagerLogRequests
from strom.runtime.log_files import answer_log_request, process_log_file
from strom.runtime.rpc import LogAnswer, LogRequest

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.fake_jobmanager_view import serving
from tests.engine.test_cluster import submit
from tests.web.test_dashboard import WAIT_MS, _fake_view

MARKER = "dashboard-stdout-line"

# -- the files a process may serve ------------------------------------------------------------------


def _log_dir(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "jobmanager.log").write_text("line 1\nline 2\n")
    (tmp_path / "logs" / "jobmanager.out").write_text("printed\n")
    (tmp_path / "secret.txt").write_text("not a log")
    return tmp_path / "logs" / "jobmanager.log"


def _ask(log_file: Path | None, kind: str, name: str = "", **kw: int) -> LogAnswer:
    return answer_log_request(log_file, LogRequest(7, kind, name), process="the JobManager", **kw)


def test_the_list_log_and_stdout_are_the_files_of_the_log_directory(tmp_path: Path) -> None:
    log_file = _log_dir(tmp_path)
    listed = _ask(log_file, "list")
    assert [(n, size) for n, size, _ in listed.files] == [("jobmanager.log", 14), ("jobmanager.out", 8)]
    assert _ask(log_file, "log").text == b"line 1\nline 2\n"
    assert _ask(log_file, "stdout").text == b"printed\n"
    assert _ask(log_file, "file", "jobmanager.out").text == b"printed\n"


@pytest.mark.parametrize("name", ["../secret.txt", "..", ".hidden", "a/b", "/etc/passwd", "", "x" * 300])
def test_a_name_that_is_not_a_plain_file_name_is_refused(tmp_path: Path, name: str) -> None:
    answer = _ask(_log_dir(tmp_path), "file", name)
    assert (answer.status, answer.text) == (400, b"") and "invalid log file name" in answer.error


def test_a_symlink_out_of_the_log_directory_is_neither_listed_nor_read(tmp_path: Path) -> None:
    log_file = _log_dir(tmp_path)
    os.symlink(tmp_path / "secret.txt", log_file.parent / "link.log")
    assert "link.log" not in [n for n, _, _ in _ask(log_file, "list").files]
    answer = _ask(log_file, "file", "link.log")
    assert (answer.status, answer.text) == (404, b"")


def test_a_large_file_is_served_as_its_last_bytes(tmp_path: Path) -> None:
    log_file = _log_dir(tmp_path)
    body = b"".join(b"%06d\n" % i for i in range(1000))  # 7000 bytes
    log_file.write_bytes(body)
    text = _ask(log_file, "log", max_bytes=700).text
    head, rest = text.split(b"\n", 1)
    assert rest == body[-700:] and head == b"[... the first 6300 bytes are left out; the last 700 follow ...]"


def test_a_process_without_a_log_file_says_which_key_to_set(tmp_path: Path) -> None:
    answer = _ask(None, "log")
    assert answer.status == 404 and "env.log.dir" in answer.error
    assert process_log_file({}, "jobmanager") is None
    assert process_log_file({"env.log.dir": str(tmp_path)}, "taskmanager-tm/1") == tmp_path / "taskmanager-tm_1.log"
    assert process_log_file({"env.log.dir": "/x", "log.file": str(tmp_path / "a.log")}, "jm") == tmp_path / "a.log"


# -- requests to TaskManagers -------------------------------------------------------------------------


def test_a_taskmanager_answers_only_its_own_requests_and_a_lost_one_fails_them() -> None:
    async def scenario() -> list[LogAnswer]:
        sent: list[tuple[str, LogRequest]] = []
        requests = TaskManagerLogRequests(lambda tm, msg: sent.append((tm, msg)), timeout_s=30)
        first = asyncio.ensure_future(requests.ask("tm-a", "log", ""))
        second = asyncio.ensure_future(requests.ask("tm-b", "log", ""))
        await asyncio.sleep(0)  # both sent
        (_, to_a), (_, to_b) = sent
        requests.answered("tm-b", LogAnswer(to_a.request_id, text=b"forged"))  # tm-b answering tm-a's request
        requests.answered("tm-a", LogAnswer(to_a.request_id, text=b"a's log"))
        requests.lost("tm-b")
        return [await first, await second]

    a, b = asyncio.run(scenario())
    assert (a.status, a.text) == (200, b"a's log")
    assert b.status == 503 and "tm-b" in b.error


def test_a_taskmanager_that_does_not_answer_times_out() -> None:
    requests = TaskManagerLogRequests(lambda tm, msg: None, timeout_s=0.05)
    answer = asyncio.run(requests.ask("tm-a", "stdout", ""))
    assert answer.status == 504 and "tm-a did not answer" in answer.error


# -- a real cluster writing log files -----------------------------------------------------------------


def _printing_job(tmp_path: Path) -> str:
    job = tmp_path / "printing_job.py"
    job.write_text(
        textwrap.dedent(f"""
        from strom.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.from_collection([1, 2, 3]).map(lambda x: print("{MARKER}", x) or x).name("printer")
        env.execute("printing job")
        """)
    )
    return str(job)


@pytest.fixture(scope="module")
def logged_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionCluster, Path]]:
    log_dir = tmp_path_factory.mktemp("cluster-logs")
    extra = ("-D", f"env.log.dir={log_dir}", "-D", "web.refresh-interval=500")
    c = SessionCluster(taskmanagers=1, slots=1, extra=extra)
    try:
        job_id = submit(c, _printing_job(tmp_path_factory.mktemp("job")))
        assert c.wait_for_state(job_id, ("FINISHED", "FAILED")) == "FINISHED"
        out = log_dir / "taskmanager-tm-0.out"
        wait_until(lambda: out.is_file() and MARKER in out.read_text(), 30, f"{MARKER} in {out}")
        yield c, log_dir
    finally:
        c.close()


def _text(c: SessionCluster, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{c.rest_port}{path}", timeout=20) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        return r.read().decode()


def _status(c: SessionCluster, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{c.rest_port}{path}", timeout=20) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_the_rest_api_lists_and_serves_the_files_the_processes_wrote(
    logged_cluster: tuple[SessionCluster, Path],
) -> None:
    c, log_dir = logged_cluster
    on_disk = sorted(p.name for p in log_dir.iterdir())
    assert {"jobmanager.log", "jobmanager.out", "taskmanager-tm-0.log", "taskmanager-tm-0.out"} <= set(on_disk)
    assert sorted(f["name"] for f in c.get("/jobmanager/logs")["logs"]) == on_disk
    assert sorted(f["name"] for f in c.get("/taskmanagers/tm-0/logs")["logs"]) == on_disk  # one shared directory
    assert "REST endpoint listening" in _text(c, "/jobmanager/log")
    assert _text(c, "/jobmanager/log") in (log_dir / "jobmanager.log").read_text()  # a prefix of the growing file
    stdout = _text(c, "/taskmanagers/tm-0/stdout")
    assert [f"{MARKER} {i}" for i in (1, 2, 3)] == [line for line in stdout.splitlines() if MARKER in line]
    assert _text(c, "/taskmanagers/tm-0/logs/taskmanager-tm-0.out") == stdout


@pytest.mark.parametrize(
    "path",
    [
        "/taskmanagers/tm-0/logs/..%2F..%2Fetc%2Fpasswd",
        "/taskmanagers/tm-0/logs/.hidden",
        "/jobmanager/logs/..%2Fjob%2Fprinting_job.py",
        "/jobmanager/logs/missing.log",
        "/taskmanagers/tm-9/log",
    ],
)
def test_names_outside_the_log_directory_and_unknown_taskmanagers_are_refused(
    logged_cluster: tuple[SessionCluster, Path], path: str
) -> None:
    assert _status(logged_cluster[0], path) in (400, 404)


def test_the_taskmanager_log_page_shows_its_stdout_as_the_file_says(
    page: Page, logged_cluster: tuple[SessionCluster, Path], screenshots: Path
) -> None:
    c, log_dir = logged_cluster
    page.goto(f"http://127.0.0.1:{c.rest_port}/#/taskmanagers/tm-0")
    page.locator("[data-link=logs]").click(timeout=WAIT_MS)
    page.locator("[data-panel=logs] [data-tab=stdout]").click(timeout=WAIT_MS)
    shown = page.locator("[data-field=log-text]")
    expect(shown).to_contain_text(f"{MARKER} 3", timeout=WAIT_MS)
    assert shown.inner_text().strip() == (log_dir / "taskmanager-tm-0.out").read_text().strip()
    page.screenshot(path=screenshots / "taskmanager-stdout.png", full_page=True)


def test_the_jobmanager_log_list_links_each_file(page: Page, logged_cluster: tuple[SessionCluster, Path]) -> None:
    c, log_dir = logged_cluster
    page.goto(f"http://127.0.0.1:{c.rest_port}/#/jobmanager/logs")
    rows = page.locator("[data-table=log-list] tr[data-log-name]")
    expect(rows).to_have_count(len(list(log_dir.iterdir())), timeout=WAIT_MS)
    page.locator("tr[data-log-name='taskmanager-tm-0.out'] a").click()
    expect(page.locator("[data-field=log-name]")).to_have_text("taskmanager-tm-0.out", timeout=WAIT_MS)
    expect(page.locator("[data-field=log-text]")).to_contain_text(f"{MARKER} 1")


def test_a_jobmanager_without_log_files_says_which_key_to_set(page: Page) -> None:
    with serving(_fake_view()) as port:
        page.goto(f"http://127.0.0.1:{port}/#/jobmanager/log")
        expect(page.locator("[data-field=log-missing]")).to_contain_text("set env.log.dir", timeout=WAIT_MS)
        page.goto(f"http://127.0.0.1:{port}/#/jobmanager/stdout")
        expect(page.locator("[data-field=log-missing]")).to_contain_text("404", timeout=WAIT_MS)


def test_strom_run_with_env_log_dir_copies_the_jobs_prints_into_the_taskmanagers_out_file(tmp_path: Path) -> None:
    """The mini-cluster passes env.log.dir to its TaskManagers: a print() reaches the terminal and the .out file."""
    job = _printing_job(tmp_path)
    log_dir = tmp_path / "logs"
    run = subprocess.run(
        [sys.executable, "-m", "strom.cli", "run", "-D", f"env.log.dir={log_dir}", job],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    expected = [f"{MARKER} {i}" for i in (1, 2, 3)]
    assert [line for line in run.stdout.splitlines() if MARKER in line] == expected
    (out,) = log_dir.glob("taskmanager-*.out")
    assert out.read_text().splitlines() == expected
    assert (log_dir / "jobmanager.log").is_file()
