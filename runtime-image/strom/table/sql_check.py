"""`python -m strom.table.sql_check SCRIPT|-`: a SQL application script judged without running it, as JSON.

The operator runs this before it starts a SQL FlinkJob's pods and before it upgrades one: the operator must
not import the engine's planner (its import contract keeps strom.datastream and strom.runtime out of it),
so it asks this command in a subprocess. The script runs exactly as the JobManager would run it
(strom.table.sql_application), except that its job is built and kept, never started; the answer is

    {"ok": true, "inserts": 2, "statefulOperators": [{"uid": "group-aggregate_…", "name": "…",
                                                      "state": "one_input:keyed_process/GroupAggFunction"}]}
    {"ok": false, "error": "line 3, column 8: …", "line": 3, "column": 8}

Stateful operators are the ones a savepoint holds state for: sources (split positions), sinks (pending
files, transactions) and keyed operators (aggregates, joins, ranks, windows). Their uids derive from the
plan (PlanNode.uid hashes the operator's sub-plan), so an operator whose input or logic changed has a
new uid; `state` names the runtime operator and its function, so a uid kept by a different operator is
seen too. With `-D execution.runtime-mode=BATCH` the script is validated in batch mode (Spark SQL runs such a job;
there are no savepoints, so no operators are listed). Exit status 0 when the script is valid, 1 when it
is not, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from strom.common.configuration import Configuration
from strom.table.errors import TableException

STATE_KINDS = ("source", "sink")


class _KeepGraph:
    """An executor that keeps the job's StreamGraph and starts nothing."""

    def __init__(self) -> None:
        self.graphs: list[Any] = []

    def __call__(self, graph: Any) -> None:
        self.graphs.append(graph)

    def start_job(self, graph: Any) -> _NoJob:
        self.graphs.append(graph)
        return _NoJob()


class _NoJob:
    job_id = "0" * 32

    def wait(self, timeout: float | None = None) -> None:
        return None

    def cancel(self) -> None:
        return None


def stateful_operators(graph: Any) -> list[dict[str, str]]:
    """The graph's operators that hold state in a savepoint, by uid (sorted: a stable answer)."""
    out = []
    for node in graph.nodes.values():
        t = node.transformation
        if t.kind not in STATE_KINDS and not t.key_selectors:
            continue
        op = t.operator
        function = type(op.function).__name__ if op is not None and op.function is not None else ""
        state = f"{t.kind}:{op.kind if op is not None else ''}/{function}"
        out.append({"uid": str(node.uid), "name": node.name, "state": state})
    return sorted(out, key=lambda o: o["uid"])


def check_script(script: str, *, source: str | None = None,
                 configuration: Configuration | None = None) -> dict[str, Any]:
    """The JSON-able verdict on `script` (see the module's docstring)."""
    from strom.datastream.stream_execution_environment import set_context
    from strom.table.sql_application import plan_application
    from strom.table.sql_script import SqlScriptError

    conf = (configuration or Configuration()).copy()
    keeper = _KeepGraph()
    # a BATCH job (Spark SQL runs it) is planned and validated in batch mode, and not executed: it has no
    # savepoints, so no stateful operators to report
    batch = conf.get_string("execution.runtime-mode", "STREAMING").upper() == "BATCH"
    set_context(conf, keeper)
    try:
        planned = plan_application(script, source=source, configuration=conf)
        if not batch:
            planned.statement_set.execute()
    except SqlScriptError as e:
        return {"ok": False, "error": str(e), "line": e.line, "column": e.column}
    except TableException as e:
        return {"ok": False, "error": str(e), "line": 1, "column": 1}
    finally:
        set_context(None)
    operators = [op for graph in keeper.graphs for op in stateful_operators(graph)]
    return {"ok": True, "inserts": planned.inserts, "statefulOperators": operators}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m strom.table.sql_check", description=__doc__.splitlines()[0])
    parser.add_argument("script", help="the SQL script's file, or - for standard input")
    parser.add_argument("-D", dest="options", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration option the job would run with (e.g. table.local-time-zone=UTC)")
    args = parser.parse_args(argv)
    conf = Configuration()
    for option in args.options:
        key, sep, value = option.partition("=")
        if not sep:
            parser.error(f"-D {option!r}: expected KEY=VALUE")
        conf.set_string(key.strip(), value.strip())
    if args.script == "-":
        script, source = sys.stdin.read(), None
    else:
        try:
            with open(args.script, encoding="utf-8") as f:
                script = f.read()
        except OSError as e:
            parser.error(f"cannot read the script {args.script!r}: {e.strerror}")
        source = None  # positions are the script's own; the caller names where it came from
    verdict = check_script(script, source=source, configuration=conf)
    print(json.dumps(verdict, sort_keys=True))
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
