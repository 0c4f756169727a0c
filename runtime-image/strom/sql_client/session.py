"""One SQL Client session: a TableEnvironment, the client's `sql-client.*` options, and what each statement
prints (Flink's lines, strom.sql_client.messages). Statements run through the shared script runner
(strom.table.sql_script), so a failure is a SqlScriptError naming the script's line and column; the shell
prints it and goes on, `-f` stops.
"""

from __future__ import annotations

import ipaddress
import traceback
from dataclasses import dataclass, field
from typing import Any, TextIO

from strom.sql_client import display, messages, result_view
from strom.sql_client.client_options import ClientOptions, is_client_key
from strom.table.environment import TableEnvironment
from strom.table.sql.statements import Reset, Set, utility_statement
from strom.table.sql_script import ScriptStatement, SqlScriptError, execute_statement, locate_error
from strom.table.types import DataTypes


@dataclass
class SqlSession:
    t_env: TableEnvironment
    out: TextIO
    streaming: bool = True
    interactive: bool = True  # False: -f/-i scripts (queries only in tableau mode, as Flink)
    keys: result_view.Keys | None = None
    options: ClientOptions = field(default_factory=ClientOptions.empty)
    source: str | None = None  # the script's name in error messages
    jobs: list[Any] = field(default_factory=list)  # INSERT jobs this session started (JobClients)
    in_statement_set: bool = False
    verbose: bool = False  # --verbose: a failure's traceback too (as SET 'sql-client.verbose' = 'true')
    remote_host: str | None = None  # --jobmanager's host: where queries run

    # -- output ----------------------------------------------------------------------------------
    def say(self, *lines: str) -> None:
        self.out.write("".join(line + "\n" for line in lines))
        self.out.flush()

    def report(self, error: SqlScriptError) -> None:
        """Flink's error: `[ERROR] Could not execute SQL statement. Reason:` and one line with line/column."""
        cause = error.__cause__ if error.__cause__ is not None else error
        if self.verbose or self.options.verbose:
            self.out.write("".join(traceback.format_exception(cause)))
        self.say(*messages.error(cause, str(error)))

    # -- statements ------------------------------------------------------------------------------
    def run(self, statement: ScriptStatement) -> bool:
        """Run one statement and print what Flink's client prints; False when it ends the session (QUIT).
        A failure raises SqlScriptError (located in the input)."""
        kind = messages.statement_kind(statement.text)
        if kind == "quit":
            return False
        if kind == "help":
            self.say(messages.HELP_TEXT)
        elif kind == "clear":
            self.out.write("\x1b[H\x1b[2J")
            self.out.flush()
        elif kind in ("set", "reset"):
            self._set_or_reset(statement)
        elif kind == "begin":
            self._execute(statement)
            self.in_statement_set = True
            self.say(messages.BEGIN_SET, "")
        elif kind == "insert" and self.in_statement_set:
            self._execute(statement)
            self.say(messages.ADDED_TO_SET, "")
        elif kind in ("insert", "update", "end"):
            self.say(messages.SUBMITTING)
            try:
                result = self._execute(statement)
            finally:
                if kind == "end":
                    self.in_statement_set = False
            self._submitted(result)
        elif kind == "query":
            self._query(statement)
        elif kind == "explain":
            result = self._execute(statement)
            with result.collect() as rows:
                self.say(*[str(r[0]) for r in rows])
        elif kind == "show":
            result = self._execute(statement)
            schema = result.get_table_schema()
            columns = list(zip(schema.get_field_names(), schema.get_field_data_types(), strict=True))
            with result.collect() as rows:
                self.say(*display.batch_tableau(columns, [tuple(r) for r in rows]))
        else:
            self._execute(statement)
            self.say(messages.EXECUTE_SUCCEED, "")
        return True

    def _execute(self, statement: ScriptStatement) -> Any:
        return execute_statement(self.t_env, statement, source=self.source)

    def _submitted(self, result: Any) -> None:
        client = result.get_job_client()
        if client is None:  # table.dml-sync or a submitting client without job handles: nothing to name
            self.say(messages.EXECUTE_SUCCEED, "")
            return
        self.jobs.append(client)
        self.say(*messages.submitted(str(client.get_job_id())))

    def _set_or_reset(self, statement: ScriptStatement) -> None:
        try:
            parsed = utility_statement(statement.text)
        except Exception as e:  # noqa: BLE001 - a malformed SET, located like any other failure
            raise locate_error(statement, e, source=self.source) from e
        if isinstance(parsed, Set) and parsed.key is None:
            rows = sorted({**self.t_env.get_config().session_options(), **self.options.values}.items())
            string = DataTypes.STRING(False)
            self.say(*display.batch_tableau([("key", string), ("value", string)], [(k, v) for k, v in rows]))
            return
        if isinstance(parsed, Set) and parsed.key is not None and is_client_key(parsed.key):
            try:
                self.options.set(parsed.key, parsed.value or "")
            except ValueError as e:
                raise locate_error(statement, e, source=self.source) from e
            self.say(messages.PROPERTY_SET, "")
            return
        if isinstance(parsed, Reset) and parsed.key is not None and is_client_key(parsed.key):
            self.options.reset(parsed.key)
            self.say(messages.PROPERTY_RESET, "")
            return
        self._execute(statement)
        if isinstance(parsed, Reset):
            if parsed.key is None:
                self.options.reset()
                self.say(messages.ALL_PROPERTIES_RESET, "")
            else:
                self.say(messages.PROPERTY_RESET, "")
        else:
            self.say(messages.PROPERTY_SET, "")

    def _query(self, statement: ScriptStatement) -> None:
        mode = self.options.result_mode
        if not self.interactive and mode != "tableau":
            raise locate_error(statement, ValueError(messages.NON_INTERACTIVE_MODE), source=self.source)
        if self.remote_host is not None and not _is_loopback(self.remote_host):
            # the collect sink sends a query's rows to the client's loopback port (strom.datastream.collect)
            raise locate_error(statement, ValueError(
                f"a query with --jobmanager {self.remote_host}:.. runs on that cluster, whose TaskManagers send "
                "the rows to this machine's loopback port: only a cluster on this machine can answer; run the "
                "query without --jobmanager, or INSERT its result into a table"), source=self.source)
        result = self._execute(statement)
        schema = result.get_table_schema()
        columns = list(zip(schema.get_field_names(), schema.get_field_data_types(), strict=True))
        keys = self.keys or result_view.Keys(self.out)
        try:
            iterator = result.collect()
            if mode == "tableau" and self.streaming:
                result_view.show_tableau_stream(iterator, columns, out=self.out, keys=keys,
                                                max_column_width=self.options.max_column_width)
            elif mode == "tableau":
                rows = result_view.collect_all(iterator, keys=keys)
                if rows is None:
                    self.say(messages.RESULT_CANCELLED, "")
                else:
                    self.say(*display.batch_tableau(columns, [tuple(r) for r in rows]))
            else:
                cancelled = result_view.show_live_view(
                    iterator, columns, changelog=mode == "changelog", out=self.out, keys=keys,
                    max_rows=self.options.max_rows, max_column_width=self.options.max_column_width)
                if cancelled:
                    self.say(messages.RESULT_CANCELLED, "")
        except SqlScriptError:
            raise
        except Exception as e:  # noqa: BLE001 - the query's job failed while its rows were read
            raise locate_error(statement, e, source=self.source) from e

    # -- names for completion ----------------------------------------------------------------------
    def table_names(self) -> list[str]:
        return list(self.t_env.list_tables()) + list(self.t_env.list_views())

    def function_names(self) -> list[str]:
        from strom.table.sql_session import BUILT_IN_FUNCTIONS

        return list(BUILT_IN_FUNCTIONS) + list(self.t_env.list_user_defined_functions())

    def running_jobs(self) -> list[Any]:
        out = []
        for job in self.jobs:
            try:
                state = str(job.get_job_status().result())
            except Exception:  # noqa: BLE001 - a job whose state cannot be read is not waited for
                continue
            if state.upper().split(".")[-1] not in ("FINISHED", "FAILED", "CANCELED"):
                out.append(job)
        return out


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
