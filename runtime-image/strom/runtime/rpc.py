"""RPC between JobManager, TaskManagers and slot workers: pickled messages in length-prefixed
frames over TCP (or a pipe). Messages are small frozen dataclasses; a job's code travels as an
opaque payload (cloudpickled StreamGraph) inside them.

Blocking helpers serve the thread-based TaskManager and workers; the asyncio helpers serve
the JobManager's event loop.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

_LEN = struct.Struct("!I")
MAX_FRAME = 1 << 30


# -- messages ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RegisterTaskManager:
    tm_id: str
    host: str  # the address it advertises for its data ports (taskmanager.host)
    slots: list[tuple[int, int]]  # (slot index, data port of the slot's worker process)
    metrics_port: int = 0


@dataclass(frozen=True, slots=True)
class RegistrationAccepted:
    tm_id: str
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int


@dataclass(frozen=True, slots=True)
class RegistrationRefused:
    """The JobManager will not take this TaskManager (it cannot reach its advertised address); the
    reason is one line for the TaskManager to print before it exits."""

    tm_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    tm_id: str
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SubtaskRef:
    vertex_id: str
    subtask_index: int


@dataclass(frozen=True, slots=True)
class DeploySlot:
    """Every subtask of one job attempt that runs in one slot (slot sharing)."""

    job_id: str
    attempt: int
    slot_index: int
    payload: bytes  # the encoded StreamGraph
    subtasks: tuple[SubtaskRef, ...]
    locations: dict[tuple[str, int], tuple[str, int]]  # (vertex id, subtask) -> (host, data port)
    restore: RestoreCheckpoint | None = None  # the attempt starts from this checkpoint's state


@dataclass(frozen=True, slots=True)
class RestoreCheckpoint:
    """A completed checkpoint to restore from: its directory under the job's `state.checkpoints.dir`
    (workers read its `_metadata` there, so the message stays small)."""

    checkpoint_id: int
    directory: str  # storage-relative, '<job-id>/chk-<n>'
    storage_uri: str = ""  # '' = the job's state.checkpoints.dir; a savepoint's own URI otherwise


@dataclass(frozen=True, slots=True)
class TriggerCheckpoint:
    """JobManager -> TaskManager -> slot workers: the attempt's source tasks start checkpoint n."""

    job_id: str
    attempt: int
    checkpoint_id: int
    timestamp: int
    stop: str = ""  # stop-with-savepoint mode, see checkpoint.savepoints.SavepointTarget.stop
    savepoint: bool = False  # savepoints are always aligned, whatever execution.checkpointing.unaligned says


@dataclass(frozen=True, slots=True)
class AcknowledgeCheckpoint:
    """Slot worker -> TaskManager -> JobManager: one subtask wrote its state (OperatorStateHandles)."""

    job_id: str
    attempt: int
    checkpoint_id: int
    vertex_id: str
    subtask_index: int
    handles: list[Any]


@dataclass(frozen=True, slots=True)
class DeclineCheckpoint:
    job_id: str
    attempt: int
    checkpoint_id: int
    vertex_id: str
    subtask_index: int
    reason: str


@dataclass(frozen=True, slots=True)
class NotifyCheckpointComplete:
    """JobManager -> every TaskManager of the attempt -> workers -> tasks (CheckpointListener)."""

    job_id: str
    attempt: int
    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class NotifyCheckpointAborted:
    job_id: str
    attempt: int
    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class CancelJob:
    job_id: str
    attempt: int


@dataclass(frozen=True, slots=True)
class TaskStateUpdate:
    job_id: str
    attempt: int
    vertex_id: str
    subtask_index: int
    state: str
    failure: str | None = None  # the user's traceback
    tm_id: str = ""


@dataclass(frozen=True, slots=True)
class WorkerReady:
    slot_index: int
    data_port: int


@dataclass(frozen=True, slots=True)
class MetricsReport:
    """A process's metrics snapshot (strom.runtime.metrics.snapshots.MetricsSnapshot)."""

    source: str  # slot index (worker -> TaskManager) or TaskManager id (-> JobManager)
    snapshot: Any


@dataclass(frozen=True, slots=True)
class SlotsChanged:
    """A slot process was restarted: its data port changed."""

    tm_id: str
    slots: list[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Shutdown:
    reason: str = ""


# -- framing over blocking sockets ---------------------------------------------------------------
class FramedSocket:
    """A socket carrying pickled messages; send is thread-safe."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()

    def send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=5)
        with self._send_lock:
            self.sock.sendall(_LEN.pack(len(data)) + data)

    def recv(self) -> Any:
        header = _recv_exactly(self.sock, _LEN.size)
        (n,) = _LEN.unpack(header)
        if n > MAX_FRAME:
            raise ConnectionError(f"frame of {n} bytes exceeds the limit")
        return pickle.loads(_recv_exactly(self.sock, n))

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        buf += chunk
    return bytes(buf)


# -- framing over asyncio streams ----------------------------------------------------------------
async def read_message(reader: asyncio.StreamReader) -> Any:
    header = await reader.readexactly(_LEN.size)
    (n,) = _LEN.unpack(header)
    if n > MAX_FRAME:
        raise ConnectionError(f"frame of {n} bytes exceeds the limit")
    return pickle.loads(await reader.readexactly(n))


def encode_message(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=5)
    return _LEN.pack(len(data)) + data


# -- logs: the JobManager asks a TaskManager for its log files (REST /taskmanagers/:id/logs...) -----
@dataclass(frozen=True, slots=True)
class LogRequest:
    """JobManager -> TaskManager. `kind`: "list" (the log directory), "file" (`name` in it), "log" (the
    process's log file) or "stdout" (its .out file). The TaskManager answers with a `LogAnswer`."""

    request_id: int
    kind: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class LogAnswer:
    """TaskManager -> JobManager: `status` 200 with `files` (name, size, mtime ms) or `text` (the file's
    last bytes), else an HTTP status and the one-line `error` the REST client gets."""

    request_id: int
    status: int = 200
    files: tuple[tuple[str, int, int], ...] = ()
    text: bytes = b""
    error: str = ""
