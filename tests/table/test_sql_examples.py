"""examples/sql: the user-behaviour demo's three scripts run as applications, their sinks compared with
plain-Python computations over the same csv (examples/sql/data, written by generate_data.py)."""

from __future__ import annotations

import csv
import os
from collections import Counter, defaultdict
from datetime import datetime, timedelta

from strom.table.sql_application import run_sql_application

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "sql")
DATA = os.path.join(EXAMPLES, "data")


def _events() -> list[tuple[int, int, int, str, datetime]]:
    with open(os.path.join(DATA, "user_behavior", "events.csv"), encoding="utf-8") as f:
        return [(int(u), int(i), int(c), b, datetime.fromisoformat(ts)) for u, i, c, b, ts in csv.reader(f)]


def _run(name: str, tmp_path) -> str:
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
        script = f.read()
    out = str(tmp_path / "out")
    run_sql_application(script.replace("'examples/sql/data", f"'{DATA}").replace("/tmp/strom-sql-demo", out))
    return out


def _rows(directory: str) -> list[list[str]]:
    rows = []
    for name in sorted(os.listdir(directory)):
        if not name.startswith("."):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                rows += list(csv.reader(f))
    return rows


def _watermark(events) -> datetime:
    return max(e[4] for e in events) - timedelta(seconds=5)  # WATERMARK FOR ts AS ts - INTERVAL '5' SECOND


def test_hourly_buy_counts_equal_plain_python(tmp_path):
    events = _events()
    out = _run("hourly_buy_counts.sql", tmp_path)
    expected = Counter(e[4].hour for e in events if e[3] == "buy")
    # a bounded source ends with the maximum watermark: every window fires
    assert sorted((int(h), int(n)) for h, n in _rows(os.path.join(out, "buy_cnt_per_hour"))) == sorted(expected.items())


def test_cumulative_unique_visitors_equal_plain_python(tmp_path):
    events = _events()
    out = _run("cumulative_uv.sql", tmp_path)
    day = min(e[4] for e in events).replace(hour=0, minute=0, second=0)
    expected = []
    for step in range(1, 24 * 6 + 1):
        end = day + timedelta(minutes=10 * step)
        users = {e[0] for e in events if e[4] < end}
        if users:  # Flink emits each cumulative window that any row was assigned to
            expected.append((end.strftime("%H:%M"), len(users)))
    got = [(t, int(n)) for t, n in _rows(os.path.join(out, "cumulative_uv"))]
    assert sorted(got) == sorted(expected)


def test_top_categories_equal_plain_python(tmp_path):
    events = _events()
    with open(os.path.join(DATA, "category", "category.csv"), encoding="utf-8") as f:
        names = {int(i): n for i, n in csv.reader(f)}
    out = _run("top_categories.sql", tmp_path)
    per_day: dict[datetime, Counter[int]] = defaultdict(Counter)
    for _, _, c, b, ts in events:
        if b == "buy":
            per_day[ts.replace(hour=0, minute=0, second=0)][c] += 1
    got = sorted((d, n, int(k)) for d, n, k in _rows(os.path.join(out, "top_categories")))
    assert len(got) == 3 * len(per_day)
    for day, counts in per_day.items():
        rows = [(n, k) for d, n, k in got if d.startswith(day.strftime("%Y-%m-%d %H:%M:%S"))]
        ranked = sorted(counts.values(), reverse=True)
        assert sorted(k for _, k in rows) == sorted(ranked[:3])  # the three best counts (ties: any of them)
        assert all(counts[next(c for c, nm in names.items() if nm == n)] == k for n, k in rows)


def test_the_committed_data_is_what_generate_data_writes(tmp_path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("generate_data", os.path.join(EXAMPLES, "generate_data.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write(str(tmp_path), 3000)
    for rel in ("user_behavior/events.csv", "category/category.csv"):
        assert (tmp_path / rel).read_text() == open(os.path.join(DATA, rel), encoding="utf-8").read()
