"""The TaskManager process: registers its slots with the JobManager, heartbeats, and runs
each slot as a worker process (spawned), forwarding deployments to them and their task
state changes back. Checkpoint messages pass through the same way: triggers and notifications
go to the slots running the job's attempt, acknowledgements and declines back to the JobManager.

A TaskManager that loses its JobManager cancels what its slots run and registers again; a
slot process that dies is restarted and its tasks are reported FAILED, so the job fails over.

Addresses (strom.runtime.network.addresses): the TaskManager advertises `taskmanager.host`, else
the source address of its route to the JobManager, resolved before any slot starts; the slots' data
servers bind `taskmanager.bind-host`, else the advertised host. How long it keeps trying to
register is `registration.py`'s decision.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import socket
import ssl
import sys
import threading
import time
import uuid
from typing import Any

from strom.common import config_options as opts
from strom.common.tls import internal_contexts, internal_settings
from strom.runtime.log_files import answer_log_request, process_log_file, start_file_logging
from strom.runtime.metrics.registry import MetricRegistry, process_rss_bytes
from strom.runtime.metrics.snapshots import merge_snapshots
from strom.runtime.network.addresses import (
    BindAddress,
    check_bindable,
    data_bind,
    metrics_bind,
    route_source_address,
)
from strom.runtime.network.cluster_secret import resolve_cluster_secret
from strom.runtime.network.peer_auth import RPC, SecretMismatch
from strom.runtime.network.secure_connections import TlsRefused, secure_connect
from strom.runtime.rpc import (
    AcknowledgeCheckpoint,
    CancelJob,
    DeclineCheckpoint,
    DeploySlot,
    FramedSocket,
    Heartbeat,
    LogRequest,
    MetricsReport,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    RegisterTaskManager,
    RegistrationAccepted,
    RegistrationRefused,
    Shutdown,
    SlotsChanged,
    TaskStateUpdate,
    TriggerCheckpoint,
    WorkerReady,
)
from strom.runtime.shutdown_signals import defer_stop_signals, stop_on_signals
from strom.runtime.taskmanager.registration import (
    JobManagerAddress,
    RegistrationAttempts,
    RegistrationError,
    authentication_failed,
    certificate_refused,
    tls_refused,
)
from strom.runtime.taskmanager.slot_worker import worker_main

log = logging.getLogger("strom.runtime.taskmanager")
SLOT_START_WAIT_S = 30.0  # how long a (re-)registration waits for a restarting slot process


class Slot:
    def __init__(self, index: int) -> None:
        self.ready = threading.Event()
        self.index = index
        self.process: Any = None
        self.conn: Any = None
        self.data_port = 0
        self.deployed: dict[tuple[str, int], DeploySlot] = {}


class TaskManager:
    def __init__(
        self,
        config: Any,
        *,
        jobmanager: JobManagerAddress | tuple[str, int],
        host: str | None = None,
        tm_id: str | None = None,
    ) -> None:
        self.config = config
        if not isinstance(jobmanager, JobManagerAddress):
            jobmanager = JobManagerAddress(*jobmanager, key=opts.RPC_ADDRESS.key)
        self.jobmanager = jobmanager
        # the advertised address: given, taskmanager.host, or derived from the route to the JobManager
        self.host: str = host or config.get(opts.TASKMANAGER_HOST)
        self.bind: BindAddress | None = None  # what the data servers bind, once the host is known
        self.tm_id = tm_id or config.get(opts.TM_RESOURCE_ID) or f"tm-{uuid.uuid4().hex[:12]}"
        # proved to the JobManager and by every data connection of the slots (ConfigError when unusable)
        self.secret = resolve_cluster_secret(config)
        # internal TLS: read and checked now (TlsConfigError: one line, exit); the slots get the settings
        self.tls_settings = internal_settings(config)
        self.tls = internal_contexts(self.tls_settings) if self.tls_settings is not None else None
        self.num_slots = config.get(opts.TASK_SLOTS)
        self.slots = [Slot(i) for i in range(self.num_slots)]
        self._jm: FramedSocket | None = None
        self._jm_lock = threading.Lock()
        self._stopped = threading.Event()
        self._mp = multiprocessing.get_context("spawn")
        self.heartbeat_interval_s = 10.0
        self.log_level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
        # where taskmanager_main writes its log and stdout (env.log.dir / log.file); served to the JobManager
        self.log_file = process_log_file(config, f"taskmanager-{self.tm_id}")
        self.registry = MetricRegistry(config=config, tm_id=self.tm_id)
        self.registry.register_taskmanager_gauges(
            self.tm_id,
            slots_total=lambda: self.num_slots,
            slots_free=lambda: sum(1 for s in self.slots if not s.deployed),
            rss_bytes=self._rss_of_all_processes,
        )
        self.slot_snapshots: dict[int, Any] = {}
        self.metrics_port = 0

    def _rss_of_all_processes(self) -> int:
        total = process_rss_bytes()
        page = os.sysconf("SC_PAGE_SIZE")
        for slot in self.slots:
            if slot.process is not None and slot.process.pid:
                try:
                    with open(f"/proc/{slot.process.pid}/statm") as f:
                        total += int(f.read().split()[1]) * page
                except (OSError, ValueError, IndexError):
                    pass
        return total

    def metrics_snapshot(self) -> Any:
        return merge_snapshots([*self.slot_snapshots.values(), self.registry.snapshot()])

    def start_exporter(self) -> None:
        from strom.runtime.metrics.prometheus import start_exporter

        assert self.bind is not None
        host, port = metrics_bind(self.config, self.bind).host, self.config.get(opts.PROM_PORT)
        try:
            self.metrics_port = start_exporter(self.metrics_snapshot, host, port, tm_id=self.tm_id)
            log.info("Prometheus metrics of %s on http://%s:%d/metrics", self.tm_id, host, self.metrics_port)
        except OSError as e:
            log.error("%s; TaskManager metrics are not exported", e.strerror or e)  # without "[Errno N]"

    def _report_metrics(self) -> None:
        interval = self.config.get(opts.METRICS_UPDATE_INTERVAL) / 1000.0
        while not self._stopped.wait(interval):
            self._to_jobmanager(MetricsReport(self.tm_id, self.metrics_snapshot()))

    # -- slots --------------------------------------------------------------------------------------
    def start_slot(self, slot: Slot) -> None:
        parent, child = self._mp.Pipe()
        data_port = self.config.get(opts.DATA_PORT)
        # a restarted slot asks for its old port, so the JobManager's view of it stays right
        port = slot.data_port or (data_port + slot.index if data_port else 0)
        proc = self._mp.Process(
            target=worker_main,
            args=(
                child,
                slot.index,
                self.bind.host if self.bind else self.host,
                port,
                self.secret,
                self.log_level,
                self.tm_id,
                self.tls_settings,
                str(self.log_file or ""),
            ),
            daemon=True,
            name=f"strom-slot-{slot.index}",
        )
        with defer_stop_signals():  # a SIGTERM mid-start would leave the child half its start-up data
            proc.start()
        child.close()
        ready = parent.recv()
        if not isinstance(ready, WorkerReady):
            raise RuntimeError(f"slot {slot.index} did not start: {ready!r}")
        slot.process, slot.conn, slot.data_port = proc, parent, ready.data_port
        slot.ready.set()
        log.info("slot %d runs in process %d, data port %d", slot.index, proc.pid, slot.data_port)
        threading.Thread(target=self._read_slot, args=(slot, parent, proc), daemon=True).start()

    def _read_slot(self, slot: Slot, conn: Any, proc: Any) -> None:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                break
            if isinstance(msg, MetricsReport):
                self.slot_snapshots[slot.index] = msg.snapshot
            elif isinstance(msg, TaskStateUpdate):
                self._to_jobmanager(
                    TaskStateUpdate(
                        msg.job_id, msg.attempt, msg.vertex_id, msg.subtask_index, msg.state, msg.failure, self.tm_id
                    )
                )
            elif isinstance(msg, AcknowledgeCheckpoint | DeclineCheckpoint):
                self._to_jobmanager(msg)
        if self._stopped.is_set():
            return
        # the slot process died: its tasks failed; start a fresh process for the slot
        slot.ready.clear()
        proc.join(1)
        if self._stopped.is_set():  # SIGTERM to the process group reaches the slots too: no restart then
            return
        reason = f"slot {slot.index} process {proc.pid} exited with code {proc.exitcode}"
        log.error("%s", reason)
        for (job_id, attempt), deploy in list(slot.deployed.items()):
            for ref in deploy.subtasks:
                self._to_jobmanager(
                    TaskStateUpdate(job_id, attempt, ref.vertex_id, ref.subtask_index, "FAILED", reason, self.tm_id)
                )
        slot.deployed.clear()
        if not self._stopped.is_set():
            self.start_slot(slot)
            self._to_jobmanager(SlotsChanged(self.tm_id, [(s.index, s.data_port) for s in self.slots]))

    # -- JobManager connection --------------------------------------------------------------------
    def _to_jobmanager(self, message: Any) -> None:
        with self._jm_lock:
            jm = self._jm
        if jm is None:
            return
        try:
            jm.send(message)
        except OSError:
            pass  # the reader notices the loss and reconnects

    def resolve_addresses(self, attempts: RegistrationAttempts) -> None:
        """The advertised host (derived from the route to the JobManager unless set; retried like a
        registration while the JobManager's name does not resolve or no route leads there) and the
        bind addresses, checked before any slot starts."""
        while not self.host:
            try:
                self.host = route_source_address(*self.jobmanager.as_tuple())
            except OSError as e:
                self._wait_to_retry(attempts, e)
        self.bind = data_bind(self.config, self.host)
        check_bindable(self.bind)
        check_bindable(metrics_bind(self.config, self.bind))
        log.info("TaskManager %s advertises %s, data servers bind %s", self.tm_id, self.host, self.bind.host)

    def _wait_to_retry(self, attempts: RegistrationAttempts, error: BaseException) -> None:
        retry = attempts.failed(error)  # raises RegistrationError when the time is up
        if retry.warning is not None:
            log.warning("%s", retry.warning)
        self._stopped.wait(retry.wait_s)

    def _register(self, timeout_s: float) -> FramedSocket:
        sock = socket.create_connection(self.jobmanager.as_tuple(), timeout=timeout_s)
        # the JobManager answers after it probed our data port (a few seconds at most)
        sock.settimeout(30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            # TLS (internal TLS on), then the secret: before the first frame, either way
            sock = secure_connect(sock, secret=self.secret, tls=self.tls, purpose=RPC)
        except SecretMismatch:
            raise authentication_failed(self.jobmanager) from None
        except TlsRefused as e:
            raise tls_refused(self.jobmanager, e) from None
        except ssl.SSLError as e:
            if certificate_refused(e):
                raise tls_refused(self.jobmanager, e) from None
            raise
        jm = FramedSocket(sock)
        try:
            jm.send(
                RegisterTaskManager(
                    self.tm_id, self.host, [(s.index, s.data_port) for s in self.slots], metrics_port=self.metrics_port
                )
            )
            reply = jm.recv()
        except BaseException:
            jm.close()
            raise
        if isinstance(reply, RegistrationRefused):
            jm.close()
            raise RegistrationError(reply.reason)
        if not isinstance(reply, RegistrationAccepted):
            jm.close()
            raise ConnectionError(f"unexpected answer to the registration: {reply!r}")
        sock.settimeout(None)
        self.heartbeat_interval_s = reply.heartbeat_interval_ms / 1000.0
        return jm

    def _heartbeats(self, jm: FramedSocket) -> None:
        while not self._stopped.is_set():
            with self._jm_lock:
                if self._jm is not jm:
                    return
            try:
                jm.send(Heartbeat(self.tm_id))
            except OSError:
                return
            self._stopped.wait(self.heartbeat_interval_s)

    def serve(self) -> None:
        """Run until shut down. Raises RegistrationError (one line: the TaskManager exits non-zero)
        when no JobManager took it within taskmanager.registration.timeout or the JobManager refused
        it, and BindAddressError when a bind address is not one of this host."""
        try:
            self._serve()
        finally:
            self.stop()

    def _attempts(self) -> RegistrationAttempts:
        return RegistrationAttempts(self.jobmanager, self.config.get(opts.REGISTRATION_TIMEOUT))

    def _serve(self) -> None:
        attempts = self._attempts()
        self.resolve_addresses(attempts)
        for slot in self.slots:
            self.start_slot(slot)
        self.start_exporter()
        print(
            f"TaskManager {self.tm_id} started: {self.num_slots} slots, metrics port {self.metrics_port}",
            file=sys.stderr,  # stdout belongs to the job (print sinks of its slots)
            flush=True,
        )
        threading.Thread(target=self._report_metrics, name="metrics-report", daemon=True).start()
        registered_before = False
        while not self._stopped.is_set():
            # Register with every slot's data port open: the JobManager probes the first one, and a slot
            # restarting after its process died would look like an unreachable TaskManager.
            for slot in self.slots:
                slot.ready.wait(SLOT_START_WAIT_S)
            try:
                jm = self._register(timeout_s=max(1.0, min(10.0, attempts.remaining_s())))
            except (OSError, EOFError, pickle.UnpicklingError) as e:  # not a JobManager (yet)
                self._wait_to_retry(attempts, e)
                continue
            except RegistrationError as e:
                if not registered_before:
                    raise  # the address is wrong: one line, exit
                # The same address was reachable before: a slot process that died between its restart
                # and the JobManager's probe is transient; the registration timeout still bounds it.
                self._wait_to_retry(attempts, e)
                continue
            registered_before = True
            log.info("registered at JobManager %s as %s", self.jobmanager, self.tm_id)
            with self._jm_lock:
                self._jm = jm
            threading.Thread(target=self._heartbeats, args=(jm,), daemon=True).start()
            try:
                while True:
                    msg = jm.recv()
                    if isinstance(msg, DeploySlot):
                        self._deploy(msg)
                    elif isinstance(msg, CancelJob):
                        for slot in self.slots:
                            if slot.deployed.pop((msg.job_id, msg.attempt), None) is not None:
                                try:
                                    slot.conn.send(msg)
                                except OSError:
                                    pass  # the slot died (its reader reports it): not a lost JobManager
                    elif isinstance(msg, TriggerCheckpoint | NotifyCheckpointComplete | NotifyCheckpointAborted):
                        self._to_slots_of(msg.job_id, msg.attempt, msg)
                    elif isinstance(msg, LogRequest):  # a file's last MiB at most: answered inline
                        self._to_jobmanager(answer_log_request(self.log_file, msg, process=f"TaskManager {self.tm_id}"))
                    elif isinstance(msg, Shutdown):
                        self._stopped.set()
                        break
            except (OSError, EOFError, ConnectionError):
                log.warning("lost the JobManager; cancelling running tasks and registering again")
            with self._jm_lock:
                self._jm = None
            jm.close()
            attempts = self._attempts()  # Flink's registration timeout runs again without a JobManager
            # Flink's behaviour: tasks of a lost JobManager are cancelled
            for slot in self.slots:
                for job_id, attempt in list(slot.deployed):
                    try:
                        slot.conn.send(CancelJob(job_id, attempt))
                    except OSError:
                        pass
                slot.deployed.clear()

    def _to_slots_of(self, job_id: str, attempt: int, message: Any) -> None:
        for slot in self.slots:
            if (job_id, attempt) in slot.deployed:
                try:
                    slot.conn.send(message)
                except OSError:
                    pass  # the slot died: its reader reports the tasks failed

    def _deploy(self, msg: DeploySlot) -> None:
        slot = self.slots[msg.slot_index]
        try:
            if not slot.ready.wait(30):
                raise OSError(f"slot {slot.index} is not running")
            slot.deployed[(msg.job_id, msg.attempt)] = msg
            slot.conn.send(msg)
        except OSError as e:
            slot.deployed.pop((msg.job_id, msg.attempt), None)
            for ref in msg.subtasks:
                self._to_jobmanager(
                    TaskStateUpdate(
                        msg.job_id,
                        msg.attempt,
                        ref.vertex_id,
                        ref.subtask_index,
                        "FAILED",
                        f"deployment to slot {slot.index} of {self.tm_id} failed: {e}",
                        self.tm_id,
                    )
                )

    def stop(self) -> None:
        self._stopped.set()
        with self._jm_lock:
            jm, self._jm = self._jm, None
        if jm is not None:
            jm.close()
        for slot in self.slots:
            try:
                if slot.conn is not None:
                    slot.conn.send(Shutdown())
            except OSError:
                pass
        deadline = time.monotonic() + 5
        for slot in self.slots:
            if slot.process is not None:
                slot.process.join(max(0.0, deadline - time.monotonic()))
                if slot.process.is_alive():
                    slot.process.kill()


def taskmanager_main(config: Any, *, jobmanager: JobManagerAddress) -> None:
    """Run a TaskManager until shut down; RegistrationError and BindAddressError carry the one line
    the command prints before it exits non-zero."""
    tm = TaskManager(config, jobmanager=jobmanager)
    start_file_logging(tm.log_file)
    log.info("TaskManager %s (pid %d) with %d slots", tm.tm_id, os.getpid(), tm.num_slots)
    # SIGTERM/SIGINT raise KeyboardInterrupt here; serve() then stops the slot processes. Marked stopped
    # first, so that a slot the same signal ended (it reaches the whole process group) is not restarted.
    with stop_on_signals(on_signal=lambda _signum: tm._stopped.set()):
        tm.serve()
