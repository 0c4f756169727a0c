"""The local mini-cluster behind `strom run`: a JobManager (in this process, on its own
event loop) and TaskManager processes on loopback, i.e. the same processes a Kubernetes
deployment runs. TaskManagers are started on demand, with enough slots for each job.

Every address key is set to 127.0.0.1 explicitly (a cluster's config file read through
STROM_CONF_DIR may name a Service or 0.0.0.0): nothing of `strom run` listens beyond this machine.
Its processes share a random cluster secret of their own (never the cookie file).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import yaml

from strom.common import config_options as opts
from strom.common import tls_options
from strom.datastream.stream_execution_environment import JobExecutionResult
from strom.graph.job_graph import create_job_graph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.jobmanager.client_savepoints import take_savepoint
from strom.runtime.log_files import add_log_file_handler, process_log_file
from strom.runtime.network import cluster_secret

LOOPBACK = "127.0.0.1"
JOBMANAGER_ADDRESS_KEYS = (
    opts.RPC_ADDRESS,
    opts.JOBMANAGER_BIND_HOST,
    opts.REST_ADDRESS,
    opts.REST_BIND_ADDRESS,
    opts.METRICS_HOST,
)
TASKMANAGER_ADDRESS_KEYS = (opts.TASKMANAGER_HOST, opts.TASKMANAGER_BIND_HOST, opts.METRICS_HOST)


class ClusterExecutor:
    """An executor for `set_context`: submits the graph to a JobManager and waits for the end.
    Interrupted (Ctrl-C, SIGTERM) while it waits, it cancels the job (`strom run`), or with
    `cancel_on_interrupt=False` leaves it to the JobManager's shutdown, which suspends it (application mode)."""

    def __init__(self, jm: Any, *, before_submit: Any = None, cancel_on_interrupt: bool = True) -> None:
        self.jm = jm
        self.before_submit = before_submit
        self.cancel_on_interrupt = cancel_on_interrupt

    def __call__(self, graph: StreamGraph) -> JobExecutionResult:
        handle = self.start_job(graph)
        try:
            return handle.wait()
        except KeyboardInterrupt:
            if self.cancel_on_interrupt:
                handle.cancel()
            raise

    def start_job(self, graph: StreamGraph) -> ClusterJobClient:
        if self.before_submit is not None:
            self.before_submit(graph)
        return ClusterJobClient(self.jm, self.jm.submit_threadsafe(graph))


class ClusterJobClient:
    """PyFlink's JobClient for a job on a (mini-)cluster's JobManager."""

    def __init__(self, jm: Any, job_id: str) -> None:
        self.jm = jm
        self.job_id = job_id

    def get_job_id(self) -> str:
        return self.job_id

    def get_job_status(self) -> str:
        return self.jm.jobs[self.job_id].state

    def cancel(self) -> None:
        self.jm.cancel_threadsafe(self.job_id)

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> str:
        """A savepoint of the running job; its location (Flink's JobClient.triggerSavepoint)."""
        return take_savepoint(self.jm.loop, self.jm.jobs[self.job_id], savepoint_directory)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> str:
        """A savepoint, then the job ends FINISHED; the savepoint's location (Flink's stopWithSavepoint)."""
        job = self.jm.jobs[self.job_id]
        return take_savepoint(
            self.jm.loop, job, savepoint_directory, then="FINISHED", drain=advance_to_end_of_event_time
        )

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        from strom.runtime.local_executor import JobExecutionError

        job_id = self.job_id
        job = self.jm.wait_threadsafe(job_id, timeout)
        error = job.result_error()
        if error is not None:
            cause = job.root_cause()
            raise JobExecutionError(
                error, job_id=job_id, task=cause.task if cause else None, trace=cause.trace if cause else None
            )
        return JobExecutionResult(job_id, int((job.end_time - job.start_time) * 1000))

    get_job_execution_result = wait


