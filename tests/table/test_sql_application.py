"""SQL scripts as applications (strom.table.sql_application) and their check without running
(strom.table.sql_check): results against plain Python, positions of errors, uids of stateful operators."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from strom.table.sql_application import run_sql_application
from strom.table.sql_check import check_script
from strom.table.sql_script import SqlScriptError

EVENTS = [  # user_id, behavior, ts
    (1, "buy", "2026-11-26 00:10:00"), (2, "pv", "2026-11-26 00:20:00"), (3, "buy", "2026-11-26 00:59:59"),
    (1, "buy", "2026-11-26 01:00:00"), (4, "buy", "2026-11-26 02:30:00"), (5, "cart", "2026-11-26 02:40:00"),
]


def _script(src: str, out: str, where: str = "behavior = 'buy'") -> str:
    return f"""
-- hourly buys
CREATE TABLE ev (user_id BIGINT, behavior STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'csv');
CREATE TABLE hourly (h BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'csv');
CREATE TABLE users (h BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}-users', 'format' = 'csv');
INSERT INTO hourly SELECT HOUR(window_start), COUNT(*)
FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR)) WHERE {where} GROUP BY window_start, window_end;
EXECUTE STATEMENT SET BEGIN
INSERT INTO users SELECT HOUR(window_start), COUNT(DISTINCT user_id)
FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR)) GROUP BY window_start, window_end;
END;
"""


def _rows(directory: str) -> list[tuple[int, int]]:
    rows = []
    for name in sorted(os.listdir(directory)):
        if not name.startswith("."):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                rows += [(int(a), int(b)) for a, b in csv.reader(f)]
    return sorted(rows)


@pytest.fixture
def events_dir(tmp_path):
    d = tmp_path / "events"
    d.mkdir()
    with open(d / "e.csv", "w", encoding="utf-8") as f:
        for e in EVENTS:
            f.write(",".join(map(str, e)) + "\n")
    return str(d)


def test_a_script_runs_its_inserts_as_one_job_with_results_equal_to_plain_python(events_dir, tmp_path):
    out = str(tmp_path / "out")
    result = run_sql_application(_script(events_dir, out))
    hours = Counter(int(ts[11:13]) for _, b, ts in EVENTS if b == "buy")
    users: dict[int, set[int]] = {}
    for u, _, ts in EVENTS:
        users.setdefault(int(ts[11:13]), set()).add(u)
    assert _rows(out) == sorted(hours.items())
    assert _rows(out + "-users") == sorted((h, len(us)) for h, us in users.items())
    assert len(result.get_table_schema().get_field_names()) == 2  # one job, both sinks


def test_check_lists_stateful_operators_whose_uids_follow_the_plan(events_dir, tmp_path):
    out = str(tmp_path / "out")
    first = check_script(_script(events_dir, out))
    again = check_script(_script(events_dir, out))
    changed = check_script(_script(events_dir, out, where="behavior = 'cart'"))
    assert first["ok"] and first["inserts"] == 2
    kinds = sorted(op["uid"].split("_")[0] for op in first["statefulOperators"])
    assert kinds == ["sink-hourly", "sink-users", "source", "window-aggregate", "window-aggregate"]
    assert first == again
    before = {op["uid"] for op in first["statefulOperators"]}
    after = {op["uid"] for op in changed["statefulOperators"]}
    lost = before - after
    # the filter under the hourly count changed: its aggregate and sink are new, the source and the users' path not
    assert sorted(u.split("_")[0] for u in lost) == ["sink-hourly", "window-aggregate"]
    assert not os.path.exists(out)  # nothing ran


def test_check_reports_a_syntax_error_with_the_script_line_and_column(events_dir, tmp_path):
    script = _script(events_dir, str(tmp_path / "o")).replace("INSERT INTO hourly SELECT", "INSERT INTO hourly SELEC")
    verdict = check_script(script)
    assert verdict["ok"] is False
    lines = script.splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "SELEC " in t)
    assert verdict["line"] == line and f"line {line}" in verdict["error"]


def test_check_reports_an_unknown_column_where_it_is(events_dir, tmp_path):
    script = _script(events_dir, str(tmp_path / "o")).replace("WHERE behavior", "WHERE behaviour")
    verdict = check_script(script)
    lines = script.splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "behaviour" in t)
    assert verdict["ok"] is False and verdict["line"] == line
    assert verdict["column"] == lines[line - 1].index("behaviour") + 1
    assert "behaviour" in verdict["error"]


@pytest.mark.parametrize("script, message", [
    ("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\nSELECT a FROM t;", "nowhere to send"),
    ("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');", "no INSERT"),
    ("", "no SQL statement"),
])
def test_an_application_script_without_a_job_is_refused(script, message):
    with pytest.raises(SqlScriptError, match=message):
        run_sql_application(script)


def test_the_check_command_prints_json_and_exits_1_on_a_bad_script(tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\n\nINSERT INTO nope SELECT a FROM t;\n")
    proc = subprocess.run([sys.executable, "-m", "strom.table.sql_check", str(bad)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["ok"] is False and verdict["line"] == 3 and "nope" in verdict["error"]


def test_a_batch_check_validates_in_batch_mode_and_runs_nothing(events_dir, tmp_path):
    from strom.common.configuration import Configuration

    out = str(tmp_path / "out")
    conf = Configuration().set_string("execution.runtime-mode", "BATCH")
    verdict = check_script(_script(events_dir, out), configuration=conf)
    assert verdict == {"ok": True, "inserts": 2, "statefulOperators": []}
    bad = check_script(_script(events_dir, out).replace("FROM TABLE(TUMBLE(TABLE ev,", "FROM TABLE(TUMBLE(TABLE e,"),
                       configuration=conf)
    assert bad["ok"] is False and "'e'" in bad["error"]
    assert not os.path.exists(out)
