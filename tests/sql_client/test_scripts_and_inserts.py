"""`strom sql` with -f and -i, an INSERT into a filesystem table read back from its files, errors with line and
column (the session continues; a script stops), and --jobmanager against a session cluster the test starts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.cli.processes import StromProcess, wait_until
from tests.sql_client.terminal import SqlTerminal, client_env, tableau_rows

pytestmark = pytest.mark.timeout(300)

PART_FILE = re.compile(r"part-[0-9a-f-]{36}-\d+-\d+")
SEQ = ("CREATE TABLE seq (id INT) WITH ('connector' = 'datagen', 'number-of-rows' = '20', "
       "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '20');")


def _sink(path: Path) -> str:
    return (f"CREATE TABLE sink (id INT, sq BIGINT) WITH ('connector' = 'filesystem', 'path' = '{path}', "
            "'format' = 'csv');")


def _sink_rows(path: Path) -> list[tuple[int, int]]:
    files = [f for f in path.rglob("*") if f.is_file() and PART_FILE.fullmatch(f.name)]
    rows = [line.split(",") for f in files for line in f.read_text().splitlines() if line]
    return sorted((int(a), int(b)) for a, b in rows)


def _strom_sql(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strom.cli", "sql", *args], cwd=cwd, env=client_env(cwd),
                          input=stdin, capture_output=True, text=True, timeout=240)


def test_an_insert_into_a_filesystem_table_prints_its_job_id_and_writes_the_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    client = SqlTerminal(cwd=tmp_path)
    try:
        client.wait_for("Welcome!")
        client.run(SEQ, then="[INFO] Execute statement succeed.")
        client.run(_sink(out), then="[INFO] Execute statement succeed.")
        shown = client.run("INSERT INTO sink SELECT id, CAST(id AS BIGINT) * id FROM seq;", then="Job ID:")
        assert "[INFO] Submitting SQL update statement to the cluster..." in shown
        client.wait_for_match(r"Job ID: [0-9a-f]{32}\n")
        assert client.quit() == 0  # QUIT waits for the local cluster's job before it stops the cluster
    finally:
        client.close()
    assert _sink_rows(out) == [(i, i * i) for i in range(1, 21)]


def test_a_script_runs_with_f_and_its_queries_print_as_tableau(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = tmp_path / "job.sql"
    script.write_text(f"-- a script with comments; and semicolons in them\n{SEQ}\n{_sink(out)}\n"
                      "SET 'sql-client.execution.result-mode' = 'tableau';\n"
                      "SELECT id, id * 3 AS tri FROM seq WHERE id > 15;\n"
                      "INSERT INTO sink SELECT id, CAST(id AS BIGINT) * id FROM seq;\n")
    r = _strom_sql("-f", str(script), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = tableau_rows(r.stdout)
    assert rows == [["+I", str(i), str(i * 3)] for i in range(16, 21)]
    assert re.search(r"Job ID: [0-9a-f]{32}", r.stdout)
    assert "Shutting down the session...\n" in r.stdout and r.stdout.rstrip().endswith("\ndone.")
    assert _sink_rows(out) == [(i, i * i) for i in range(1, 21)]


def test_a_script_stops_at_its_first_error_naming_the_file_line_and_column(tmp_path: Path) -> None:
    script = tmp_path / "bad.sql"
    # line 4: `  SELEC id FROM seq;` -> `SELEC id` reads as an expression with an alias, so the parser stops at
    # FROM, columns 12..15 of line 4 (sqlglot names a token's last column)
    script.write_text(f"{SEQ}\nSET 'sql-client.execution.result-mode' = 'tableau';\n\n  SELEC id FROM seq;\n"
                      "SHOW TABLES;\n")
    r = _strom_sql("-f", str(script), cwd=tmp_path)
    assert r.returncode == 1
    error = r.stdout.split("[ERROR] Could not execute SQL statement. Reason:\n", 1)[1].splitlines()[0]
    assert error.startswith(f"SqlParserException: {script}: SQL parse error at line 4, column 15"), error
    assert "table name" not in r.stdout  # SHOW TABLES after the error did not run


def test_f_refuses_a_query_outside_tableau_mode_as_flink_does(tmp_path: Path) -> None:
    script = tmp_path / "q.sql"
    script.write_text(f"{SEQ}\nSELECT * FROM seq;\n")
    r = _strom_sql("-f", str(script), cwd=tmp_path)
    assert r.returncode == 1
    assert "line 2, column 1: In non-interactive mode, it only supports to use TABLEAU" in r.stdout


def test_an_init_file_sets_up_the_session_before_the_prompt(tmp_path: Path) -> None:
    init = tmp_path / "init.sql"
    init.write_text(f"{SEQ}\nSET 'sql-client.execution.result-mode' = 'tableau';\n")
    r = _strom_sql("-i", str(init), cwd=tmp_path, stdin="SELECT SUM(id) AS s FROM seq;\nQUIT;\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"[INFO] Executed the initialization SQL file {init}." in r.stdout
    rows = tableau_rows(r.stdout)
    assert _final_values(rows) == [[str(sum(range(1, 21)))]]


def _final_values(changes: list[list[str]]) -> list[list[str]]:
    table: list[list[str]] = []
    for op, *values in changes:
        if op in ("+I", "+U"):
            table.append(values)
        else:
            table.remove(values)
    return table


def test_an_init_file_with_a_query_is_refused(tmp_path: Path) -> None:
    init = tmp_path / "init.sql"
    init.write_text(f"{SEQ}\n\nSELECT * FROM seq;\n")
    r = _strom_sql("-i", str(init), cwd=tmp_path, stdin="QUIT;\n")
    assert r.returncode == 1
    assert f"{init}: line 3, column 1: an initialization file sets up the session only" in r.stdout


def test_an_error_is_one_line_with_line_and_column_and_the_session_continues(tmp_path: Path) -> None:
    client = SqlTerminal(cwd=tmp_path)
    try:
        client.wait_for("Welcome!")
        client.run(SEQ, then="[INFO] Execute statement succeed.")
        # 'amout' is line 2, columns 3..7 of the statement as typed
        shown = client.run("SELECT id,\n  amout FROM seq;", then="[ERROR] Could not execute SQL statement. Reason:")
        client.wait_for("not found in any table")
        reason = client.text().split("Reason:\n")[-1].splitlines()[0]
        assert reason.startswith("ValidationException: SQL validation failed. From line 2, column 3 to line 2, "
                                 "column 7: Column 'amout' not found in any table"), (shown, reason)
        client.run("SET 'sql-client.execution.result-mode' = 'tableau';", then="Session property has been set.")
        shown = client.run("SELECT COUNT(*) AS n FROM seq;", then="Received a total of")
        assert _final_values(tableau_rows(shown)) == [["20"]]
        assert client.quit() == 0
    finally:
        client.close()
    history = (tmp_path / ".strom" / "sql_history").read_text()
    assert "SELECT COUNT(*) AS n FROM seq;" in history  # persistent history under ~/.strom


def test_an_unknown_result_mode_is_refused_naming_the_values(tmp_path: Path) -> None:
    r = _strom_sql(cwd=tmp_path, stdin="SET 'sql-client.execution.result-mode' = 'grid';\nQUIT;\n")
    assert r.returncode == 0
    assert "expected one of table, changelog, tableau" in r.stdout


def test_tab_completes_a_table_of_the_session(tmp_path: Path) -> None:
    client = SqlTerminal(cwd=tmp_path)
    try:
        client.wait_for("Welcome!")
        client.run(SEQ.replace("TABLE seq ", "TABLE sequence_numbers "), then="[INFO] Execute statement succeed.")
        client.run("SET 'sql-client.execution.result-mode' = 'tableau';", then="Session property has been set.")
        client.key("SELECT COUNT(*) AS n FROM sequence_n\t")
        client.wait_for("FROM sequence_numbers")
        client.type(";")
        shown = client.wait_for("Received a total of")
        assert _final_values(tableau_rows(shown.split("FROM sequence_numbers")[-1])) == [["20"]]
        assert client.quit() == 0
    finally:
        client.close()


# -- --jobmanager: a session cluster started here ------------------------------------------------------------
def _get(rest_port: int, path: str):  # type: ignore[no-untyped-def]
    with urllib.request.urlopen(f"http://127.0.0.1:{rest_port}{path}", timeout=10) as r:
        return json.loads(r.read())


def test_jobmanager_submits_the_insert_to_a_running_cluster_without_waiting(tmp_path: Path) -> None:
    jm = StromProcess("jobmanager", "-D", "rest.port=0", "-D", "jobmanager.rpc.port=0",
                      "-D", "metrics.reporter.prom.port=0", cwd=tmp_path)
    tm = None
    try:
        line = wait_until(lambda: next((x for x in jm.stdout if "JobManager started" in x), None), timeout=60,
                          what="the JobManager's ports")
        rpc_port, rest_port = map(int, re.search(r"rpc port (\d+), rest port (\d+)", line).groups())  # type: ignore[union-attr]
        tm = StromProcess("taskmanager", "--jobmanager", f"127.0.0.1:{rpc_port}", "-D", "metrics.reporter.prom.port=0",
                          cwd=tmp_path)
        wait_until(lambda: _get(rest_port, "/overview")["taskmanagers"] == 1, timeout=60, what="TaskManager registered")
        out = tmp_path / "out"
        script = tmp_path / "remote.sql"
        # the query runs on the cluster too, its rows streamed back to the client (a cluster on this machine)
        script.write_text(f"{SEQ}\n{_sink(out)}\nSET 'sql-client.execution.result-mode' = 'tableau';\n"
                          "SELECT id * 10 AS t FROM seq WHERE id <= 3;\n"
                          "INSERT INTO sink SELECT id, CAST(id AS BIGINT) * id FROM seq;\n")
        r = _strom_sql("--jobmanager", f"127.0.0.1:{rest_port}", "-f", str(script), cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "[INFO] Submitting SQL update statement to the cluster...\n" \
               "[INFO] SQL update statement has been successfully submitted to the cluster:\n" in r.stdout
        assert tableau_rows(r.stdout) == [["+I", "10"], ["+I", "20"], ["+I", "30"]]
        job_id = re.search(r"Job ID: ([0-9a-f]{32})", r.stdout).group(1)  # type: ignore[union-attr]
        listed = subprocess.run([sys.executable, "-m", "strom.cli", "list", "--jobmanager", f"127.0.0.1:{rest_port}"],
                                capture_output=True, text=True, timeout=60, env=client_env(tmp_path))
        assert job_id in listed.stdout, listed.stdout + listed.stderr
        wait_until(lambda: _get(rest_port, f"/jobs/{job_id}")["state"] == "FINISHED", timeout=120,
                   what="the INSERT job FINISHED on the cluster")
        assert _sink_rows(out) == [(i, i * i) for i in range(1, 21)]
    finally:
        for process in (tm, jm):
            if process is not None:
                process.kill_leftovers()


def test_a_bad_command_line_or_a_missing_script_is_one_line_and_exit_status_2(tmp_path: Path) -> None:
    for args, message in ((["--nope"], "strom sql: error: unknown argument '--nope'"),
                          (["-f", str(tmp_path / "missing.sql")], "strom sql: error: No such file or directory"),
                          (["--jobmanager", "host:notaport"], "strom sql: error: invalid port")):
        r = _strom_sql(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr
    r = _strom_sql("--help", cwd=tmp_path)
    assert r.returncode == 0 and "-f, --file SCRIPT.sql" in r.stdout and "--jobmanager" in r.stdout
