"""What the client prints for each kind of statement: Flink's SQL Client's lines, word for word, so that a
Flink user (and a script that reads the output) is at home. `statement_kind` reads only the leading keywords
(pure); the session prints the lines."""

from __future__ import annotations

import re

EXECUTE_SUCCEED = "[INFO] Execute statement succeed."
PROPERTY_SET = "[INFO] Session property has been set."
PROPERTY_RESET = "[INFO] Session property has been reset."
ALL_PROPERTIES_RESET = "[INFO] All session properties have been set to their default values."
BEGIN_SET = "[INFO] Begin a statement set."
ADDED_TO_SET = "[INFO] Add SQL update statement to the statement set."
SUBMITTING = "[INFO] Submitting SQL update statement to the cluster..."
SUBMITTED = "[INFO] SQL update statement has been successfully submitted to the cluster:"
ERROR = "[ERROR] Could not execute SQL statement. Reason:"
RESULT_CANCELLED = "[INFO] Result retrieval cancelled."
SHUTTING_DOWN = "Shutting down the session..."
DONE = "done."
NON_INTERACTIVE_MODE = (
    "In non-interactive mode, it only supports to use TABLEAU as value of sql-client.execution.result-mode when "
    "execute query. Please add 'SET sql-client.execution.result-mode=TABLEAU;' in the sql file.")

_KINDS = [
    (r"(QUIT|EXIT)$", "quit"),
    (r"HELP$", "help"),
    (r"CLEAR$", "clear"),
    (r"SET\b", "set"),
    (r"RESET\b", "reset"),
    (r"BEGIN\s+STATEMENT\s+SET$", "begin"),
    (r"END$", "end"),
    (r"EXECUTE\s+STATEMENT\s+SET\b", "update"),
    (r"(EXECUTE\s+)?(INSERT|REPLACE)\b", "insert"),
    (r"(EXECUTE\s+)?(SELECT|WITH|VALUES|\()", "query"),
    (r"(EXPLAIN)\b", "explain"),
    (r"(SHOW|DESCRIBE|DESC)\b", "show"),
]


def statement_kind(text: str) -> str:
    """quit, help, clear, set, reset, begin, end, update (EXECUTE STATEMENT SET), insert, query, explain, show,
    or ddl (everything else: CREATE, DROP, ALTER, USE, ...)."""
    for pattern, kind in _KINDS:
        if re.match(pattern, text.strip(), re.IGNORECASE):
            return kind
    return "ddl"


def submitted(job_id: str) -> list[str]:
    return [SUBMITTED, f"Job ID: {job_id}", ""]


def error(cause: BaseException, message: str) -> list[str]:
    """`[ERROR] Could not execute SQL statement. Reason:` and ONE line: the exception's name and message."""
    name = type(cause).__name__
    return [ERROR, f"{name}: {' '.join(message.split())}", ""]


HELP_TEXT = """\
The following commands are available:

CLEAR           Clears the current terminal.
CREATE TABLE    Create table under current catalog and database.
DROP TABLE      Drop table with optional catalog and database. Syntax: 'DROP TABLE [IF EXISTS] <name>;'
CREATE VIEW     Creates a virtual table from a SQL query. Syntax: 'CREATE VIEW <name> AS <query>;'
DESCRIBE        Describes the schema of a table with the given name.
DROP VIEW       Deletes a previously created virtual table. Syntax: 'DROP VIEW <name>;'
EXPLAIN         Describes the execution plan of a query or table with the given name.
HELP            Prints the available commands.
INSERT INTO     Inserts the results of a SQL SELECT query into a declared table sink.
QUIT            Quits the SQL CLI client.
RESET           Resets a session configuration property. Syntax: 'RESET '<key>';'. Use 'RESET;' for reset all.
SELECT          Executes a SQL SELECT query on the Flink cluster.
SET             Sets a session configuration property. Syntax: 'SET '<key>'='<value>';'. Use 'SET;' for listing.
SHOW TABLES     Shows all registered tables.
SHOW FUNCTIONS  Shows all user-defined and built-in functions.
USE             Sets the current default database. Syntax: 'USE <name>;'
BEGIN STATEMENT SET  Begins a statement set. Syntax: 'BEGIN STATEMENT SET;'
END             Ends a statement set. Syntax: 'END;'

Hint: Make sure that a statement ends with ';' for finalizing (multi-line) statements.
The result modes are set with SET 'sql-client.execution.result-mode' = 'table' | 'changelog' | 'tableau';
"""
