"""The `strom` command: run a job file with a configuration.

`strom run JOB.py [job args...] [-p N] [-D key=value ...] [--config FILE]` builds one
`Configuration` from, in rising precedence, the registry defaults, a YAML file
(`--config FILE`, else `$STROM_CONF_DIR/config.yaml`), `-D` pairs and `--parallelism`;
installs it as the context of every `StreamExecutionEnvironment` the job creates; and
runs the job file as `__main__`. Parsing and configuration building are pure functions;
`run_job` is the single place that executes a job, so a cluster-backed runner can
replace it behind the same command.

Every command shares one contract (help texts and exit codes: cli_help.py): an expected failure is
one line on stderr naming what to fix (--verbose adds the traceback); SIGINT and SIGTERM stop the
command and every process it started (shutdown_signals.py) and exit 128 + the signal's number.
"""

from __future__ import annotations

import logging
import os
import runpy
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import yaml

from strom import __version__
from strom.cli_help import COMMAND_HELP, TOP
from strom.common.config_options import (
    OPTIONS,
    PARALLELISM,
    SAVEPOINT_IGNORE_UNCLAIMED_STATE,
    SAVEPOINT_PATH,
    ConfigError,
)
from strom.common.configuration import Configuration
from strom.runtime.shutdown_signals import exit_status, signal_name, stop_children, stop_on_signals

EXIT_OK, EXIT_JOB_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_SIGINT, EXIT_SIGTERM = 130, 143  # 128 + the signal's number, as shells report it
# stdout closed by its reader (`strom info JOBID | grep -q x`): no message and 128 + SIGPIPE, what git and
# coreutils give (the default SIGPIPE action kills them; the shell reports 141)
EXIT_SIGPIPE = 141

USAGE = TOP  # `strom --help`


class UsageError(ValueError):
    """A command line that cannot be run; the message says what is wrong."""


@dataclass(slots=True)
class RunRequest:
    path: str
    job_args: list[str] = field(default_factory=list)
    dynamic: list[tuple[str, str]] = field(default_factory=list)
    parallelism: str | None = None
    config_file: str | None = None
    # command options other than configuration: --taskmanagers, --jobmanager, --log-level, --detached, ...
    options: dict[str, str] = field(default_factory=dict)


# Options that take a value / flags, recognized by every command; each command uses the ones it knows.
VALUE_OPTIONS = ("--taskmanagers", "--jobmanager", "--log-level", "--job", "--from-savepoint", "--runtime-mode",
                 "--spark-master", "--progress-interval")
FLAG_OPTIONS = ("--detached", "--verbose", "--threads", "--allow-non-restored-state")

# -- parsing (pure) ---------------------------------------------------------------------------


def _split_dynamic(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"-D expects key=value, got {text!r}")
    return key.strip(), value


def parse_run_args(argv: Sequence[str], *, require_path: bool = True) -> RunRequest:
    """`run`'s arguments. Strom's options are recognized anywhere; the first other
    positional is the job file; everything else, and all after `--`, goes to the job."""
    options: dict[str, str] = {}
    path: str | None = None
    job_args: list[str] = []
    dynamic: list[tuple[str, str]] = []
    parallelism: str | None = None
    config_file: str | None = None
    args = list(argv)
    i = 0

    def value_of(option: str) -> str:
        nonlocal i
        if i + 1 >= len(args):
            raise UsageError(f"option {option} expects a value")
        i += 1
        return args[i]

    while i < len(args):
        a = args[i]
        if a == "--":
            job_args.extend(args[i + 1 :])
            break
        if a in ("-p", "--parallelism"):
            parallelism = value_of(a)
        elif a.startswith("--parallelism="):
            parallelism = a.partition("=")[2]
        elif a == "-D":
            dynamic.append(_split_dynamic(value_of(a)))
        elif a.startswith("-D"):
            dynamic.append(_split_dynamic(a[2:]))
        elif a in VALUE_OPTIONS:
            options[a] = value_of(a)
        elif a.partition("=")[0] in VALUE_OPTIONS:
            options[a.partition("=")[0]] = a.partition("=")[2]
        elif a in FLAG_OPTIONS:
            options[a] = "true"
        elif a == "--config":
            config_file = value_of(a)
        elif a.startswith("--config="):
            config_file = a.partition("=")[2]
        elif path is None and not a.startswith("-"):
            path = a
        elif path is None:
            raise UsageError(f"unknown option {a!r} before the job file")
        else:
            job_args.append(a)
        i += 1
    if path is None and require_path:
        raise UsageError("strom run: missing the job file (strom run JOB.py [job args...])")
    return RunRequest(path or "", job_args, dynamic, parallelism, config_file, options)


