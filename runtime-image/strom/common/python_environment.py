"""The job's Python environment on the host that runs its functions: extract, install, put on sys.path.

A `PythonDependencies` bundle (python_dependencies.py) unpickles through `activated`, which makes the
job's working directory once per host and job and puts it on this process's sys.path:

    <root>/<job token>/files/<n>/<name>        python.files (a .py file's directory, a .zip/.egg/.whl
                                               itself, a directory and its parent go on sys.path)
    <root>/<job token>/<target_dir>/...        python.archives, extracted (PyFlink: into the working dir)
    <root>/<job token>/site-packages/          python.requirements, installed by pip (`--target`); with a
                                               cache directory offline: `--no-index --find-links`
    <root>/<job token>/.ready                  written last: the directory is complete

`<root>` is `$STROM_PYTHON_WORKING_DIR`, else `<tmp>/strom-python-<uid>` (0700, refused when another
user owns it). Several slot processes of one TaskManager unpickle the same job at once: a lock file per
job lets one of them build the directory while the others wait, then all use it.

A slot process (or Spark worker) of a job that ships archives also enters the directory
(`enter_working_directory`): PyFlink extracts archives into the working directory of the job's
functions, which read them as `target_dir/file`. A JobManager that decodes a submission only activates
(it runs no function).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

from strom.common import python_options as keys
from strom.common.python_dependencies import MADE_HERE, PythonDependencies, ShippedArchive, ShippedFile

ROOT_ENV = "STROM_PYTHON_WORKING_DIR"
_lock = threading.Lock()
_active: dict[str, Path] = {}  # job token -> its working directory, in this process


class PythonEnvironmentError(RuntimeError):
    """The job's Python dependencies cannot be made available here; the message says which and why."""


def activated(
    job_token: str,
    files: tuple[ShippedFile, ...],
    archives: tuple[ShippedArchive, ...],
    requirements: bytes | None,
    requirements_cache: tuple[tuple[str, bytes], ...],
    executable: str,
) -> PythonDependencies:
    """Unpickling a bundle: activate it (unless this process made it) and return it."""
    deps = PythonDependencies(job_token, files, archives, requirements, requirements_cache, executable)
    if job_token not in MADE_HERE:
        activate(deps)
    return deps


def working_root() -> Path:
    root = Path(os.environ.get(ROOT_ENV) or os.path.join(tempfile.gettempdir(), f"strom-python-{os.getuid()}"))
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = root.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        # another user could plant modules that our functions would import
        raise PythonEnvironmentError(
            f"the Python working directory {str(root)!r} is owned by another user or writable by others: "
            f"remove it or set {ROOT_ENV} to a private directory"
        )
    return root


