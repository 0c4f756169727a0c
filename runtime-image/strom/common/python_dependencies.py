"""A job's Python dependencies as they travel with it: files, archives, requirements, interpreter.

PyFlink's `add_python_file`, `add_python_archive`, `set_python_requirements` and `set_python_executable`
write Flink's `python.*` keys (`python_options`). When the client builds the job's StreamGraph it reads
what those keys name into one `PythonDependencies` bundle (the bytes themselves, not paths: a
TaskManager on another host has none of the client's files), which the graph carries inside the job
payload that submission authenticates.

The bundle pickles as a call to `python_environment.activated`: unpickling it extracts the bundle into
the job's working directory and puts it on sys.path (`python_environment`). The StreamGraph pickles its
bundle before anything else (stream_graph.py), so wherever a graph is unpickled — a JobManager decoding
a submission, a slot deploying it, a Spark worker running a stage — a module that a user function
imports is importable before that function is. The process that made the bundle skips activation on
unpickling (a client submitting to a cluster has the files already and runs no function); the embedded
executor, which runs the functions in that process, activates it explicitly (datastream/executors.py).

Errors name the path and the key: a missing file is one line, raised when the dependency is added and
again when the graph is built (the key may have been set directly).
"""

from __future__ import annotations

import io
import os
import uuid
import zipfile
from dataclasses import dataclass
from typing import Any

from strom.common import python_options as keys
from strom.common.config_options import ConfigError

# bundles made by this process: never activated here (see the module docstring)
MADE_HERE: set[str] = set()


@dataclass(frozen=True, slots=True)
class ShippedFile:
    """One entry of `python.files`: `name` is its base name; `data` the file's bytes, or for a directory
    a zip of its tree."""

    name: str
    data: bytes
    is_directory: bool


@dataclass(frozen=True, slots=True)
class ShippedArchive:
    """One entry of `python.archives`: extracted at `<working dir>/<target_dir>`."""

    name: str
    target_dir: str
    data: bytes


@dataclass(frozen=True, slots=True)
class PythonDependencies:
    job_token: str  # names the job's working directory on every host (one per submitted job)
    files: tuple[ShippedFile, ...] = ()
    archives: tuple[ShippedArchive, ...] = ()
    requirements: bytes | None = None
    requirements_cache: tuple[tuple[str, bytes], ...] = ()  # (file name, bytes) of the cache directory
    executable: str = ""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        from strom.common.python_environment import activated

        return (
            activated,
            (self.job_token, self.files, self.archives, self.requirements, self.requirements_cache, self.executable),
        )

    def is_empty(self) -> bool:
        return not (self.files or self.archives or self.requirements is not None or self.executable)


# -- the keys' values ---------------------------------------------------------------------------------
def split_list(value: str) -> list[str]:
    """Flink's comma-separated list value."""
    return [item.strip() for item in value.split(",") if item.strip()]


def archive_entry(value: str) -> tuple[str, str]:
    """'path#target_dir' -> (path, target_dir); without '#', the target is the archive's file name, as
    in PyFlink."""
    path, _, target = value.partition("#")
    target = target.strip() or os.path.basename(path.rstrip("/"))
    if not target or target in (".", "..") or "/" in target or "\\" in target:
        raise ConfigError(
            f"invalid target directory {target!r} in 'python.archives' entry {value!r}: expected a plain "
            "directory name such as 'data'"
        )
    return path.strip(), target


def requirements_entry(value: str) -> tuple[str, str]:
    """'requirements.txt#cache_dir' -> (requirements file, cache dir or '')."""
    path, _, cache = value.partition("#")
    return path.strip(), cache.strip()


def check_exists(path: str, key: str, *, directory: bool = False) -> None:
    """One line naming the path and the key when `path` is missing."""
    ok = os.path.isdir(path) if directory else os.path.exists(path)
    if not ok:
        what = "directory" if directory else "file"
        raise FileNotFoundError(f"{what} {path!r} named by '{key}' does not exist: check the path")


# -- building the bundle (client side) --------------------------------------------------------------------
def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _zip_tree(directory: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for root, dirs, files in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                full = os.path.join(root, name)
                zf.write(full, os.path.relpath(full, directory))
    return buf.getvalue()


def collect_dependencies(config: Any) -> PythonDependencies | None:
    """The bundle of what `config`'s python.* keys name, or None when they name nothing."""
    files = []
    for path in split_list(config.get(keys.PYTHON_FILES)):
        check_exists(path, keys.PYTHON_FILES.key)
        is_dir = os.path.isdir(path)
        data = _zip_tree(path) if is_dir else _read(path)
        files.append(ShippedFile(os.path.basename(os.path.normpath(path)), data, is_dir))
    archives = []
    for entry in split_list(config.get(keys.PYTHON_ARCHIVES)):
        path, target = archive_entry(entry)
        check_exists(path, keys.PYTHON_ARCHIVES.key)
        archives.append(ShippedArchive(os.path.basename(path), target, _read(path)))
    requirements: bytes | None = None
    cache: list[tuple[str, bytes]] = []
    raw = config.get(keys.PYTHON_REQUIREMENTS)
    if raw:
        req_path, cache_dir = requirements_entry(raw)
        check_exists(req_path, keys.PYTHON_REQUIREMENTS.key)
        requirements = _read(req_path)
        if cache_dir:
            check_exists(cache_dir, keys.PYTHON_REQUIREMENTS.key, directory=True)
            for name in sorted(os.listdir(cache_dir)):
                full = os.path.join(cache_dir, name)
                if os.path.isfile(full):
                    cache.append((name, _read(full)))
    deps = PythonDependencies(
        uuid.uuid4().hex, tuple(files), tuple(archives), requirements, tuple(cache), config.get(keys.PYTHON_EXECUTABLE)
    )
    if deps.is_empty():
        return None
    MADE_HERE.add(deps.job_token)
    return deps
