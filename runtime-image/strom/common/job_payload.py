"""The job payload: how a submitted StreamGraph travels from `strom submit` to the JobManager.

Both ends import this module, so the format is defined once. Layout:

    b"STROMJOB" | version: u16 big-endian | header length: u32 big-endian | header (JSON, UTF-8)
    | cloudpickle of the StreamGraph

The JSON header (job name, Strom version, Python major.minor) can be read without unpickling
anything, so a receiver rejects a foreign, newer or other-Python payload with a clear error
(`check_header_compatible`) before running user code: cloudpickle's output is only readable by
the same Python minor version, and a graph pickled by another Strom may reference classes that
moved. Decoding still runs the submitter's code by design; only trusted submitters may reach it.
User functions are pickled by value where cloudpickle can (the job file's `__main__` and any
module registered with `cloudpickle.register_pickle_by_value`).
"""

from __future__ import annotations

import json
import struct
import sys
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
MAX_HEADER_BYTES = 65_536  # a name and a few versions; a larger header is not ours


class JobPayloadError(ValueError):
    """Bytes that are not a job payload this Strom can read; the message says why."""


@dataclass(frozen=True, slots=True)
class JobPayloadHeader:
    job_name: str
    strom_version: str
    format_version: int
    python_version: str = ""  # "3.11"; "" in payloads written before the field existed


def python_version() -> str:
    """This interpreter's major.minor, as the payload header carries it."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def check_header_compatible(header: JobPayloadHeader) -> None:
    """Raise JobPayloadError unless this process can safely decode a payload with `header`:
    the same format version (read_header checks it), Strom version and Python major.minor."""
    if header.strom_version != __version__:
        raise JobPayloadError(
            f"the job payload was written by Strom {header.strom_version!r}, this JobManager runs Strom "
            f"{__version__}: submit with the same Strom version as the cluster"
        )
    if header.python_version != python_version():
        written = header.python_version or "an unknown version"
        raise JobPayloadError(
            f"the job payload was written by Python {written}, this JobManager runs Python {python_version()}: "
            "submit from the same Python major.minor as the cluster (pickled functions do not cross versions)"
        )


def encode_job(stream_graph: StreamGraph, *, job_name: str | None = None) -> bytes:
    """The payload of `stream_graph`; `job_name` (default: the graph's) is what the JobManager shows."""
    name = job_name if job_name is not None else stream_graph.job_name
    meta = {"job_name": name, "strom_version": __version__, "python_version": python_version()}
    header = json.dumps(meta).encode("utf-8")
    body: bytes = cloudpickle.dumps(stream_graph, protocol=5)  # cloudpickle ships no types
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
    if header_len > MAX_HEADER_BYTES:
        raise JobPayloadError(f"malformed Strom job payload header: {header_len} bytes (at most {MAX_HEADER_BYTES})")
    body_start = start + _PREFIX.size + header_len
    if len(payload) < body_start:
        raise JobPayloadError("truncated Strom job payload: the header is incomplete")
    try:
        meta: Any = json.loads(payload[start + _PREFIX.size : body_start].decode("utf-8"))
        header = JobPayloadHeader(
            str(meta["job_name"]), str(meta["strom_version"]), version, str(meta.get("python_version", ""))
        )
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise JobPayloadError(f"malformed Strom job payload header: {e}") from None
    return header, body_start


def decode_job(payload: bytes) -> StreamGraph:
    """The StreamGraph of a payload made by `encode_job`, named as the payload says.
    Unpickling runs the submitter's code: only decode payloads from trusted submitters."""
    from strom.graph.stream_graph import StreamGraph

    header, body_start = read_header(payload)
    check_header_compatible(header)
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
