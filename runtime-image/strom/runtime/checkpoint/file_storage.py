"""`FileCheckpointStorage`: checkpoint objects as files under a local (or mounted) directory.

A write goes to a hidden temporary file in the target's directory, is fsynced, then renamed over
the target: rename is atomic on POSIX, so a reader or a restore after a crash sees the whole old
file or the whole new one. Leftover temporary files of a crashed writer are never listed.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

from strom.runtime.checkpoint.errors import StorageAccessError, StorageObjectNotFoundError
from strom.runtime.checkpoint.layout import normalize_path, normalize_prefix

_TEMP_SUFFIX = ".inprogress-"
_TEMP_RE = re.compile(r"^\..+\.inprogress-[0-9a-f]+$")


def local_root(uri: str | os.PathLike[str]) -> Path:
    """The absolute directory of `file:///abs/dir`, `file:/abs/dir` or a plain (relative) path."""
    text = os.fspath(uri)
    if text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"invalid file URI {text!r}: expected file:///absolute/path (no host)")
        text = unquote(parsed.path)
        if not text.startswith("/"):
            raise ValueError(f"invalid file URI {text!r}: expected file:///absolute/path")
    return Path(os.path.abspath(text))


class FileCheckpointStorage:
    """Checkpoint objects as files under `root` (`file:///abs/dir` or a path)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = local_root(root)

    def __repr__(self) -> str:
        return f"FileCheckpointStorage({self.root_uri!r})"

    @property
    def root_uri(self) -> str:
        return self._root.as_uri()

    @property
    def root_dir(self) -> Path:
        return self._root

    def uri_of(self, path: str) -> str:
        return (self._root / normalize_path(path)).as_uri()

    def _file(self, path: str) -> Path:
        return self._root / normalize_path(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        target = self._file(path)
        temp = target.with_name(f".{target.name}{_TEMP_SUFFIX}{secrets.token_hex(8)}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(temp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, target)
            _fsync_dir(target.parent)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise StorageAccessError(f"cannot write {self.uri_of(path)}: {exc.strerror or exc}") from exc

    def read_bytes(self, path: str) -> bytes:
        try:
            return self._file(path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise StorageObjectNotFoundError(f"no such checkpoint object: {self.uri_of(path)}") from None
        except OSError as exc:
            raise StorageAccessError(f"cannot read {self.uri_of(path)}: {exc.strerror or exc}") from exc

    def exists(self, path: str) -> bool:
        return self._file(path).is_file()

    def list(self, prefix: str = "") -> list[str]:
        directory = self._root / normalize_prefix(prefix)
        if not directory.is_dir():
            return []
        out: list[str] = []
        try:
            for dirpath, _dirnames, filenames in os.walk(directory, onerror=_raise_unless_vanished):
                rel_dir = Path(dirpath).relative_to(self._root).as_posix()
                for name in filenames:
                    if _TEMP_RE.match(name):
                        continue  # a write in progress or left by a crashed writer: not an object
                    out.append(name if rel_dir == "." else f"{rel_dir}/{name}")
        except OSError as exc:
            raise StorageAccessError(f"cannot list {directory.as_uri()}: {exc.strerror or exc}") from exc
        out.sort()
        return out

    def delete(self, path: str) -> None:
        try:
            self._file(path).unlink(missing_ok=True)
        except OSError as exc:
            raise StorageAccessError(f"cannot delete {self.uri_of(path)}: {exc.strerror or exc}") from exc

    def delete_prefix(self, prefix: str) -> None:
        rel = normalize_prefix(prefix)
        directory = self._root / rel
        try:
            if rel:
                shutil.rmtree(directory)
                self._prune_empty_parents(directory)
            else:  # the whole root: empty it, keep the directory itself
                for child in directory.iterdir():
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageAccessError(f"cannot delete {directory.as_uri()}: {exc.strerror or exc}") from exc

    def _prune_empty_parents(self, directory: Path) -> None:
        # as in an object store, a "directory" left without objects is gone (e.g. `<job-id>/` once a
        # savepoint-only job's staging checkpoint is deleted); rmdir refuses a non-empty one
        parent = directory.parent
        while parent != self._root and self._root in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                return
            parent = parent.parent


def _raise_unless_vanished(exc: OSError) -> None:
    # a subdirectory deleted while we walk (a concurrent discard) simply has no objects
    if not isinstance(exc, FileNotFoundError):
        raise exc


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable: the directory entry is only on disk once the directory is synced."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