def _terminate_with_parent(parent_pid: int) -> Any:
    """A preexec_fn: SIGTERM to the child when the thread that started it ends (on Linux: PR_SET_PDEATHSIG;
    the mini-cluster starts TaskManagers from the main thread, which lives as long as the process)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None  # the signal follows the starting thread: only the main thread lives as long as we do

    import ctypes
    import signal

    # resolved here: the child runs between fork and exec, where importing (a lock another thread may
    # hold) could deadlock
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def set_parent_death_signal() -> None:
        prctl(pr_set_pdeathsig, sigterm, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the call: the signal would never come
            os.kill(os.getpid(), sigterm)

    return set_parent_death_signal


class MiniCluster:
    def __init__(self, config: Any, *, taskmanagers: int | None = None, log_level: str = "WARNING") -> None:
        from strom.runtime.jobmanager.process import JobManagerThread

        conf = config.copy()
        # the mini-cluster never fights over fixed ports: unset ports pick free ones
        for option in (opts.REST_PORT, opts.RPC_PORT, opts.PROM_PORT):
            if not conf.contains_key(option.key):
                conf.set(option.key, 0)
        for option in JOBMANAGER_ADDRESS_KEYS:
            conf.set(option.key, LOOPBACK)
        # Its own random secret, in memory: the JobManager reads it from the configuration, the
        # TaskManagers from their environment (not their command line, which `ps` shows); no file in
        # the home directory. A secret in the environment already is what every process would read.
        self.child_env: dict[str, str] = {}  # added to the TaskManagers' environment
        if not os.environ.get(cluster_secret.ENV_VAR):
            secret = cluster_secret.generate_secret()
            conf.set(opts.CLUSTER_SECRET.key, secret)
            self.child_env[cluster_secret.ENV_VAR] = secret
        self.config = conf
        self.fixed_taskmanagers = taskmanagers
        self.log_level = log_level
        self._jmt = JobManagerThread(conf)
        self.jm: Any = None
        self.processes: list[subprocess.Popen[bytes]] = []
        self.started_slots = 0
        self._tls_config_dir: str | None = None
        self._tls_config_file: str | None = None

    def start(self) -> MiniCluster:
        # env.log.dir: the JobManager's records (this process's) go to jobmanager.log too; its stdout stays the
        # user's terminal. The TaskManagers get the key and write their own .log and .out (log_files.py).
        jm_log = process_log_file(self.config, "jobmanager")
        if jm_log is not None:
            jm_log.parent.mkdir(parents=True, exist_ok=True)
            add_log_file_handler(jm_log)
        self.jm = self._jmt.start()
        if self.fixed_taskmanagers:
            for _ in range(self.fixed_taskmanagers):
                self.start_taskmanager()
        return self

    def start_taskmanager(self, slots: int | None = None) -> subprocess.Popen[bytes]:
        slots = slots or self.config.get(opts.TASK_SLOTS)
        cmd = [
            sys.executable,
            "-m",
            "strom.cli",
            "taskmanager",
            "--jobmanager",
            f"{LOOPBACK}:{self.jm.rpc_port}",
            "-D",
            f"taskmanager.numberOfTaskSlots={slots}",
            *(arg for option in TASKMANAGER_ADDRESS_KEYS for arg in ("-D", f"{option.key}={LOOPBACK}")),
            "-D",
            "metrics.reporter.prom.port=0",
            # how often they report metrics (what `strom run`'s progress lines are read from)
            *(arg for key in [opts.METRICS_UPDATE_INTERVAL.key, opts.LOG_DIR.key]
              if self.config.contains_key(key) for arg in ("-D", f"{key}={self.config.get(key)}")),
            *self._tls_config_args(),
            "--log-level",
            self.log_level,
        ]
        env = dict(os.environ, **self.child_env)
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([here, *sys.path])
        # the TaskManager ends with this process even when it is killed outright (SIGKILL, OOM killer): no
        # signal handler runs then, so the kernel sends the TaskManager SIGTERM (Linux's parent-death signal)
        proc = subprocess.Popen(cmd, env=env, preexec_fn=_terminate_with_parent(os.getpid()))
        self.processes.append(proc)
        self.started_slots += slots
        return proc

    def _tls_config_args(self) -> list[str]:
        """Internal TLS as the JobManager has it (a -D of `strom run` reaches no TaskManager otherwise), in a
        configuration file only this user can read: as -D arguments its passwords would show in `ps`."""
        keys = {key: self.config.get(key) for key in sorted(tls_options.ALL_KEYS) if self.config.contains_key(key)}
        if not keys:
            return []
        if self._tls_config_file is None:
            self._tls_config_dir = tempfile.mkdtemp(prefix="strom-tls-")  # mode 0700
            self._tls_config_file = os.path.join(self._tls_config_dir, "config.yaml")
            fd = os.open(self._tls_config_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                yaml.safe_dump(keys, f)
        return ["--config", self._tls_config_file]

    def ensure_slots(self, graph: StreamGraph) -> None:
        """Start TaskManagers until the job's slots exist (Flink's local cluster sizes itself too)."""
        required = create_job_graph(graph).required_slots()
        have = max(self.jm.rm.total_slots(), self.started_slots)
        per_tm = self.config.get(opts.TASK_SLOTS)
        if self.fixed_taskmanagers is None and have < required:
            missing = required - have
            if not self.processes:
                self.start_taskmanager(max(per_tm, missing))
            else:
                while missing > 0:
                    self.start_taskmanager(per_tm)
                    missing -= per_tm
        self._wait_for_slots(min(required, self.started_slots) if self.fixed_taskmanagers is None else 0)

    def _wait_for_slots(self, slots: int, timeout: float = 60) -> None:
        """Until the started TaskManagers registered their slots; a TaskManager process that exits
        first is a clear error instead of a job waiting for slots until slot.request.timeout."""
        deadline = time.monotonic() + timeout
        while self.jm.rm.total_slots() < slots:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                raise RuntimeError(
                    f"a TaskManager process of the local cluster exited with code {dead[0].returncode} "
                    "before registering (see its output above)"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the local cluster's TaskManagers did not register {slots} slots in {timeout:.0f} s"
                )
            time.sleep(0.02)

    def executor(self) -> ClusterExecutor:
        return ClusterExecutor(self.jm, before_submit=self.ensure_slots)

    def wait_for_taskmanagers(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.jm.rm.taskmanagers) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} TaskManagers did not register within {timeout} s")
            time.sleep(0.05)

    def close(self) -> None:
        if getattr(self, "jm", None) is not None:
            self.jm.stopping = True  # the TaskManagers' disconnects below are the shutdown, not a failure
        for p in self.processes:
            p.terminate()
        for p in self.processes:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        self._jmt.stop()
        if self._tls_config_dir is not None:
            shutil.rmtree(self._tls_config_dir, ignore_errors=True)

    def __enter__(self) -> MiniCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
