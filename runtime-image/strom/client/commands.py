"""The client commands of `strom` against a running JobManager's REST endpoint.

`savepoint` and `stop` trigger a savepoint and poll /jobs/:jobid/savepoints/:triggerid until it
completed. `submit` runs the job file with a context executor that, instead of running the graph,
encodes it (strom.common.job_payload) and POSTs it to /jobs; `list`, `info` and `cancel` read
and patch /jobs. Each `*_command(argv) -> int` returns the exit status: 0 done, 1 failed, 2
usage. Failures print ONE line on stderr (`strom: error: ...`); `--verbose` adds the traceback.
`--jobmanager HOST:PORT` (default localhost:8081) is the REST address, as in Flink's `-m`.
Every command takes `-D key=value` and `--config FILE` (default `$STROM_CONF_DIR/config.yaml`), whose
`security.ssl.rest.*` keys make it speak HTTPS with a client certificate (`strom.common.tls`); for
`submit` they are the client's, never part of the submitted job's configuration.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

import cloudpickle

from strom.cli import (
    EXIT_OK,
    EXIT_USAGE,
    RunRequest,
    UsageError,
    _split_dynamic,
    build_configuration,
    check_savepoint_path,
    parse_run_args,
    syntax_error_line,
)
from strom.cli_help import EXIT_CODES
from strom.client.rest_client import RestClient, RestClientError, parse_address
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.common.job_payload import encode_job
from strom.common.tls import rest_client_tls
from strom.common.tls_options import ALL_KEYS as TLS_KEYS

EXIT_FAILED = 1
DEFAULT_JOBMANAGER = "localhost:8081"
CANCEL_WAIT_S = 30.0

_COMMON_OPTIONS = """\
  --jobmanager HOST:PORT  the JobManager's REST endpoint (rest.address:rest.port); default localhost:8081
  -D key=value, --config FILE
                          configuration of the client: security.ssl.rest.enabled, .keystore, .key,
                          .truststore, ... speak HTTPS with a client certificate (mutual TLS)
  --verbose               print the traceback of a failure
"""

# `strom COMMAND --help`: each command's usage, what it does and what its exit status means
HELP = {
    "submit": """\
usage: strom submit JOB.py [job args...] [-p N] [-D key=value ...] [--config FILE] [--jobmanager HOST:PORT]

Builds the job's graph here (JOB.py runs as __main__ up to env.execute()) and submits it to the
JobManager; prints the job id and returns at once. The job's print() output goes to its TaskManagers'
stdout, not here. -D and --config keys become the job's configuration (security.ssl.rest.* stay the
client's); --from-savepoint PATH [--allow-non-restored-state] starts it from a savepoint.

  -p, --parallelism N     the job's default parallelism
Exit status: 0 submitted; 1 refused by the JobManager or the program raised; 2 bad arguments.
""",
    "list": """\
usage: strom list [--jobmanager HOST:PORT]

Lists the JobManager's jobs: id, name, state, start time (or "No jobs.").
Exit status: 0 listed; 1 the JobManager could not be reached; 2 bad arguments.
""",
    "info": """\
usage: strom info JOBID [--jobmanager HOST:PORT]

Shows one job with its vertices and the state of every subtask.
Exit status: 0 shown; 1 no such job or the JobManager could not be reached; 2 bad arguments.
""",
    "cancel": """\
usage: strom cancel JOBID [--jobmanager HOST:PORT]

