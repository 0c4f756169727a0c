"""Ctrl-C and Q on an unbounded query cancel the query, not the session (the local cluster's TaskManagers
survive: the next query runs), and statement sets (EXECUTE STATEMENT SET, BEGIN STATEMENT SET .. END) run
their INSERTs as one job."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sql_client.terminal import SqlTerminal, client_env, tableau_rows
from tests.sql_client.test_scripts_and_inserts import PART_FILE

pytestmark = pytest.mark.timeout(300)

ENDLESS = ("CREATE TABLE ticks (id INT) WITH ('connector' = 'datagen', 'rows-per-second' = '20', "
           "'fields.id.kind' = 'random', 'fields.id.min' = '1', 'fields.id.max' = '9');")
SEQ = ("CREATE TABLE seq (id INT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', "
       "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '10');")


def _count_after(client: SqlTerminal) -> None:
    """A bounded query after the cancelled one: the session and the cluster still work."""
    shown = client.run("SELECT COUNT(*) AS n FROM seq;", then="Received a total of")
    counts = [r[1] for r in tableau_rows(shown) if r[0] in ("+I", "+U")]
    assert counts[-1] == "10"


def test_ctrl_c_cancels_an_unbounded_tableau_query_and_the_session_goes_on(tmp_path: Path) -> None:
    client = SqlTerminal(cwd=tmp_path)
    try:
        client.wait_for("Welcome!")
        client.run(ENDLESS, then="[INFO] Execute statement succeed.")
        client.run(SEQ, then="[INFO] Execute statement succeed.")
        client.run("SET 'sql-client.execution.result-mode' = 'tableau';", then="Session property has been set.")
        client.type("SELECT id FROM ticks;")
        client.wait_for("| +I |", count=3)  # rows arrive
        client.key("\x03")
        text = client.wait_for("Query terminated, received a total of")
        assert re.search(r"Query terminated, received a total of \d+ rows", text)
        _count_after(client)
        assert client.quit() == 0
    finally:
        client.close()


def test_q_leaves_a_running_table_view_and_cancels_the_retrieval(tmp_path: Path) -> None:
    client = SqlTerminal(cwd=tmp_path)
    try:
        client.wait_for("Welcome!")
        client.run(ENDLESS, then="[INFO] Execute statement succeed.")
        client.run(SEQ, then="[INFO] Execute statement succeed.")
        client.type("SELECT id, COUNT(*) AS c FROM ticks GROUP BY id;")
        client.wait_for("Refresh: 1 s", count=2)  # the view is up and refreshing
        client.leave_view("Q")
        client.wait_for("[INFO] Result retrieval cancelled.")
        client.run("SET 'sql-client.execution.result-mode' = 'tableau';", then="Session property has been set.")
        _count_after(client)
        assert client.quit() == 0
    finally:
        client.close()


def _rows(path: Path) -> list[int]:
    files = [f for f in path.rglob("*") if f.is_file() and PART_FILE.fullmatch(f.name)]
    return sorted(int(line) for f in files for line in f.read_text().split())


def test_statement_sets_run_their_inserts_as_one_job_each(tmp_path: Path) -> None:
    odd, even, small = tmp_path / "odd", tmp_path / "even", tmp_path / "small"
    sinks = "\n".join(f"CREATE TABLE {p.name} (id INT) WITH ('connector' = 'filesystem', 'path' = '{p}', "
                      "'format' = 'csv');" for p in (odd, even, small))
    script = tmp_path / "sets.sql"
    script.write_text(f"{SEQ}\n{sinks}\n"
                      "EXECUTE STATEMENT SET BEGIN\n"
                      "  INSERT INTO odd SELECT id FROM seq WHERE id % 2 = 1;\n"
                      "  INSERT INTO even SELECT id FROM seq WHERE id % 2 = 0;\n"
                      "END;\n"
                      "BEGIN STATEMENT SET;\n"
                      "INSERT INTO small SELECT id FROM seq WHERE id < 4;\n"
                      "END;\n")
    r = subprocess.run([sys.executable, "-m", "strom.cli", "sql", "-f", str(script)], cwd=tmp_path,
                       env=client_env(tmp_path), capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("Job ID: ") == 2  # one job per statement set
    assert "[INFO] Begin a statement set." in r.stdout
    assert "[INFO] Add SQL update statement to the statement set." in r.stdout
    assert (_rows(odd), _rows(even), _rows(small)) == ([1, 3, 5, 7, 9], [2, 4, 6, 8, 10], [1, 2, 3])


def test_sigterm_stops_the_client_and_its_local_cluster_with_143(tmp_path: Path) -> None:
    import signal
    import uuid

    from tests.cli.processes import MARK_VAR, marked_pids, wait_until

    mark = uuid.uuid4().hex
    client = SqlTerminal(cwd=tmp_path, env={MARK_VAR: mark})
    try:
        client.wait_for("Welcome!")
        client.run(ENDLESS, then="[INFO] Execute statement succeed.")
        client.run("SET 'sql-client.execution.result-mode' = 'tableau';", then="Session property has been set.")
        client.type("SELECT id FROM ticks;")
        client.wait_for("| +I |", count=2)
        assert len(marked_pids(mark)) >= 2  # the client and its TaskManager (with its slot process)
        client.child.kill(signal.SIGTERM)
        wait_until(lambda: not client.child.isalive(), timeout=60, what="strom sql ended on SIGTERM")
        client.child.close()
        assert client.child.exitstatus == 143 or client.child.signalstatus == signal.SIGTERM
        wait_until(lambda: marked_pids(mark) == [], timeout=30, what="every process of the client ended")
    finally:
        client.close()
