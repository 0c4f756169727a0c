"""`strom jobmanager`: the JobManager process (session or application mode).

Session mode serves until terminated. Application mode (`--job PATH_OR_MODULE`) runs the
job's entry point inside the process to build the graph, runs the job on the TaskManagers
that register, and exits with the job's outcome — how pods run on Kubernetes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from strom.common import config_options as opts
from strom.common.tls import rest_server_tls
from strom.runtime.jobmanager.dispatcher import JobManager
from strom.runtime.log_files import process_log_file, start_file_logging
from strom.runtime.network.addresses import check_bindable, rest_bind
from strom.runtime.shutdown_signals import STOP_SIGNALS

log = logging.getLogger("strom.runtime.jobmanager")


async def start_rest(jm: JobManager) -> Any:
    """Start the REST endpoint (bound to rest.bind-address, unset: rest.address) when the REST layer
    is available; returns its runner."""
    try:
        from strom.runtime.jobmanager.rest_api import start_rest_server
        from strom.runtime.jobmanager.rest_view import DispatcherView
    except ImportError:
        log.warning("REST API not available in this build")
        return None
    bind = rest_bind(jm.config)
    check_bindable(bind)
    port = jm.config.get(opts.REST_PORT)
    try:
        submit = bool(jm.config.get(opts.WEB_SUBMIT_ENABLE))
        runner, port = await start_rest_server(
            DispatcherView(jm),
            bind.host,
            port,
            submit_enabled=submit,
            ssl_context=rest_server_tls(jm.config),
            logs=jm.cluster_logs(),
        )
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        raise OSError(
            e.errno, f"cannot bind the REST endpoint to {bind.host}:{port} ({bind.key}, rest.port): {why}"
        ) from None
    jm.rest_port = port
    log.info("REST endpoint listening on %s:%d", bind.host, port)
    return runner


class JobManagerThread:
    """A JobManager on its own event loop in a background thread (mini-cluster, tests)."""

    def __init__(self, config: Any, *, rest: bool = True) -> None:
        self.jm = JobManager(config)
        self._rest = rest
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="strom-jobmanager", daemon=True)
        self._runner: Any = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
        except BaseException as e:  # noqa: BLE001 - reported to start()
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        if self._rest:
            check_bindable(rest_bind(self.jm.config))  # before anything binds: one line naming the key
        await self.jm.start()
        if self._rest:
            self._runner = await start_rest(self.jm)

    def start(self) -> JobManager:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self.jm

    def stop(self) -> None:
        async def shutdown() -> None:
            await self.jm.stop()
            if self._runner is not None:
                await self._runner.cleanup()

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def with_application_mode_defaults(config: Any) -> Any:
    """`config` for a JobManager that runs one job (`--job`): REST submission off unless the user set
    `web.submit.enable` (Flink's default in application mode: an extra job there is never wanted)."""
    if config.contains_key(opts.WEB_SUBMIT_ENABLE.key):
        return config
    return config.copy().set(opts.WEB_SUBMIT_ENABLE.key, False)


def run_jobmanager(
    config: Any,
    *,
    job: str | None = None,
    job_args: Sequence[str] = (),
    run_job: Callable[..., int] | None = None,
) -> int:
    """Run the JobManager until terminated (session mode) or until the job ends (application mode).

    SIGTERM/SIGINT reach this as KeyboardInterrupt (strom.runtime.shutdown_signals, installed by the
    command): the JobManager stops within seconds and its running jobs end SUSPENDED, recoverable by the
    next JobManager from HA data and checkpoints. That is what Flink does on SIGTERM in application mode
    (the entry point's shutdown hook closes the cluster "externally": jobs suspended, HA data kept), so
    that a restarted pod resumes the job instead of losing it."""
    if job is not None:
        config = with_application_mode_defaults(config)
    start_file_logging(process_log_file(config, "jobmanager"))  # env.log.dir / log.file: Flink's files
    jmt = JobManagerThread(config)
    jm = jmt.start()
    print(
        f"JobManager started: rpc port {jm.rpc_port}, rest port {jm.rest_port}, metrics port {jm.metrics_port}",
        flush=True,
    )
    try:
        if job is None:
            threading.Event().wait()  # until a signal raises here
            return 0
        assert run_job is not None
        if jm.recovered_job_ids:
            # high availability: this JobManager replaces one that died; its job goes on from its latest
            # checkpoint instead of starting over (the entry point would submit it a second time)
            code = _await_recovered(jm)
        else:
            from strom.runtime.minicluster import ClusterExecutor

            executor = ClusterExecutor(jm, cancel_on_interrupt=False, before_submit=_log_slot_needs(jm, config))
            code = run_job(job, list(job_args), config, executor=executor, interrupted="the job was suspended")
        # A stop signal ended the job (run_job's status 128 + N): it was meant for this process, which ends now.
        # Serving on would wait for a second signal that never comes (Kubernetes sends SIGTERM once, and the
        # first one's handler ignores later ones) until the pod's grace period ends in SIGKILL.
        stopped = code in {128 + int(sig) for sig in STOP_SIGNALS}
        if not stopped and not config.get(opts.SHUTDOWN_ON_APPLICATION_FINISH):
            log.info("Application finished (exit status %d); serving until terminated", code)
            try:
                threading.Event().wait()
            except KeyboardInterrupt:  # the end of serving, not of the job: the exit status stays the job's
                log.info("stopped by a signal after the application finished")
        return code
    finally:
        jmt.stop()


def _log_slot_needs(jm: JobManager, config: Any) -> Callable[[Any], None]:
    """Before the job is submitted: say at INFO how many slots it waits for and how to provide them, so
    that a JobManager started alone does not wait slot.request.timeout in silence."""

    def log_needs(graph: Any) -> None:
        from strom.graph.job_graph import create_job_graph

        required = create_job_graph(graph).required_slots()
        free = jm.rm.free_slot_count()
        if free < required:
            host = config.get(opts.RPC_ADDRESS)
            log.info(
                "Job '%s' is waiting for %d slots (%d free); start a TaskManager with "
                "`strom taskmanager --jobmanager %s:%d -D taskmanager.numberOfTaskSlots=%d` "
                "(slot.request.timeout: %.0f s)",
                graph.job_name,
                required,
                free,
                host,
                jm.rpc_port,
                required - free,
                graph.config.get(opts.SLOT_REQUEST_TIMEOUT) / 1000.0,
            )

    return log_needs


def _await_recovered(jm: JobManager) -> int:
    """Application mode after a JobManager failover: exit with the recovered jobs' outcome."""
    outcomes = []
    for job_id in jm.recovered_job_ids:
        log.info("Application mode: waiting for recovered job %s", job_id)
        while True:
            try:
                outcomes.append(jm.wait_threadsafe(job_id, timeout=1.0).state)
                break
            except TimeoutError:
                continue
    return 0 if all(state == "FINISHED" for state in outcomes) else 1