Cancels a job and waits until it is CANCELED (Flink's `flink cancel`).
Exit status: 0 the job is CANCELED; 1 it had already ended, no such job, or it did not end
in time; 2 bad arguments.
""",
    "savepoint": """\
usage: strom savepoint JOBID [TARGET_DIR] [--jobmanager HOST:PORT]
       strom savepoint --dispose SAVEPOINT_PATH [--jobmanager HOST:PORT]

Takes a savepoint of a running job (default directory: state.savepoints.dir) and prints its location;
the job goes on. --dispose deletes a savepoint through the JobManager, with its storage credentials
(a checkpoint is refused).
Exit status: 0 the savepoint is complete (or disposed of); 1 it failed, no such job or savepoint;
2 bad arguments.
""",
    "stop": """\
usage: strom stop JOBID [--savepoint-path DIR] [--drain] [--jobmanager HOST:PORT]

Takes a savepoint, then stops the job (it ends FINISHED); prints the savepoint's location. The
sources emit nothing after the savepoint; --drain first emits the maximum watermark, so every
event-time window and timer fires before the savepoint.
Exit status: 0 stopped with a savepoint; 1 the savepoint failed (the job goes on) or no such job;
2 bad arguments.
""",
}

# every client command in one text (the module's overview; `strom --help` lists them)
USAGE = "\n".join(text.split("\n\n")[0] for text in HELP.values()) + "\n\n" + _COMMON_OPTIONS


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """What every client command accepts, split off before the command's own arguments."""

    address: str
    verbose: bool
    help: bool
    rest: list[str]
    dynamic: list[tuple[str, str]] = field(default_factory=list)  # -D key=value
    config_file: str | None = None  # --config FILE

    def configuration(self) -> Configuration:
        """defaults < config file < -D, as for `strom run`; ConfigError naming a bad key."""
        return build_configuration(RunRequest("", dynamic=list(self.dynamic), config_file=self.config_file), os.environ)

    def client(self, configuration: Configuration | None = None) -> RestClient:
        """The REST client, over HTTPS when security.ssl.rest.enabled (TlsConfigError, a ConfigError, for
        unusable material: before any request)."""
        host, port = parse_address(self.address)
        conf = self.configuration() if configuration is None else configuration
        return RestClient(host, port, ssl_context=rest_client_tls(conf))


def split_client_options(argv: Sequence[str]) -> ClientOptions:
    """Take --jobmanager/-m and --verbose out of argv, anywhere before `--` (as `strom run` treats
    -D); -h/--help only as the first argument, so that a job's own --help reaches the job."""
    address, verbose, help_ = DEFAULT_JOBMANAGER, False, False
    rest: list[str] = []
    dynamic: list[tuple[str, str]] = []
    config_file: str | None = None
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i:])
            break
        if a in ("--jobmanager", "-m"):
            if i + 1 >= len(args):
                raise UsageError(f"option {a} expects HOST:PORT")
            address = args[i + 1]
            i += 1
        elif a.startswith("--jobmanager="):
            address = a.partition("=")[2]
        elif a == "--verbose":
            verbose = True
        elif a in ("-D", "--config"):
            if i + 1 >= len(args):
                raise UsageError(f"option {a} expects {'key=value' if a == '-D' else 'a file'}")
            if a == "-D":
                dynamic.append(_split_dynamic(args[i + 1]))
            else:
                config_file = args[i + 1]
            i += 1
        elif a.startswith("-D"):
            dynamic.append(_split_dynamic(a[2:]))
        elif a.startswith("--config="):
            config_file = a.partition("=")[2]
        elif a in ("-h", "--help") and i == 0:
            help_ = True
        else:
            rest.append(a)
        i += 1
    parse_address(address)  # a malformed address is a usage error before anything runs
    return ClientOptions(address, verbose, help_, rest, dynamic, config_file)


def _fail(err: TextIO, message: str, error: BaseException | None = None, *, verbose: bool = False) -> int:
    if verbose and error is not None:
        traceback.print_exception(error, file=err)
    print(f"strom: error: {message}", file=err)
    return EXIT_FAILED


def _command(name: str, body: Callable[[ClientOptions, TextIO, TextIO], int]) -> Callable[..., int]:
    """Shared shell of the commands: option splitting, usage errors (2), client errors (1)."""

    def run(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
        out, err = stdout or sys.stdout, stderr or sys.stderr
        try:
            options = split_client_options(argv)
        except (UsageError, ValueError) as e:
            print(f"strom {name}: error: {e}", file=err)
            return EXIT_USAGE
        if options.help:
            print(HELP[name] + "\n" + _COMMON_OPTIONS + "\n" + EXIT_CODES, file=out, end="")
            return EXIT_OK
        try:
            return body(options, out, err)
        except (UsageError, ConfigError) as e:
            print(f"strom {name}: error: {e}", file=err)
            return EXIT_USAGE
        except RestClientError as e:
            return _fail(err, str(e), e, verbose=options.verbose)

    run.__name__ = f"{name}_command"
    return run


def _one_job_id(name: str, rest: list[str]) -> str:
    if len(rest) != 1 or rest[0].startswith("-"):
        raise UsageError(f"expected exactly one JOBID (strom {name} JOBID [--jobmanager HOST:PORT]), got {rest!r}")
    return rest[0]


# -- submit ---------------------------------------------------------------------------------------


def _pickle_job_modules_by_value(job_dir: str, preloaded: set[str]) -> None:
    """Modules the job imported from its own directory do not exist on the JobManager and its
    TaskManagers: ship their code inside the payload instead of a reference to them."""
    prefix = os.path.join(job_dir, "")
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        top = name.partition(".")[0]
        if name in preloaded or not path or top in ("strom", "strom_operator") or "." in name:
            continue
        if os.path.abspath(path).startswith(prefix) and "-packages" + os.sep not in path:
            cloudpickle.register_pickle_by_value(module)


def _run_for_submission(
    path: str, job_args: list[str], configuration: Configuration, client: RestClient, out: TextIO, submitted: list[str]
) -> None:
    """Run the job file as __main__ with an executor that submits each graph; job ids go to `submitted`."""
    from strom.datastream.stream_execution_environment import JobExecutionResult, set_context

    job_dir = os.path.dirname(os.path.abspath(path))
    preloaded = set(sys.modules)

    def submit_graph(graph: Any) -> JobExecutionResult:
        _pickle_job_modules_by_value(job_dir, preloaded)
        jid = client.submit(encode_job(graph, job_name=graph.job_name))
        submitted.append(jid)
        print(f"Job has been submitted with JobID {jid}", file=out)  # Flink's CLI line
        return JobExecutionResult(jid, 0)

    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *job_args]
    sys.path.insert(0, job_dir)  # as `python JOB.py` does: the job's own modules import
    set_context(configuration, submit_graph)
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        set_context(None)
        sys.argv, sys.path[:] = saved_argv, saved_path


