"""PyFlink programs run on Strom with only their imports changed, and print what PyFlink prints (issue 18).

examples/pyflink/ holds DataStream programs in the style of Flink's own examples (word_count,
windowing, state_access, event_time_timer, process_json_data, basic_operations) with PyFlink's
imports. Each is rewritten `pyflink` -> `strom` (nothing else), run as a script, and its stdout is
compared with a plain-Python computation over the program's own data, in PyFlink's print format:
PyFlink documents print() as writing "the object string" of each element through Java's
PrintSinkFunction ("(word,count)" for a Types.TUPLE record, "+I[...]" for a Types.ROW record, Python's
str() for a stream without a declared type, and an "N> " prefix from parallel subtasks).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pyflink"


def _constant(name: str, constant: str) -> Any:
    """A top-level constant of an example, read from its source (the program imports pyflink, not importable)."""
    tree = ast.parse((EXAMPLES / f"{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == constant for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(constant)


def _run(name: str, tmp_path: Path) -> list[str]:
    source = (EXAMPLES / f"{name}.py").read_text()
    assert "from pyflink" in source
    program = tmp_path / f"{name}.py"
    program.write_text(source.replace("pyflink", "strom"))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "runtime-image"))
    proc = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return sorted(re.sub(r"^\d+> ", "", line) for line in proc.stdout.splitlines() if line.strip())


def test_word_count(tmp_path: Path) -> None:
    counts: Counter[str] = Counter()
    expected = []
    for line in _constant("word_count", "TEXT"):
        for word in line.split():
            counts[word] += 1
            expected.append(f"({word},{counts[word]})")
    assert _run("word_count", tmp_path) == sorted(expected)


def test_windowing(tmp_path: Path) -> None:
    size = _constant("windowing", "WINDOW_MS")
    windows: Counter[tuple[str, int]] = Counter()
    for key, ts in _constant("windowing", "EVENTS"):
        windows[(key, ts - ts % size)] += 1
    expected = [f"({k},{start},{start + size},{n})" for (k, start), n in windows.items()]
    assert _run("windowing", tmp_path) == sorted(expected)


def test_state_access(tmp_path: Path) -> None:
    totals: defaultdict[str, int] = defaultdict(int)
    expected = []
    for key, value in _constant("state_access", "READINGS"):
        totals[key] += value
        expected.append(f"({key},{totals[key]})")
    assert _run("state_access", tmp_path) == sorted(expected)


def test_event_time_timer(tmp_path: Path) -> None:
    """A payment falls due DELAY_MS after its timestamp; one event-time timer per key and due time reports the sum
    due then (payments arrive in timestamp order, so a due time's payments are all in before its timer fires)."""
    delay = _constant("event_time_timer", "DELAY_MS")
    due: defaultdict[tuple[str, int], int] = defaultdict(int)
    for ts, key, amount in _constant("event_time_timer", "PAYMENTS"):
        due[(key, ts + delay)] += amount
    expected = [f"{key} owes {total} at {at} (event time)" for (key, at), total in due.items()]
    assert _run("event_time_timer", tmp_path) == sorted(expected)


def test_process_json_data(tmp_path: Path) -> None:
    expected = []
    for line in _constant("process_json_data", "ORDERS"):
        order = json.loads(line)
        if order["items"]:
            quantity = sum(item["qty"] for item in order["items"])
            expected.append(str({"id": order["id"], "customer": order["customer"], "quantity": quantity}))
    assert _run("process_json_data", tmp_path) == sorted(expected)


def test_basic_operations(tmp_path: Path) -> None:
    adults: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    expected = []
    for _, city, age in _constant("basic_operations", "PEOPLE"):
        if age >= 18:
            adults[city][0] += 1
            adults[city][1] += age
            expected.append(f"+I[{city}, {adults[city][0]}, {adults[city][1]}]")
    assert _run("basic_operations", tmp_path) == sorted(expected)


@pytest.mark.parametrize(
    "name", ["word_count", "windowing", "state_access", "event_time_timer", "process_json_data", "basic_operations"]
)
def test_examples_are_pyflink_programs(name: str) -> None:
    """Nothing Strom-specific in the programs: every import is PyFlink's."""
    tree = ast.parse((EXAMPLES / f"{name}.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert any(m.startswith("pyflink") for m in modules) and not any(m.startswith("strom") for m in modules)
    assert "strom" not in (EXAMPLES / f"{name}.py").read_text()