def activate(deps: PythonDependencies) -> Path:
    """The job's working directory, built on first use on this host and put on sys.path (idempotent)."""
    with _lock:
        known = _active.get(deps.job_token)
        if known is not None:
            return known
        root = working_root()
        workdir = root / deps.job_token
        with open(root / f"{deps.job_token}.lock", "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)  # another slot of this host may be building it
            if not (workdir / ".ready").exists():
                _build(deps, workdir)
        for entry in reversed(_sys_path_entries(deps, workdir)):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        _active[deps.job_token] = workdir
        return workdir


def enter_working_directory(deps: PythonDependencies | None) -> None:
    """Make the job's working directory this process's current directory when the job ships archives (a
    slot or Spark worker about to run its functions): PyFlink extracts them into the working directory of
    the functions. Without archives the current directory stays, so relative paths (a file sink's) keep
    meaning what they meant."""
    if deps is not None and deps.archives:
        os.chdir(activate(deps))


def _sys_path_entries(deps: PythonDependencies, workdir: Path) -> list[str]:
    entries: list[str] = []
    for i, shipped in enumerate(deps.files):
        slot_dir = workdir / "files" / str(i)
        if shipped.is_directory:
            entries += [str(slot_dir / shipped.name), str(slot_dir)]
        elif shipped.name.endswith((".zip", ".egg", ".whl")):
            entries.append(str(slot_dir / shipped.name))  # zipimport
        else:
            entries.append(str(slot_dir))
    if deps.requirements is not None:
        entries.append(str(workdir / "site-packages"))
    entries += _foreign_site_packages(deps.executable, workdir)
    return entries


def _build(deps: PythonDependencies, workdir: Path) -> None:
    if workdir.exists():
        shutil.rmtree(workdir)  # an earlier attempt died half way
    workdir.mkdir(mode=0o700)
    for i, shipped in enumerate(deps.files):
        slot_dir = workdir / "files" / str(i)
        slot_dir.mkdir(parents=True)
        if shipped.is_directory:
            _extract_zip_bytes(shipped.data, slot_dir / shipped.name, what=f"python.files entry {shipped.name!r}")
        else:
            (slot_dir / shipped.name).write_bytes(shipped.data)
    for archive in deps.archives:
        _extract_archive(archive, workdir)
    if deps.requirements is not None:
        _install_requirements(deps, workdir)
    (workdir / ".ready").write_text("")


def _extract_zip_bytes(data: bytes, target: Path, *, what: str) -> None:
    import io

    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for name in zf.namelist():
            _check_inside(target, name, what)
        zf.extractall(target)


def _check_inside(target: Path, member: str, what: str) -> None:
    resolved = (target / member).resolve()
    if not resolved.is_relative_to(target.resolve()):
        raise PythonEnvironmentError(f"{what} holds {member!r}, which points outside its directory: refused")


def _extract_archive(archive: ShippedArchive, workdir: Path) -> None:
    import io

    target = workdir / archive.target_dir
    what = f"'{keys.PYTHON_ARCHIVES.key}' entry {archive.name!r}"
    buf = io.BytesIO(archive.data)
    if zipfile.is_zipfile(buf):
        _extract_zip_bytes(archive.data, target, what=what)
        return
    buf.seek(0)
    try:
        with tarfile.open(fileobj=buf) as tf:
            target.mkdir(parents=True, exist_ok=True)
            tf.extractall(target, filter="data")  # refuses members outside target, devices, absolute links
    except tarfile.TarError as e:
        raise PythonEnvironmentError(
            f"{what} is neither a zip nor a tar archive ({e}): ship a .zip, .tar, .tar.gz or .tgz"
        ) from None


def _install_requirements(deps: PythonDependencies, workdir: Path) -> None:
    req = workdir / "requirements.txt"
    req.write_bytes(deps.requirements or b"")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
           "--target", str(workdir / "site-packages"), "-r", str(req)]
    if deps.requirements_cache:
        cache = workdir / "requirements-cache"
        cache.mkdir()
        for name, data in deps.requirements_cache:
            (cache / os.path.basename(name)).write_bytes(data)
        cmd += ["--no-index", "--find-links", str(cache)]  # offline, as PyFlink does with a cache dir
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    if result.returncode != 0:
        last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1]
        raise PythonEnvironmentError(
            f"pip could not install the requirements of '{keys.PYTHON_REQUIREMENTS.key}' (exit "
            f"{result.returncode}): {last}"
        )


def _foreign_site_packages(executable: str, workdir: Path) -> list[str]:
    """What `python.executable` adds: nothing for this interpreter; for another one of the same
    major.minor (a virtualenv, possibly shipped in an archive) its site-packages; else one line."""
    if not executable:
        return []
    candidate = workdir / executable
    path = str(candidate) if candidate.exists() else shutil.which(executable)
    if path is None:
        raise PythonEnvironmentError(
            f"python executable {executable!r} named by '{keys.PYTHON_EXECUTABLE.key}' does not exist on this "
            "TaskManager (neither in the job's working directory nor on PATH): check the path"
        )
    if os.path.realpath(path) == os.path.realpath(sys.executable) and not candidate.exists():
        return []
    probe = "import sys, json; print(json.dumps([list(sys.version_info[:2]), sys.path]))"
    try:
        out = subprocess.run([path, "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout
        import json

        version, paths = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise PythonEnvironmentError(
            f"python executable {executable!r} named by '{keys.PYTHON_EXECUTABLE.key}' cannot be run: {e}"
        ) from None
    here = list(sys.version_info[:2])
    if version != here:
        raise PythonEnvironmentError(
            f"python executable {executable!r} named by '{keys.PYTHON_EXECUTABLE.key}' is Python "
            f"{version[0]}.{version[1]}, the TaskManager runs Python {here[0]}.{here[1]}: Strom runs a job's "
            "functions in the TaskManager's interpreter, so use the same major.minor"
        )
    return [p for p in paths if "site-packages" in p and p not in sys.path]


def dependencies_of(graph: Any) -> PythonDependencies | None:
    """The bundle a StreamGraph carries, if any."""
    deps = getattr(graph, "python_dependencies", None)
    return deps if isinstance(deps, PythonDependencies) else None