def _submit(options: ClientOptions, out: TextIO, err: TextIO) -> int:
    request = parse_run_args(options.rest)
    request.dynamic, request.config_file = options.dynamic, options.config_file
    configuration = build_configuration(request, os.environ)
    client = options.client(configuration)
    # the client's TLS keys (and their passwords) are its own, not the job's
    configuration = Configuration({k: v for k, v in configuration.to_dict().items() if k not in TLS_KEYS})
    if not os.path.isfile(request.path):
        print(f"strom: error: job file {request.path!r} does not exist", file=err)
        return EXIT_USAGE
    check_savepoint_path(configuration)  # a missing local savepoint: one line before anything is submitted
    submitted: list[str] = []
    try:
        _run_for_submission(request.path, request.job_args, configuration, client, out, submitted)
    except RestClientError:
        raise
    except SystemExit as e:
        if e.code not in (None, 0):
            return _fail(err, f"job file {request.path!r} exited with status {e.code!r}")
    except SyntaxError as e:  # file:line: message, as `strom run` says it
        return _fail(err, syntax_error_line(e), e, verbose=options.verbose)
    except Exception as e:  # noqa: BLE001 - any error of the job program is reported in one line
        hint = "" if options.verbose else " (--verbose shows the traceback)"
        message = f"job file {request.path!r} failed: {type(e).__name__}: {e}{hint}"
        return _fail(err, message, e, verbose=options.verbose)
    if not submitted:
        return _fail(err, f"job file {request.path!r} submitted no job: it never called env.execute()")
    return EXIT_OK


submit_command = _command("submit", _submit)


# -- list, info, cancel ---------------------------------------------------------------------------


def format_time(ms: int) -> str:
    return "-" if ms is None or ms < 0 else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)


def _list(options: ClientOptions, out: TextIO, err: TextIO) -> int:
    if options.rest:
        raise UsageError(f"unexpected arguments {options.rest!r} (strom list [--jobmanager HOST:PORT])")
    jobs = sorted(options.client().jobs_overview(), key=lambda j: j.get("start-time", 0), reverse=True)
    if not jobs:
        print("No jobs.", file=out)
        return EXIT_OK
    rows = [(j["jid"], j["name"], j["state"], format_time(j["start-time"])) for j in jobs]
    print(format_table(("JOB ID", "NAME", "STATE", "START TIME"), rows), file=out)
    return EXIT_OK


def _info(options: ClientOptions, out: TextIO, err: TextIO) -> int:
    jid = _one_job_id("info", options.rest)
    client = options.client()
    job = client.job(jid)
    print(f"Job {job['jid']}: {job['name']}", file=out)
    print(f"  state:      {job['state']}", file=out)
    print(f"  start time: {format_time(job['start-time'])}", file=out)
    print(f"  end time:   {format_time(job['end-time'])}", file=out)
    print(f"  duration:   {max(job['duration'], 0) / 1000:.1f} s", file=out)
    for v in job["vertices"]:
        print(f"\nVertex {v['id']}: {v['name']}", file=out)
        print(f"  parallelism {v['parallelism']}, status {v['status']}", file=out)
        subtasks = client.vertex(jid, v["id"])["subtasks"]
        rows = [(str(s["subtask"]), s["status"], str(s["attempt"]), s.get("endpoint", "")) for s in subtasks]
        table = format_table(("SUBTASK", "STATE", "ATTEMPT", "TASKMANAGER"), rows)
        print("\n".join("  " + line for line in table.splitlines()), file=out)
    return EXIT_OK


