"""What the operator saw of a batch job's pods: the input of batch_lifecycle's decision.

`observe_driver` reads a driver Pod object: its phase, the driver container's termination (exit
code, reason, and the message, which is the log's tail for a failed container) or why it is
waiting (an image that cannot be pulled, a missing Secret, no node fits it). Pure: the reconciler
fetches the objects, this only reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strom_operator.observe.observed import POD_PROBLEM_REASONS

MESSAGE_LIMIT = 600  # characters of a termination message kept in status.batch.reason


@dataclass(frozen=True, slots=True)
class ObservedDriver:
    name: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    exit_code: int | None = None
    reason: str = ""  # the container's termination reason (Completed, Error, OOMKilled) or the pod's (Evicted)
    message: str = ""
    waiting_reason: str | None = None  # why a Pending driver does not start (ImagePullBackOff, Unschedulable, ...)

    @property
    def stuck(self) -> bool:
        """Pending for a reason that does not go away by itself."""
        return self.phase == "Pending" and self.waiting_reason in POD_PROBLEM_REASONS

    def describe(self) -> str:
        """The driver's end or trouble in one line, for status.batch.reason and events."""
        parts = [self.reason or self.waiting_reason or self.phase]
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        text = ", ".join(parts)
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True, slots=True)
class ObservedBatch:
    driver: ObservedDriver | None  # None: no pod of that name
    executors_running: int = 0  # executor pods of the current driver not yet ended


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MESSAGE_LIMIT else "..." + text[-MESSAGE_LIMIT:]


def observe_driver(pod: Mapping[str, Any] | None) -> ObservedDriver | None:
    if pod is None:
        return None
    status = pod.get("status") or {}
    name = pod["metadata"]["name"]
    phase = status.get("phase") or "Pending"
    statuses = status.get("containerStatuses") or []
    container = statuses[0] if statuses else {}
    state = container.get("state") or {}
    terminated = state.get("terminated")
    if terminated is not None:
        return ObservedDriver(name, phase, terminated.get("exitCode"), terminated.get("reason") or "",
                              _tail(terminated.get("message") or ""))
    if phase in ("Failed", "Succeeded"):  # ended without a container status: evicted, deadline exceeded
        return ObservedDriver(name, phase, None, status.get("reason") or phase, _tail(status.get("message") or ""))
    waiting = state.get("waiting")
    if waiting is not None and waiting.get("reason") not in (None, "ContainerCreating", "PodInitializing"):
        return ObservedDriver(name, phase, waiting_reason=waiting.get("reason"),
                              message=_tail(waiting.get("message") or ""))
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("reason"):
            return ObservedDriver(name, phase, waiting_reason=cond["reason"], message=_tail(cond.get("message") or ""))
    return ObservedDriver(name, phase)


def executor_running(pod: Mapping[str, Any]) -> bool:
    """An executor pod that has not ended (and is not being deleted)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return ((pod.get("status") or {}).get("phase") or "Pending") in ("Pending", "Running", "Unknown")
