"""The job payload: how a submitted StreamGraph travels from `strom submit` to the JobManager.

Both ends import this module, so the format is defined once. Layout:

    b"STROMJOB" | version: u16 big-endian | header length: u32 big-endian | header (JSON, UTF-8)
    | cloudpickle of the StreamGraph

The JSON header (job name, Strom version) can be read without unpickling anything, so a
receiver rejects a foreign or newer payload with a clear error before running user code.
User functions are pickled by value where cloudpickle can (the job file's `__main__` and any
module registered with `cloudpickle.register_pickle_by_value`).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cloudpickle

from strom import __version__

if TYPE_CHECKING:
    from strom.graph.stream_graph import StreamGraph

MAGIC = b"STROMJOB"
FORMAT_VERSION = 1
CONTENT_TYPE = "application/vnd.strom.job"
_PREFIX = struct.Struct(">HI")  # format version, header length


class JobPayloadError(ValueError):
    """Bytes that are not a job payload this Strom can read; the message says why."""


@dataclass(frozen=True, slots=True)
class JobPayloadHeader:
    job_name: str
    strom_version: str
    format_version: int


def encode_job(stream_graph: StreamGraph, *, job_name: str | None = None) -> bytes:
    """The payload of `stream_graph`; `job_name` (default: the graph's) is what the JobManager shows."""
    name = job_name if job_name is not None else stream_graph.job_name
    header = json.dumps({"job_name": name, "strom_version": __version__}).encode("utf-8")
    body = cloudpickle.dumps(stream_graph, protocol=5)
    return MAGIC + _PREFIX.pack(FORMAT_VERSION, len(header)) + header + body


def read_header(payload: bytes) -> tuple[JobPayloadHeader, int]:
    """The header and the offset of the pickled graph; raises JobPayloadError on foreign bytes."""
    if not payload.startswith(MAGIC):
        raise JobPayloadError("not a Strom job payload (missing the STROMJOB header); submit jobs with `strom submit`")
    start = len(MAGIC)
    if len(payload) < start + _PREFIX.size:
        raise JobPayloadError("truncated Strom job payload: the header is incomplete")
    version, header_len = _PREFIX.unpack_from(payload, start)
    if version != FORMAT_VERSION:
        raise JobPayloadError(
            f"job payload format version {version} is not supported (this Strom reads version {FORMAT_VERSION})"
        )
    body_start = start + _PREFIX.size + header_len
    if len(payload) < body_start:
        raise JobPayloadError("truncated Strom job payload: the header is incomplete")
    try:
        meta: Any = json.loads(payload[start + _PREFIX.size : body_start].decode("utf-8"))
        header = JobPayloadHeader(str(meta["job_name"]), str(meta["strom_version"]), version)
    except (ValueError, KeyError, TypeError) as e:
        raise JobPayloadError(f"malformed Strom job payload header: {e}") from None
    return header, body_start


def decode_job(payload: bytes) -> StreamGraph:
    """The StreamGraph of a payload made by `encode_job`, named as the payload says.
    Unpickling runs the submitter's code: only decode payloads from trusted submitters."""
    from strom.graph.stream_graph import StreamGraph

    header, body_start = read_header(payload)
    try:
        graph = cloudpickle.loads(payload[body_start:])
    except Exception as e:  # noqa: BLE001 - any unpickling failure means a bad payload
        raise JobPayloadError(
            f"cannot unpickle the job graph (submitted by Strom {header.strom_version}): {type(e).__name__}: {e}"
        ) from e
    if not isinstance(graph, StreamGraph):
        raise JobPayloadError(f"the job payload holds a {type(graph).__name__}, not a StreamGraph")
    graph.job_name = header.job_name
    return graph
