"""`strom sql`: wires the command line, the configuration, where jobs run, and the session; then runs the
init script, the script file or the interactive shell. Exit status: 0 done, 1 a statement of a script failed
(or the session could not start), 2 a usage or configuration error.

SIGINT is the client's (Ctrl-C cancels a query or drops the line, see result_view); SIGTERM stops the client
and the local cluster's processes, as for every `strom` command.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, TextIO

from strom.sql_client import messages
from strom.sql_client.options import HELP, SqlClientUsageError, parse_sql_client_args

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_HISTORY = os.path.join("~", ".strom", "sql_history")
_INIT_REFUSED = ("query", "insert", "update", "end", "begin")


def sql_command(argv: list[str], *, stdin: TextIO | None = None, stdout: TextIO | None = None,
                stderr: TextIO | None = None) -> int:
    from strom.cli import RunRequest, build_configuration
    from strom.client.rest_client import RestClient, parse_address
    from strom.common.config_options import ConfigError
    from strom.common.configuration import Configuration
    from strom.common.tls import rest_client_tls
    from strom.common.tls_options import ALL_KEYS as TLS_KEYS

    stdin, out, err = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    try:
        options = parse_sql_client_args(argv)
        if options.help:
            out.write(HELP)
            return EXIT_OK
        configuration = build_configuration(
            RunRequest("", dynamic=list(options.dynamic), config_file=options.config_file), os.environ)
        address = parse_address(options.jobmanager) if options.jobmanager else None
        scripts = {name: _read(path) for name, path in (("init", options.init), ("file", options.file)) if path}
    except (SqlClientUsageError, ConfigError, ValueError) as e:
        print(f"strom sql: error: {e}", file=err)
        return EXIT_USAGE
    except OSError as e:
        print(f"strom sql: error: {e.strerror}: {e.filename!r}", file=err)
        return EXIT_USAGE
    from strom.datastream.stream_execution_environment import set_context
    from strom.sql_client.executors import RestClusterExecutor, local_executor

    executor: Any
    if address is not None:
        executor = RestClusterExecutor(RestClient(*address, ssl_context=rest_client_tls(configuration)))
        # the client's TLS keys (and passwords) are its own, never the submitted jobs' configuration
        job_configuration = Configuration({k: v for k, v in configuration.to_dict().items() if k not in TLS_KEYS})
        where = f"the cluster at {address[0]}:{address[1]}"
    else:
        executor = local_executor(configuration)
        job_configuration = configuration
        where = "an embedded local mini-cluster (started by the first job)"
    previous_sigterm = signal.signal(signal.SIGTERM, _terminate)
    set_context(job_configuration, executor)
    try:
        return _run(options, scripts, configuration=job_configuration, stdin=stdin, out=out, where=where,
                    local=address is None)
    except KeyboardInterrupt:
        return 128 + int(getattr(sys.exc_info()[1], "signum", signal.SIGINT))
    finally:
        set_context(None)
        if getattr(executor, "started", False):
            executor.cluster.close()
        signal.signal(signal.SIGTERM, previous_sigterm)


def _terminate(signum: int, frame: Any) -> None:
    from strom.runtime.shutdown_signals import Terminated

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one shutdown
    raise Terminated(signum)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _run(options: Any, scripts: dict[str, str], *, configuration: Any, stdin: TextIO, out: TextIO,
         where: str, local: bool) -> int:
    from strom.client.rest_client import parse_address
    from strom.sql_client.session import SqlSession
    from strom.sql_client.shell import run_script_file, run_shell
    from strom.table import EnvironmentSettings, TableEnvironment

    streaming = str(configuration.get("execution.runtime-mode")).upper() != "BATCH"
    settings = EnvironmentSettings.in_streaming_mode() if streaming else EnvironmentSettings.in_batch_mode()
    session = SqlSession(TableEnvironment.create(settings), out, streaming=streaming, verbose=options.verbose,
                         remote_host=parse_address(options.jobmanager)[0] if options.jobmanager else None)
    if "init" in scripts:
        session.interactive, session.source = False, options.init
        if not _run_init(session, scripts["init"]):
            return EXIT_FAILED
        session.say(f"[INFO] Executed the initialization SQL file {options.init}.", "")
    if "file" in scripts:
        session.interactive, session.source = False, options.file
        ok = run_script_file(session, scripts["file"], echo=True)
        _finish(session, local=local)
        return EXIT_OK if ok else EXIT_FAILED
    session.interactive, session.source = True, None
    history = os.path.expanduser(options.history or DEFAULT_HISTORY)
    if stdin.isatty():
        session.say(f"Strom SQL Client: Flink's SQL dialect; jobs run on {where}.",
                    f"Command history file path: {history}", "",
                    "Welcome! Enter 'HELP;' to list all available commands. 'QUIT;' to exit.", "")
    run_shell(session, history_file=history, stdin=stdin)
    _finish(session, local=local)
    return EXIT_OK


def _run_init(session: Any, text: str) -> bool:
    from strom.sql_client.shell import run_script_file
    from strom.table.sql_script import SqlScriptError, split_script

    try:
        statements = split_script(text, source=session.source)
    except SqlScriptError as e:
        session.report(e)
        return False
    for statement in statements:
        if messages.statement_kind(statement.text) in _INIT_REFUSED:
            error = SqlScriptError("an initialization file sets up the session only (DDL, SET, RESET, USE); run "
                                   "queries and INSERT statements with -f or at the prompt",
                                   line=statement.line, column=statement.column, source=session.source)
            session.report(error)
            return False
    return run_script_file(session, text, echo=False)


def _finish(session: Any, *, local: bool) -> None:
    """QUIT / end of script: Flink's lines; jobs of the local cluster end with the client, so it waits for
    them first (Ctrl-C cancels them); a remote cluster's jobs go on without it."""
    session.say(messages.SHUTTING_DOWN)
    if local:
        running = session.running_jobs()
        if running:
            session.say(f"[INFO] Waiting for {len(running)} job(s) of the local cluster to finish "
                        "(Ctrl-C cancels them)...")
            try:
                for job in running:
                    try:
                        job.wait()
                    except Exception as e:  # noqa: BLE001 - a failed job is reported, the others still awaited
                        session.say(f"[ERROR] Job {job.get_job_id()} failed: {' '.join(str(e).split())}")
            except KeyboardInterrupt:
                for job in session.running_jobs():
                    job.cancel()
    session.say(messages.DONE)
