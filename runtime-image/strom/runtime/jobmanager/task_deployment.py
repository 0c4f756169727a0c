"""Task deployment: how a JobMaster's decisions reach running tasks (the seam of issue 17).

The JobMaster decides: which subtasks go to which slot, which checkpoint an attempt restores, when
an attempt is cancelled, when checkpoints are triggered. A `TaskDeployer` only carries that out:
it starts the subtasks of one slot (`deploy`), cancels an attempt's tasks (`cancel`) and gives the
checkpoint coordinator a `TaskGateway` to one attempt's tasks. What the tasks do comes back to
the JobMaster as the same messages whatever the deployer — `TaskStateUpdate` to
`JobMaster.on_task_update`, `AcknowledgeCheckpoint`/`DeclineCheckpoint` to
`JobMaster.on_checkpoint_message` — on the JobManager's event loop, so failover, restart counting
and savepoint choice are the JobMaster's alone, as in Flink, where the MiniCluster runs the real
JobMaster over its own TaskExecutors.

`RpcTaskDeployer` is the deployer of every cluster (Kubernetes, `strom run`'s mini-cluster): it
sends RPC messages to the TaskManagers holding the slots, whose slot processes run the tasks.
`ThreadTaskDeployer` (runtime/thread_deployment.py) runs them as threads of this process
(`strom run --threads`, `env.execute()` without a cluster).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

import cloudpickle

from strom.graph.stream_graph import StreamGraph
from strom.runtime.checkpoint.coordinator import TaskGateway, TaskKey
from strom.runtime.jobmanager.checkpointing import RpcTaskGateway
from strom.runtime.rpc import CancelJob, DeploySlot, encode_message

if TYPE_CHECKING:
    from strom.runtime.jobmanager.dispatcher import JobManager


class TaskDeployer(Protocol):
    """Runs what a JobMaster schedules. Called on the JobManager's event loop; never blocks it."""

    def job_payload(self, graph: StreamGraph) -> bytes:
        """The job as its deployments carry it (pickled for other processes; in-process: nothing)."""
        ...

    def deploy(self, tm_id: str, deployment: DeploySlot) -> None:
        """Start `deployment`'s subtasks (one slot's) on TaskManager `tm_id`; each reports its state."""
        ...

    def cancel(self, tm_ids: Iterable[str], job_id: str, attempt: int) -> None:
        """Cancel attempt `attempt` of job `job_id` wherever it runs among `tm_ids`."""
        ...

    def checkpoint_gateway(
        self,
        *,
        job_id: str,
        attempt: int,
        source_tms: set[str],
        all_tms: set[str],
        not_running: Callable[[], list[TaskKey]],
    ) -> TaskGateway:
        """How the checkpoint coordinator reaches the tasks of `attempt` (sources on `source_tms`)."""
        ...


class RpcTaskDeployer:
    """Tasks in the slot processes of remote TaskManagers, reached by RPC through the JobManager."""

    def __init__(self, jm: JobManager) -> None:
        self._jm = jm

    def job_payload(self, graph: StreamGraph) -> bytes:
        return cloudpickle.dumps(graph)

    def deploy(self, tm_id: str, deployment: DeploySlot) -> None:
        self._jm.send_to(tm_id, deployment)

    def cancel(self, tm_ids: Iterable[str], job_id: str, attempt: int) -> None:
        frame = encode_message(CancelJob(job_id, attempt))
        for tm_id in set(tm_ids):
            self._jm.send_raw(tm_id, frame)

    def checkpoint_gateway(
        self,
        *,
        job_id: str,
        attempt: int,
        source_tms: set[str],
        all_tms: set[str],
        not_running: Callable[[], list[TaskKey]],
    ) -> TaskGateway:
        return RpcTaskGateway(
            job_id=job_id,
            attempt=attempt,
            loop=asyncio.get_running_loop(),
            send_raw=self._jm.send_raw,
            source_tms=source_tms,
            all_tms=all_tms,
            not_running=not_running,
        )