# -- configuration (pure but for reading the file) --------------------------------------------


def flatten_config(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested YAML maps to Flink's dotted keys (Flink 1.19+ config.yaml). A map stays a
    value where its dotted key is a map-typed option."""
    flat: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        opt = OPTIONS.get(key)
        if isinstance(v, Mapping) and not (opt is not None and opt.type == "map"):
            flat.update(flatten_config(v, key + "."))
        else:
            flat[key] = v
    return flat


def load_config_file(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            tree = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(f"cannot read configuration file {path!r}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"configuration file {path!r} is not valid YAML: {e}") from None
    if tree is None:
        return {}
    if not isinstance(tree, Mapping):
        raise ConfigError(f"configuration file {path!r}: expected a map of keys to values, got {type(tree).__name__}")
    flat = flatten_config(tree)
    for key, value in flat.items():
        if value is None:
            raise ConfigError(f"configuration file {path!r}: key {key!r} has no value")
    return flat


def config_file_for(request: RunRequest, environ: Mapping[str, str]) -> str | None:
    if request.config_file is not None:
        return request.config_file
    conf_dir = environ.get("STROM_CONF_DIR")
    if conf_dir:
        candidate = os.path.join(conf_dir, "config.yaml")
        if os.path.isfile(candidate):
            return candidate
    return None


def build_configuration(request: RunRequest, environ: Mapping[str, str]) -> Configuration:
    """defaults < config file < -D < --parallelism; raises ConfigError naming the bad key."""
    conf = Configuration()
    path = config_file_for(request, environ)
    if path is not None:
        for key, value in load_config_file(path).items():
            conf.set(key, value)
    for key, value in request.dynamic:
        conf.set(key, value)
    if request.parallelism is not None:
        conf.set(PARALLELISM.key, request.parallelism)
    # Flink's -s/--fromSavepoint and -n/--allowNonRestoredState are these two keys
    if "--from-savepoint" in request.options:
        conf.set(SAVEPOINT_PATH.key, request.options["--from-savepoint"])
    if request.options.get("--allow-non-restored-state"):
        conf.set(SAVEPOINT_IGNORE_UNCLAIMED_STATE.key, "true")
    # BATCH mode on Spark: the mode is Flink's key, the master Spark's own
    if "--runtime-mode" in request.options:
        conf.set("execution.runtime-mode", request.options["--runtime-mode"].upper())
    if "--spark-master" in request.options:
        conf.set("spark.master", request.options["--spark-master"])
    return conf


# -- running ----------------------------------------------------------------------------------


def syntax_error_line(error: SyntaxError) -> str:
    """`file:line: message`, as compilers say it: the traceback of a syntax error shows only runpy."""
    where = error.filename
    if where and os.path.isabs(where) and not os.path.relpath(where).startswith(".."):
        where = os.path.relpath(where)
    return f"{where or '<job>'}:{error.lineno or '?'}: {error.msg}"


def _user_traceback(error: BaseException, job_path: str) -> str:
    """The traceback from the job file's first frame on: the CLI's and runpy's frames are noise."""
    tb = error.__traceback__
    target = os.path.abspath(job_path)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb or error.__traceback__))


