"""`strom run script.sql`: a SQL script as the application (strom.table.sql_application), through the
command as a user types it; its output against plain Python, its errors in one line with line and column."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

EVENTS = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("a", 5)]


def _strom(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strom.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def _script(tmp_path, insert: str) -> str:
    return (f"CREATE TABLE e (k STRING, v BIGINT)\n"
            f"  WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/in', 'format' = 'csv');\n"
            f"CREATE TABLE s (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/out', "
            f"'format' = 'csv');\n"
            f"{insert}\n")


def test_strom_run_runs_a_sql_script_and_its_sink_equals_plain_python(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "e.csv").write_text("".join(f"{k},{v}\n" for k, v in EVENTS))
    (tmp_path / "job.sql").write_text(_script(tmp_path, "INSERT INTO s SELECT k, v * 10 FROM e WHERE v > 1;"))
    proc = _strom("run", "job.sql", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = []
    for name in os.listdir(tmp_path / "out"):
        if not name.startswith("."):
            with open(tmp_path / "out" / name, encoding="utf-8") as f:
                rows += [(k, int(v)) for k, v in csv.reader(f)]
    assert sorted(rows) == sorted((k, v * 10) for k, v in EVENTS if v > 1)


def test_strom_run_reports_a_bad_statement_in_one_line_with_its_line_and_column(tmp_path):
    (tmp_path / "in").mkdir()
    script = _script(tmp_path, "INSERT INTO s SELECT k, w FROM e;")
    (tmp_path / "job.sql").write_text(script)
    line = next(i for i, text in enumerate(script.splitlines(), 1) if text.startswith("INSERT"))
    column = script.splitlines()[line - 1].index(" w ") + 2
    proc = _strom("run", "job.sql", cwd=tmp_path)
    assert proc.returncode == 1
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("strom: error: job.sql: "), proc.stderr
    assert f"line {line}, column {column}" in lines[0] and "'w'" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
