"""A SQL script as an application: what the JobManager runs for a SQL FlinkJob, and `strom run x.sql`.

Flink's SQL Driver (FLIP-316/480) builds a TableEnvironment from the cluster's configuration and runs the
script's statements one by one. An application cluster with high availability takes ONE job (Flink's
dispatcher refuses a second with DuplicateJobSubmissionException), and the operator turns HA on whenever
checkpointing is on; so here every INSERT of the script (bare, `EXECUTE STATEMENT SET BEGIN .. END` or
`BEGIN STATEMENT SET; .. END;`) joins ONE statement set, which runs as one job after the last statement —
the same job, and so the same operator uids, whichever way the script groups its INSERTs. The other
statements (DDL, SET, RESET, USE, SHOW, ...) run in order as they come. A SELECT is refused: in an
application its rows would have nowhere to go, and an unbounded one would never let the job start.

`plan_application` does everything but start the job; the savepoint-compatibility check
(strom.table.sql_check) runs it with an executor that keeps the graph instead of running it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strom.common.configuration import Configuration
from strom.table import sql_script
from strom.table.environment import EnvironmentSettings, TableEnvironment
from strom.table.errors import ValidationException
from strom.table.sql import parser as sqlp
from strom.table.sql import positions
from strom.table.statement_set import StatementSet
from strom.table.table_result import TableResult

RUNTIME_MODE = "execution.runtime-mode"


@dataclass(frozen=True, slots=True)
class PlannedApplication:
    """A script whose statements ran up to its INSERTs, which wait in `statement_set`."""

    t_env: TableEnvironment
    statement_set: StatementSet
    inserts: int


def table_environment(configuration: Configuration | None = None) -> TableEnvironment:
    """The application's TableEnvironment: BATCH when the configuration says so (Spark SQL then runs it)."""
    conf = configuration or Configuration()
    batch = str(conf.get_string(RUNTIME_MODE, "STREAMING")).upper() == "BATCH"
    settings = EnvironmentSettings.in_batch_mode() if batch else EnvironmentSettings.in_streaming_mode()
    return TableEnvironment.create(settings)


def _located(statement: sql_script.ScriptStatement, source: str | None,
             action: Callable[[], Any]) -> Any:
    """`action()` with any failure raised as a SqlScriptError at the statement's place in the script."""
    try:
        return action()
    except ValidationException as e:  # an unknown column or table: where it is, as execute_sql says it
        raise sql_script.locate_error(statement, positions.with_position(e, statement.text), source=source) from e
    except sql_script.SqlScriptError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure of a statement is reported with its position
        raise sql_script.locate_error(statement, e, source=source) from e


def plan_application(script: str, *, source: str | None = None,
                     configuration: Configuration | None = None) -> PlannedApplication:
    """Run the script's statements except its INSERTs, which are validated and collected into one
    statement set. Raises SqlScriptError (line and column in the script) on the first bad statement."""
    statements = sql_script.split_script(script, source=source)
    if not statements:
        raise sql_script.SqlScriptError("the script has no SQL statement", line=1, column=1, source=source)
    t_env = table_environment(configuration)
    statement_set = t_env.create_statement_set()
    inserts = 0
    in_set_block = False  # between BEGIN STATEMENT SET; and END;
    for statement in statements:
        parsed = _located(statement, source, lambda s=statement: sqlp.parse_statement(s.text))
        if isinstance(parsed, sqlp.StatementSetBegin):
            in_set_block = True
        elif isinstance(parsed, sqlp.StatementSetEnd):
            if not in_set_block:
                raise sql_script.locate_error(statement, ValidationException("END without BEGIN STATEMENT SET"),
                                              source=source)
            in_set_block = False
        elif isinstance(parsed, (sqlp.Insert, sqlp.ExecuteStatementSet)):
            batch = parsed.inserts if isinstance(parsed, sqlp.ExecuteStatementSet) else [parsed]
            for insert in batch:
                _located(statement, source, lambda i=insert: statement_set._add(i))
                inserts += 1
        elif in_set_block:
            raise sql_script.locate_error(statement, ValidationException(
                "only INSERT statements can be added to a statement set (BEGIN STATEMENT SET .. END)"), source=source)
        elif isinstance(parsed, sqlp.Query):
            raise sql_script.locate_error(statement, ValidationException(
                "a SELECT in an application script has nowhere to send its rows: write them to a table with "
                "INSERT INTO .. SELECT"), source=source)
        else:
            _located(statement, source, lambda s=statement: t_env.execute_sql(s.text))
    if in_set_block:
        raise sql_script.locate_error(statements[-1], ValidationException(
            "BEGIN STATEMENT SET without END"), source=source)
    if inserts == 0:
        last = statements[-1]
        raise sql_script.SqlScriptError("the script has no INSERT statement: an application runs the INSERTs of "
                                        "its script as its job", line=last.line, column=last.column, source=source)
    return PlannedApplication(t_env, statement_set, inserts)


def run_sql_application(script: str, *, source: str | None = None,
                        configuration: Configuration | None = None) -> TableResult:
    """Plan the script, then run its INSERTs as one job and wait for it to end (an unbounded job runs
    until it is stopped or cancelled, as `env.execute()` of a Python application does)."""
    planned = plan_application(script, source=source, configuration=configuration)
    result = planned.statement_set.execute()
    result.wait()
    return result


def run_sql_file(path: str, configuration: Configuration | None = None) -> TableResult:
    with open(path, encoding="utf-8") as f:
        script = f.read()
    return run_sql_application(script, source=path, configuration=configuration)
