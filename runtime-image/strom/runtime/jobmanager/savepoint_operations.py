"""The savepoint operations of one job, as `GET /jobs/:jobid/savepoints/:triggerid` reports them.

Each `POST /jobs/:jobid/savepoints` or `/stop` starts an operation with a random trigger id; it is
IN_PROGRESS until the coordinator reports the savepoint's location or its failure. Operations stay
after the job ended, because a client (the Kubernetes operator) polls the result of a
stop-with-savepoint after the job has stopped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


class SavepointRefused(Exception):
    """A savepoint cannot be started for this job now (not running, no checkpointing); answered with 409."""


@dataclass(slots=True)
class SavepointOperation:
    trigger_id: str
    status: str = "IN_PROGRESS"  # Flink's QueueStatus: IN_PROGRESS or COMPLETED
    location: str | None = None
    failure: str | None = None


class SavepointOperations:
    """Trigger id -> operation, for one job."""

    def __init__(self) -> None:
        self._operations: dict[str, SavepointOperation] = {}

    def start(self, trigger_id: str | None = None) -> SavepointOperation:
        """A new operation, under the client's `trigger_id` when it gives one (Flink's `triggerId`)."""
        op = SavepointOperation(trigger_id or uuid.uuid4().hex)
        self._operations[op.trigger_id] = op
        return op

    def finish(self, trigger_id: str, location: str | None, failure: str | None) -> None:
        op = self._operations.get(trigger_id)
        if op is not None and op.status == "IN_PROGRESS":
            op.status, op.location, op.failure = "COMPLETED", location, failure

    def get(self, trigger_id: str) -> SavepointOperation | None:
        return self._operations.get(trigger_id)