def run_job(
    path: str,
    job_args: Sequence[str],
    configuration: Configuration,
    *,
    stderr: TextIO | None = None,
    executor: Any = None,
    interrupted: str = "the job was cancelled",
) -> int:
    """Run a job file as __main__ with `configuration` as the context of its environments and
    `executor` running what it executes (None: in-process threads).
    Returns the exit status: 0 finished, 1 failed (reported on stderr), 128 + N stopped by signal N
    (`interrupted` says what became of the job)."""
    from strom.datastream.stream_execution_environment import NoOperatorsError, set_context
    from strom.runtime.local_executor import JobExecutionError
    from strom.table.errors import TableException

    err = stderr or sys.stderr
    module = None
    if path.startswith("module:"):
        module = path[len("module:") :]
    elif not os.path.isfile(path):
        print(f"strom: error: job file {path!r} does not exist", file=err)
        return EXIT_USAGE
    job_dir = os.getcwd() if module else os.path.dirname(os.path.abspath(path))
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *job_args]
    sys.path.insert(0, job_dir)  # as `python JOB.py` does: the job's own modules import
    set_context(configuration, executor)
    try:
        if module:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        elif path.endswith(".sql"):  # a SQL script as the application (strom.table.sql_application)
            from strom.table.sql_application import run_sql_file

            run_sql_file(path, configuration)
        else:
            runpy.run_path(path, run_name="__main__")
        return EXIT_OK
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or EXIT_OK
        print(e.code, file=err)
        return EXIT_JOB_FAILED
    except KeyboardInterrupt as e:
        print(f"strom: stopped by {signal_name(e)}; {interrupted}", file=err)
        return exit_status(e)
    except SyntaxError as e:
        print(f"strom: error: {syntax_error_line(e)}", file=err)
        return EXIT_JOB_FAILED
    except NoOperatorsError as e:
        print(f"strom: error: {path}: {e}", file=err)
        return EXIT_JOB_FAILED
    except LocalClusterStartError as e:
        raise e.error from None
    except JobExecutionError as e:
        print("\n The program finished with the following exception:\n", file=err)
        print(str(e), file=err)
        return EXIT_JOB_FAILED
    except Exception as e:  # noqa: BLE001 - any error of the job program is reported, not raised
        if isinstance(e, TableException) and path.endswith(".sql"):  # a script's statement: line and column
            print(f"strom: error: {e if getattr(e, 'source', None) else f'{path}: {e}'}", file=err)
            return EXIT_JOB_FAILED
        print("\n The program finished with the following exception:\n", file=err)
        print(_user_traceback(e, path), file=err, end="")
        return EXIT_JOB_FAILED
    finally:
        set_context(None)
        sys.argv = saved_argv
        sys.path[:] = saved_path


def _setup_logging(request: RunRequest, default: str = "WARNING") -> None:
    import logging

    level = request.options.get("--log-level", default).upper()
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"{what} expects HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def run_command(request: RunRequest, configuration: Configuration) -> int:
    """`strom run`: the job on a local mini-cluster of JobManager + TaskManager processes, or in
    this process's threads with --threads."""
    if request.options.get("--threads") or configuration.get("execution.runtime-mode") == "BATCH":
        return run_job(request.path, request.job_args, configuration)  # BATCH: Spark, no mini-cluster
    if request.options.get("--detached"):
        # detached: the job goes to a running cluster (--jobmanager, REST) and the command returns its id
        from strom.client.commands import submit_command

        argv = [request.path]
        for key, value in request.dynamic:
            argv += ["-D", f"{key}={value}"]
        if request.parallelism:
            argv += ["-p", request.parallelism]
        if request.config_file:
            argv += ["--config", request.config_file]
        if "--jobmanager" in request.options:
            argv += ["--jobmanager", request.options["--jobmanager"]]
        if "--from-savepoint" in request.options:
            argv += ["--from-savepoint", request.options["--from-savepoint"]]
        if request.options.get("--allow-non-restored-state"):
            argv += ["--allow-non-restored-state"]
        return int(submit_command([*argv, "--", *request.job_args]))
    from strom.runtime.minicluster import MiniCluster

    _setup_logging(request)
    taskmanagers = request.options.get("--taskmanagers")
    if taskmanagers is not None and not taskmanagers.isdigit():
        raise UsageError(f"--taskmanagers expects a number, got {taskmanagers!r}")
    interval = _progress_interval(request)
    cluster = MiniCluster(configuration, taskmanagers=int(taskmanagers) if taskmanagers else None)
    if "--log-level" not in request.options:  # progress is INFO, the default level WARNING: show it still
        logging.getLogger("strom.run").setLevel(logging.INFO)

    def stopping(signum: int) -> None:
        # before the TaskManagers go (a signal to the process group reaches them at the same time): their
        # disconnects are then the shutdown, not failures to recover from
        if not request.options.get("--verbose"):
            _quiet_library_tracebacks(signum)
        if cluster.jm is not None:
            cluster.jm.stopping = True

    with stop_on_signals(on_signal=stopping):
        return _run_on(cluster, request, configuration, interval)


def _progress_interval(request: RunRequest) -> float:
    from strom.run_progress import DEFAULT_INTERVAL_S

    text = request.options.get("--progress-interval")
    if text is None:
        return DEFAULT_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise UsageError(f"--progress-interval expects seconds (a number >= 0; 0: no progress lines), got {text!r}")
    return value


def _run_on(cluster: Any, request: RunRequest, configuration: Configuration, progress_interval_s: float) -> int:
    executor = LazyClusterExecutor(cluster, progress_interval_s)
    try:
        return run_job(request.path, request.job_args, configuration, executor=executor)
    finally:
        if executor.started:
            cluster.close()


