"""Where a JobManager or TaskManager writes its log and stdout, and how the REST API reads them back.

Flink's rules: `log.file` is the process's log file; its stdout goes to the file of the same name with
`.out`; the log directory the Web UI lists (`/jobmanager/logs`, `/taskmanagers/:id/logs`) is the folder
of `log.file`. Flink's launch scripts derive `log.file` from `env.log.dir`; Strom does the same:

* `log.file` set: that file (set it per process, e.g. with `-D` on one `strom taskmanager`);
* else `env.log.dir` set: `<env.log.dir>/jobmanager.log`, `<env.log.dir>/taskmanager-<resource id>.log`
  (names that differ, so a mini-cluster's processes can share the directory);
* neither (the default): the process logs to stderr only, as before, and the REST log paths answer 404
  saying which key to set. Containers keep that default (`kubectl logs` shows stderr and stdout).

With a log file, records go to it as well as to stderr, and stdout (where a user's `print()` in a job
lands, slot processes included: they inherit the descriptor) is copied into the `.out` file while it
still reaches the terminal. Files are appended to and never rotated.

Reading back never trusts a name: only a plain file name (no separator, no leading dot) of a regular
file directly in the log directory is opened, without following symlinks, and at most the last
`MAX_LOG_BYTES` are returned.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

from strom.common.config_options import LOG_DIR, LOG_FILE, ConfigLookup, read_option
from strom.runtime.rpc import LogAnswer, LogRequest

MAX_LOG_BYTES = 1 << 20  # a REST answer carries at most the last MiB of a file
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


def process_log_file(config: ConfigLookup | None, process_name: str) -> Path | None:
    """The log file of the process called `process_name` ("jobmanager", "taskmanager-<id>"), or None."""
    explicit = read_option(config, LOG_FILE)
    if explicit:
        return Path(explicit)
    folder = read_option(config, LOG_DIR)
    if not folder:
        return None
    return Path(folder) / (re.sub(r"[^A-Za-z0-9_.-]", "_", process_name) + ".log")


def stdout_file(log_file: Path) -> Path:
    return log_file.with_suffix(".out")


# -- writing --------------------------------------------------------------------------------------


def start_file_logging(log_file: Path | None) -> None:
    """Log records to `log_file` too and copy stdout into its `.out` file; nothing without a log file."""
    if log_file is None:
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    add_log_file_handler(log_file)
    _tee_stdout(stdout_file(log_file))


def add_log_file_handler(log_file: Path, *, prefix: str = "") -> None:
    """Root logger records to `log_file` too (appended: a TaskManager's slot processes share its file)."""
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter(f"%(asctime)s {prefix}%(name)s %(levelname)s %(message)s"))
    logging.getLogger().addHandler(handler)


def _tee_stdout(out_file: Path) -> None:
    """fd 1 becomes a pipe that a thread copies to the former stdout and to `out_file` (child processes
    inherit the pipe, so a slot's print() lands in the TaskManager's .out file too)."""
    import sys

    sys.stdout.flush()
    terminal = os.dup(1)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 1)
    os.close(write_end)
    sink = open(out_file, "ab", buffering=0)  # noqa: SIM115 - lives as long as the process

    def copy() -> None:
        while chunk := os.read(read_end, 65536):
            for fd_write in (lambda b: os.write(terminal, b), sink.write):
                try:
                    fd_write(chunk)
                except OSError:
                    pass  # a closed terminal must not stop the .out file (nor the reverse)

    threading.Thread(target=copy, name="stdout-tee", daemon=True).start()


# -- reading (the REST API's side) -----------------------------------------------------------------


def _listing(folder: Path) -> tuple[tuple[str, int, int], ...]:
    files = []
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False) and _NAME.fullmatch(entry.name):
            info = entry.stat(follow_symlinks=False)
            files.append((entry.name, info.st_size, int(info.st_mtime * 1000)))
    return tuple(sorted(files))


def _tail(path: Path, max_bytes: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileNotFoundError(path)
        size = os.fstat(fd).st_size
        start = max(0, size - max_bytes)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], size - start
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    body = b"".join(chunks)
    if start:
        body = f"[... the first {start} bytes are left out; the last {len(body)} follow ...]\n".encode() + body
    return body


def answer_log_request(
    log_file: Path | None, request: LogRequest, *, process: str, max_bytes: int = MAX_LOG_BYTES
) -> LogAnswer:
    """The answer to `request` from the process whose log file is `log_file` (`process` names it in
    errors). Pure apart from reading the log directory."""
    rid = request.request_id
    if log_file is None:
        return LogAnswer(rid, 404, error=f"{process} writes no log files: it logs to stderr (set env.log.dir)")
    if request.kind == "list":
        try:
            return LogAnswer(rid, files=_listing(log_file.parent))
        except FileNotFoundError:
            return LogAnswer(rid, files=())
    if request.kind == "log":
        path = log_file
    elif request.kind == "stdout":
        path = stdout_file(log_file)
    elif request.kind == "file" and _NAME.fullmatch(request.name):
        path = log_file.parent / request.name
    else:
        return LogAnswer(rid, 400, error=f"invalid log file name {request.name[:100]!r}: expected a name from the list")
    try:
        return LogAnswer(rid, text=_tail(path, max_bytes))
    except (FileNotFoundError, IsADirectoryError, OSError):
        return LogAnswer(rid, 404, error=f"The file {path.name} does not exist on {process}.")


def log_answer_json(answer: LogAnswer) -> dict[str, Any]:
    """Flink's LogListInfo: {"logs": [{"name", "size", "mtime"}]}."""
    return {"logs": [{"name": n, "size": size, "mtime": mtime} for n, size, mtime in answer.files]}