def _cancel(options: ClientOptions, out: TextIO, err: TextIO) -> int:
    jid = _one_job_id("cancel", options.rest)
    client = options.client()
    state = client.job(jid)["state"]
    if state in ("FINISHED", "FAILED", "CANCELED"):  # nothing to cancel: say so before claiming to cancel
        return _fail(err, f"job {jid} has already ended ({state}); only a running job can be cancelled")
    print(f"Cancelling job {jid}.", file=out)
    client.cancel(jid)
    deadline = time.monotonic() + CANCEL_WAIT_S
    while True:  # PATCH only starts the cancellation (202); Flink's CLI waits for the outcome
        state = client.job(jid)["state"]
        if state == "CANCELED":
            print(f"Cancelled job {jid}.", file=out)
            return EXIT_OK
        if state in ("FINISHED", "FAILED"):
            return _fail(err, f"job {jid} ended as {state} before it could be cancelled")
        if time.monotonic() >= deadline:
            return _fail(err, f"job {jid} is still {state} {CANCEL_WAIT_S:g} s after the cancel request")
        time.sleep(0.1)


list_command = _command("list", _list)
info_command = _command("info", _info)
cancel_command = _command("cancel", _cancel)


# -- savepoint, stop ------------------------------------------------------------------------------

SAVEPOINT_WAIT_S = 120.0


def _await_savepoint(client: RestClient, jid: str, trigger_id: str, out: TextIO, err: TextIO) -> int:
    """Poll the operation until it completed; print the location (Flink's CLI line) or fail."""
    deadline = time.monotonic() + SAVEPOINT_WAIT_S
    while True:
        answer = client.savepoint_status(jid, trigger_id)
        if answer["status"]["id"] == "COMPLETED":
            operation = answer.get("operation") or {}
            if "location" in operation:
                print(f"Savepoint completed. Path: {operation['location']}", file=out)
                return EXIT_OK
            cause = (operation.get("failure-cause") or {}).get("stack-trace", "unknown cause")
            return _fail(err, f"the savepoint of job {jid} failed: {cause}")
        if time.monotonic() >= deadline:
            return _fail(err, f"the savepoint of job {jid} did not complete within {SAVEPOINT_WAIT_S:g} s")
        time.sleep(0.1)


def _dispose(client: Any, path: str, out: TextIO, err: TextIO) -> int:
    trigger_id = client.dispose_savepoint(path)
    deadline = time.monotonic() + SAVEPOINT_WAIT_S
    while True:
        answer = client.savepoint_disposal_status(trigger_id)
        if answer["status"]["id"] == "COMPLETED":
            cause = ((answer.get("operation") or {}).get("failure-cause") or {}).get("stack-trace")
            if cause:
                return _fail(err, cause)
            print(f"Savepoint '{path}' disposed.", file=out)
            return EXIT_OK
        if time.monotonic() >= deadline:
            return _fail(err, f"disposing of {path} did not complete within {SAVEPOINT_WAIT_S:g} s")
        time.sleep(0.1)


def _savepoint(options: ClientOptions, out: TextIO, err: TextIO) -> int:
    if options.rest and options.rest[0] in ("--dispose", "-d"):
        if len(options.rest) != 2:
            raise UsageError(f"expected --dispose SAVEPOINT_PATH (strom savepoint --dispose PATH), got {options.rest}")
        return _dispose(options.client(), options.rest[1], out, err)
    if not 1 <= len(options.rest) <= 2 or any(a.startswith("-") for a in options.rest):
        raise UsageError(f"expected JOBID [TARGET_DIR] (strom savepoint JOBID [TARGET_DIR]), got {options.rest!r}")
    jid, target = options.rest[0], (options.rest[1] if len(options.rest) == 2 else None)
    client = options.client()
    print(f"Triggering savepoint for job {jid}.", file=out)
    return _await_savepoint(client, jid, client.trigger_savepoint(jid, target), out, err)


def _stop(options: ClientOptions, out: TextIO, err: TextIO) -> int:
    rest, target = list(options.rest), None
    for flag in ("--savepoint-path", "-p"):
        if flag in rest:
            i = rest.index(flag)
            if i + 1 >= len(rest):
                raise UsageError(f"option {flag} expects a directory")
            target = rest[i + 1]
            del rest[i : i + 2]
    drain = "--drain" in rest or "-d" in rest
    rest = [a for a in rest if a not in ("--drain", "-d")]
    jid = _one_job_id("stop", rest)
    client = options.client()
    print(f"Suspending job {jid}.", file=out)
    return _await_savepoint(client, jid, client.stop_with_savepoint(jid, target, drain=drain), out, err)


savepoint_command = _command("savepoint", _savepoint)
stop_command = _command("stop", _stop)
