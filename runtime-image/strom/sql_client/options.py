"""`strom sql`'s command line (pure): Flink's SQL Client options (`-f/--file`, `-i/--init`, `-hist/--history`)
plus Strom's `--jobmanager HOST:PORT` (Flink's `-m`), `-D key=value`, `--config FILE` and `--verbose`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

HELP = """\
usage: strom sql [-f SCRIPT.sql] [-i INIT.sql] [--jobmanager HOST:PORT] [-D key=value ...] [--config FILE]

Flink's SQL Client: type SQL statements ending with ';' (QUIT; or Ctrl-D ends the session). Jobs run on an
embedded local mini-cluster, or with --jobmanager on a running cluster (INSERT jobs are submitted there and
their Job ID printed; the client does not wait for them).

  -f, --file SCRIPT.sql   run the script's statements and exit (stops at the first error: exit status 1)
  -i, --init INIT.sql     run this script first to set up the session (DDL, SET, ...; no queries or INSERT)
  -m, --jobmanager HOST:PORT
                          the JobManager's REST endpoint of a running cluster (default: a local mini-cluster)
  -hist, --history FILE   the history file (default ~/.strom/sql_history)
  -D key=value            a configuration option of the session (repeatable); --config FILE a YAML file
  --verbose               print the traceback of a failure

Inside the session: SET 'sql-client.execution.result-mode' = 'table' | 'changelog' | 'tableau';
SET 'key' = 'value'; RESET; SHOW TABLES; DESCRIBE t; EXPLAIN ...; BEGIN STATEMENT SET; ... END;
EXECUTE STATEMENT SET BEGIN ...; END; HELP; QUIT;
"""


class SqlClientUsageError(ValueError):
    """A `strom sql` command line that cannot run; the message says what is wrong."""


@dataclass(slots=True)
class SqlClientOptions:
    file: str | None = None
    init: str | None = None
    jobmanager: str | None = None
    history: str | None = None
    dynamic: list[tuple[str, str]] = field(default_factory=list)
    config_file: str | None = None
    verbose: bool = False
    help: bool = False


_VALUES = {"-f": "file", "--file": "file", "-i": "init", "--init": "init", "-m": "jobmanager",
           "--jobmanager": "jobmanager", "-hist": "history", "--history": "history", "--config": "config_file"}


def parse_sql_client_args(argv: Sequence[str]) -> SqlClientOptions:
    options = SqlClientOptions()
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, inline = a.partition("=")
        if a in ("-h", "--help"):
            options.help = True
        elif a == "--verbose":
            options.verbose = True
        elif a == "-D" or a.startswith("-D"):
            text = a[2:]
            if not text:
                if i + 1 >= len(args):
                    raise SqlClientUsageError("option -D expects key=value")
                i += 1
                text = args[i]
            key, sep, value = text.partition("=")
            if not sep or not key.strip():
                raise SqlClientUsageError(f"-D expects key=value, got {text!r}")
            options.dynamic.append((key.strip(), value))
        elif a in _VALUES or (eq and name in _VALUES and name.startswith("--")):
            attr = _VALUES[name if eq and name.startswith("--") else a]
            if eq and name.startswith("--"):
                value = inline
            else:
                if i + 1 >= len(args):
                    raise SqlClientUsageError(f"option {a} expects a value")
                i += 1
                value = args[i]
            setattr(options, attr, value)
        elif a == "embedded":  # Flink's mode word (sql-client.sh embedded): the only mode
            pass
        else:
            raise SqlClientUsageError(f"unknown argument {a!r} (strom sql --help lists the options)")
        i += 1
    return options