class LocalClusterStartError(Exception):
    """The mini-cluster did not start (`error`): run_job hands the OSError on to main(), as before a job."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class LazyClusterExecutor:
    """`strom run`'s executor: the mini-cluster starts when the program executes its first STREAMING job
    (a program that sets BATCH in code runs on Spark, and one that executes nothing starts nothing)."""

    def __init__(self, cluster: Any, progress_interval_s: float = 0.0) -> None:
        self.cluster = cluster
        self.progress_interval_s = progress_interval_s
        self.started = False
        self._executor: Any = None

    def _started(self) -> Any:
        if self._executor is None:
            self.started = True  # before start(): a half-started cluster is closed too
            try:
                self.cluster.start()
            except OSError as e:  # a port in use: one line from main(), not the job program's traceback
                raise LocalClusterStartError(e) from e
            jm = self.cluster.jm
            # stderr: stdout is the job's (print sinks); the port is random unless rest.port was set
            print(
                f"Local cluster started: REST http://127.0.0.1:{jm.rest_port} "
                f"(strom list --jobmanager 127.0.0.1:{jm.rest_port}), rpc port {jm.rpc_port}",
                file=sys.stderr,
                flush=True,
            )
            self._executor = self.cluster.executor()
        return self._executor

    def __call__(self, graph: Any) -> Any:
        """Submit and wait for the outcome, with progress lines meanwhile; interrupted, cancel the job."""
        from strom.run_progress import report_progress

        handle = self._started().start_job(graph)
        with report_progress(self.cluster.jm, handle.get_job_id(), graph.job_name, self.progress_interval_s):
            try:
                return handle.wait()
            except KeyboardInterrupt:
                handle.cancel()
                raise

    def start_job(self, graph: Any) -> Any:
        return self._started().start_job(graph)


def jobmanager_command(request: RunRequest, configuration: Configuration) -> int:
    from strom.runtime.jobmanager.process import run_jobmanager

    _setup_logging(request, "INFO")
    job = request.options.get("--job") or (request.path or None)
    if job is not None:
        check_job_file(job)
    return run_jobmanager(configuration, job=job, job_args=request.job_args, run_job=run_job)


def taskmanager_command(request: RunRequest, configuration: Configuration) -> int:
    from strom.common.config_options import RPC_ADDRESS, RPC_PORT
    from strom.runtime.taskmanager.registration import JobManagerAddress, RegistrationError
    from strom.runtime.taskmanager.taskmanager import taskmanager_main

    _setup_logging(request, "INFO")
    if "--jobmanager" in request.options:
        host, port = _host_port(request.options["--jobmanager"], "--jobmanager")
        jobmanager = JobManagerAddress(host, port, key="--jobmanager")
    else:
        jobmanager = JobManagerAddress(configuration.get(RPC_ADDRESS), configuration.get(RPC_PORT), key=RPC_ADDRESS.key)
    try:
        taskmanager_main(configuration, jobmanager=jobmanager)
    except RegistrationError as e:
        # no JobManager took this TaskManager, or the one it found cannot reach it back: one line, not a traceback
        print(f"strom: error: {e}", file=sys.stderr)
        return EXIT_JOB_FAILED
    return EXIT_OK


COMMANDS = {
    "run": (run_command, True),
    "jobmanager": (jobmanager_command, False),
    "taskmanager": (taskmanager_command, False),
}


CLIENT_COMMANDS = ("submit", "list", "info", "cancel", "savepoint", "stop")


def check_job_file(path: str) -> None:
    """A job file that does not exist is a usage error, one that does not compile a failed job (exit 1):
    both one line before any process starts."""
    if path.startswith("module:"):
        return
    if not os.path.isfile(path):
        raise UsageError(f"job file {path!r} does not exist")
    if path.endswith(".sql"):
        return  # a SQL script is parsed by the application itself, statement by statement
    with open(path, "rb") as f:
        compile(f.read(), path, "exec")  # a SyntaxError before any process starts for the job




def check_savepoint_path(configuration: Configuration) -> None:
    """`--from-savepoint` / execution.savepoint.path on this machine's file system must exist before a
    cluster starts for it (a remote one, s3://..., is checked by the JobManager when the job starts)."""
    path = str(configuration.get(SAVEPOINT_PATH) or "")
    if not path or ("://" in path and not path.startswith("file://")):
        return
    local = path.removeprefix("file://")
    if not os.path.exists(local):
        raise UsageError(
            f"no savepoint at {path!r} ({SAVEPOINT_PATH.key}, --from-savepoint): the path does not exist; "
            "give a savepoint directory or its _metadata file"
        )
    if os.path.isdir(local) and not os.path.isfile(os.path.join(local, "_metadata")):
        raise UsageError(
            f"no savepoint at {path!r} ({SAVEPOINT_PATH.key}, --from-savepoint): the directory has no _metadata file"
        )


def _print_help(args: list[str]) -> int:
    """`strom --help` (every command) or, without arguments, the same on stderr as a usage error."""
    print(TOP, file=sys.stdout if args else sys.stderr, end="")
    return EXIT_OK if args else EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """The `strom` command. SIGINT and SIGTERM stop it and every process it started (exit 128 + signal);
    an expected failure is one line on stderr (--verbose: the traceback too); a closed stdout ends it
    quietly with 141 (see EXIT_SIGPIPE)."""
    try:
        code = _main(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return code
    except BrokenPipeError:
        return _stdout_closed()


def _main(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help", "help"):
        return _print_help(args)
    if args[0] in ("-V", "--version"):
        print(f"strom {__version__}")
        return EXIT_OK
    if args[0] == "sql":  # the SQL client handles SIGINT itself: Ctrl-C cancels a query, not the session
        from strom.sql_client.command import sql_command

        return sql_command(args[1:])
    verbose = request_is_verbose(args)
    try:
        with stop_on_signals(on_signal=None if verbose else _quiet_library_tracebacks):
            code = _dispatch(args)
        if code in (EXIT_SIGINT, EXIT_SIGTERM) and args[0] == "run":
            stop_children()  # nothing `strom run` started outlives it (Spark's JVM in BATCH mode)
        return code
    except KeyboardInterrupt as e:
        if args[0] == "run":
            stop_children()
        if args[0] == "taskmanager":  # its clusters stop it by SIGTERM every time: the log says it, at INFO
            logging.getLogger("strom.runtime.taskmanager").info("stopped by %s", signal_name(e))
        else:
            print(f"strom: stopped by {signal_name(e)}", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:
        return _stdout_closed()
    except OSError as e:  # a port in use, an unreadable file: what to fix is in the message
        if verbose:
            raise
        print(f"strom: error: {os_error_line(e)}", file=sys.stderr)
        return EXIT_JOB_FAILED


def _stdout_closed() -> int:
    """The reader of stdout went away: end quietly. Whatever is still buffered goes to /dev/null, so that
    the interpreter's final flush does not print 'Exception ignored ... BrokenPipeError' either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_SIGPIPE


def os_error_line(error: OSError) -> str:
    """The message without Python's `[Errno N]` prefix, with the file it is about."""
    if not error.strerror:
        return str(error)
    return error.strerror + (f": {error.filename!r}" if error.filename else "")


def _quiet_library_tracebacks(signum: int) -> None:
    """On a stop signal: the calls it interrupts in libraries are not news (the command says in one line
    which signal stopped it). py4j, under BATCH mode's Spark, logs each interrupted or closed gateway call
    with its traceback, on its own loggers and on the root logger (our code logs on named loggers)."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    logging.getLogger().addFilter(lambda record: not record.exc_info)


def _dispatch(args: list[str]) -> int:
    if args[0] == "spark-executor":  # the executor pods Spark-on-Kubernetes starts for a batch FlinkJob
        from strom.batch.executor_launcher import main as spark_executor

        return spark_executor(args[1:])
    if args[0] in CLIENT_COMMANDS:
        from strom.client import commands

        return int(getattr(commands, f"{args[0]}_command")(args[1:]))
    if args[0] not in COMMANDS:
        print(f"strom: error: unknown command {args[0]!r}; try 'strom --help'", file=sys.stderr)
        return EXIT_USAGE
    if len(args) > 1 and args[1] in ("-h", "--help"):
        print(COMMAND_HELP[args[0]], end="")
        return EXIT_OK
    command, needs_path = COMMANDS[args[0]]
    try:
        request = parse_run_args(args[1:], require_path=needs_path)
        configuration = build_configuration(request, os.environ)
        if needs_path and not request.options.get("--detached"):
            check_job_file(request.path)
        check_savepoint_path(configuration)
        return command(request, configuration)
    except (UsageError, ConfigError) as e:
        if request_is_verbose(args):
            traceback.print_exc()
        print(f"strom: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SyntaxError as e:
        if request_is_verbose(args):
            traceback.print_exc()
        print(f"strom: error: {syntax_error_line(e)}", file=sys.stderr)
        return EXIT_JOB_FAILED


def request_is_verbose(args: Sequence[str]) -> bool:
    return "--verbose" in (args[: list(args).index("--")] if "--" in args else args)


if __name__ == "__main__":
    sys.exit(main())
