"""The help texts of `strom` and its commands, and the exit codes every command shares.

`strom --help` lists every command; `strom COMMAND --help` prints that command's own options.
The exit codes are one table (EXIT_CODES) printed under every help and in the README: a script
that runs any `strom` command can tell a failed job from a wrong command line from a signal.
"""

from __future__ import annotations

EXIT_CODES = """\
Exit codes (every command):
  0    done: the job FINISHED, or the command did what it was asked
  1    failed: the job FAILED or was cancelled, its program raised, or the command could not do
       its work (JobManager unreachable, port in use, savepoint failed); one line says why
  2    usage or configuration error: unknown option or key, invalid value, missing job file or
       savepoint path; nothing was started
  130  stopped by SIGINT (Ctrl-C), 143 stopped by SIGTERM: every process the command started is
       stopped first (`strom run` cancels its job; an application-mode JobManager suspends it,
       so that it is recovered from its checkpoints, as Flink does)
  141  its stdout was closed by the reader (`strom list | head -1`): ends quietly, as git and
       coreutils do (128 + SIGPIPE)
Errors are one line (`strom: error: ...`); --verbose adds the traceback.
"""

TOP = f"""\
usage: strom [--version] [--help] <command> [<args>]

Run a job here:
  run          Run a job file on a local mini-cluster (JobManager + TaskManager processes) and
               wait until it finishes; --threads runs it in this process instead.

Run SQL:
  sql          Flink's SQL Client: an interactive SQL shell (-f SCRIPT.sql runs a script, -i INIT.sql
               sets up the session); jobs run locally, or on a cluster with --jobmanager HOST:PORT.

Run a cluster's processes:
  jobmanager   Start a JobManager (session mode), or with --job PATH run that job in it
               (application mode) and exit with its outcome.
  taskmanager  Start a TaskManager that registers with a JobManager (--jobmanager HOST:PORT).
  spark-executor
               Start a Spark executor in a batch FlinkJob's executor pod (Spark runs it).

Talk to a running JobManager (REST, --jobmanager HOST:PORT, default localhost:8081):
  submit       Submit a job file; prints the job id.
  list         List the jobs.
  info         Show a job, its vertices and subtasks.
  cancel       Cancel a job.
  savepoint    Take a savepoint of a job, or dispose of one.
  stop         Stop a job with a savepoint.

`strom COMMAND --help` shows a command's options.

{EXIT_CODES}"""

RUN = f"""\
usage: strom run JOB.py [job args...] [options]

Runs JOB.py as __main__ with sys.argv = [JOB.py, job args...] on a local mini-cluster: a
JobManager in this process and as many TaskManager processes as the job's slots need (each slot
a process). The REST endpoint's port is printed on stderr (stdout is the job's). Options may come
before or after the job file; arguments after `--` all go to the job.

  -p, --parallelism N     default parallelism (parallelism.default)
  -D key=value            set a configuration option; repeatable
  --config FILE           YAML configuration file (flat `a.b: v` keys or nested maps);
                          default: $STROM_CONF_DIR/config.yaml if it exists
  --taskmanagers K        start K TaskManagers (default: as many as the job's slots need)
  --detached              submit to the running cluster at --jobmanager HOST:PORT (REST,
                          default localhost:8081), print the job id and return
  --threads               run in this process's threads instead of a mini-cluster
  --from-savepoint PATH   restore the job from a savepoint (execution.savepoint.path)
  --allow-non-restored-state
                          restore even if the savepoint has state of operators the job
                          lacks (execution.savepoint.ignore-unclaimed-state)
  --runtime-mode MODE     streaming | batch | automatic (execution.runtime-mode); batch runs
                          the bounded job on Spark (local[*] unless --spark-master), with no
                          mini-cluster; -D spark.* keys pass through to Spark
  --spark-master URL      Spark master for BATCH mode (spark.master), e.g. local[4], spark://h:7077
  --log-level LEVEL       logging level (default WARNING; the progress lines are INFO and shown
                          unless a level above INFO is given)
  --progress-interval S   every S seconds (default 10; 0: never) one line on stderr with the
                          job's records in/out so far and their rates (the JobManager's metrics)
  --verbose               print the traceback of an error
  -h, --help              show this help

  Precedence: defaults < config file < -D < --parallelism. Keys are Flink's
  (parallelism.default, execution.buffer-timeout, pipeline.auto-watermark-interval, ...);
  an unknown key or ill-typed value is an error naming the key.

  Ctrl-C or SIGTERM cancels the job and stops the TaskManagers before `strom run` exits.

{EXIT_CODES}"""

JOBMANAGER = f"""\
usage: strom jobmanager [--job JOB.py [job args...]] [-D key=value ...] [--config FILE] [options]

Session mode (no --job): serve the RPC endpoint for TaskManagers (jobmanager.rpc.port, 6123), the
REST API for clients (rest.port, 8081) and Prometheus metrics (metrics.reporter.prom.port, 9249)
until SIGTERM or Ctrl-C. The bound ports are printed (0 picks a free port).

Application mode (--job JOB.py): run the job file's entry point in this process, run its job on
the TaskManagers that register (start them with `strom taskmanager --jobmanager HOST:RPC_PORT`),
and exit with the job's outcome. While it waits for slots it says how many at INFO. With high
availability (high-availability.type) a JobManager that restarts takes the job over from its
latest checkpoint. SIGTERM suspends the job (its checkpoints and HA data stay, as in Flink) and
exits 143 within seconds. With execution.shutdown-on-application-finish: false it serves REST after
the job until SIGTERM, then exits with the job's outcome.

  --job JOB.py            application mode: the job file (or module:NAME) to run
  -D key=value            set a configuration option; repeatable
  --config FILE           YAML configuration file; default $STROM_CONF_DIR/config.yaml
  --log-level LEVEL       logging level (default INFO)
  --verbose               print the traceback of an error
  -h, --help              show this help

{EXIT_CODES}"""

TASKMANAGER = f"""\
usage: strom taskmanager [--jobmanager HOST:PORT] [-D key=value ...] [--config FILE] [options]

Register taskmanager.numberOfTaskSlots slots (each a process of its own) with the JobManager's RPC
endpoint (--jobmanager HOST:PORT; default jobmanager.rpc.address:jobmanager.rpc.port) and run
what it deploys until SIGTERM or Ctrl-C, which stop the slot processes too. It advertises
taskmanager.host (unset: its address on the route to the JobManager); data servers bind
taskmanager.bind-host. Without a JobManager for taskmanager.registration.timeout it exits 1.

  --jobmanager HOST:PORT  the JobManager's RPC endpoint
  -D key=value            set a configuration option; repeatable
  --config FILE           YAML configuration file; default $STROM_CONF_DIR/config.yaml
  --log-level LEVEL       logging level (default INFO)
  --verbose               print the traceback of an error
  -h, --help              show this help

{EXIT_CODES}"""

COMMAND_HELP = {"run": RUN, "jobmanager": JOBMANAGER, "taskmanager": TASKMANAGER}
