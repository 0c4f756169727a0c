"""The JobManager of one embedded job: what its JobMaster needs, in this process, on its own loop.

`env.execute()` without a cluster and `strom run --threads` run the real `JobMaster` (scheduling,
failover, restart strategy, checkpoint coordinator, savepoints), as Flink's MiniCluster does. It
needs of its JobManager only: the configuration, a resource manager with slots, high-availability
services, a metric registry, and to hear of slot changes and of the job's end. Here that is one
virtual TaskManager ("local") with as many slots as the job needs, no high availability (the job
ends with the process), and the job's own metric registry (its figures stay readable after it
ends). The tasks run where the JobMaster's `TaskDeployer` puts them: threads of this process.

The JobMaster's methods belong to its event loop; `EmbeddedLoop` is that loop, on a thread of its
own, ended once the job has ended.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from strom.runtime.jobmanager.high_availability import NoHaServices
from strom.runtime.jobmanager.resource_manager import ResourceManager, TaskManagerRecord
from strom.runtime.metrics import MetricRegistry

LOCAL_TASKMANAGER = "local"
T = TypeVar("T")


class EmbeddedJobManager:
    """A JobMaster's JobManager for one job whose tasks run in this process."""

    def __init__(self, config: Any, *, slots: int, registry: MetricRegistry) -> None:
        self.config = config
        self.registry = registry
        self.ha = NoHaServices()
        self.stopping = False
        self.rm = ResourceManager(heartbeat_timeout_s=float("inf"))
        # no data ports: the tasks' channels are in-process queues, so this address is never bound, advertised
        # or connected to; it is only what the embedded job's REST view shows for its one TaskManager
        self.rm.register(TaskManagerRecord(LOCAL_TASKMANAGER, "127.0.0.1", {i: 0 for i in range(slots)}, writer=None))

    def notify_slots_changed(self) -> None:
        pass  # one job only: nobody waits for the slots it releases

    async def slots_changed(self) -> None:
        await asyncio.sleep(0.05)  # never reached: the virtual TaskManager has every slot the job needs

    def job_finished(self, job_id: str) -> None:
        pass  # no job store: the job's handle keeps what a client reads


class EmbeddedLoop:
    """An event loop on a daemon thread of its own; `stop()` ends it (messages after that are dropped)."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def run(self, coroutine: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """`coroutine()` on the loop, from another thread; its result (or its exception)."""

        async def call() -> T:
            return await coroutine()

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout)

    def call(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        """`fn()` on the loop, from another thread; its result (or its exception)."""

        async def call() -> T:
            return fn()

        return self.run(call, timeout)

    def stop(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:
            pass  # closed already
