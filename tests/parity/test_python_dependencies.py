"""Python dependency management (issue 18): files, archives and requirements travel with the job.

PyFlink documents (Python dependency management, DataStream API):
  * `add_python_file(file_path)`: "Adds a python dependency which could be python files, python packages or
    local directories. They will be added to the PYTHONPATH of the python UDF worker."
  * `add_python_archive(archive_path, target_dir=None)`: "The archive file will be extracted to the working
    directory of python UDF worker. If the parameter 'target_dir' is specified, the archive file will be
    extracted to a directory named 'target_dir'. Otherwise, the archive file will be extracted to a
    directory with the same name of the archive file."
  * `set_python_requirements(requirements_file_path, requirements_cache_dir=None)`: "Specifies a
    requirements.txt file which defines the third-party dependencies. These dependencies will be installed
    to a temporary directory and added to the PYTHONPATH of the python UDF worker. For the dependencies
    which could not be accessed in the cluster, a directory which contains the installation packages of
    these dependencies could be specified using the parameter 'requirements_cached_dir'."

The cluster tests run `strom run job.py` as a subprocess: a JobManager and TaskManager processes whose slots
are separate processes started from another directory, with nothing of the test's directories on their
sys.path; what a function finds there came with the job. Expected output is computed in plain Python.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from strom.common import Configuration
from strom.common.python_dependencies import PythonDependencies, ShippedArchive, collect_dependencies
from strom.common.python_environment import PythonEnvironmentError, activate
from strom.datastream import StreamExecutionEnvironment

ROOT = Path(__file__).resolve().parents[2]


def strom_run(cwd: Path, job: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, STROM_PYTHON_WORKING_DIR=str(workdir),
               PYTHONPATH=os.pathsep.join([str(ROOT / "runtime-image"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "strom.cli", "run", *args, str(job)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


def printed(stdout: str) -> list[str]:
    """'2> x' -> 'x', sorted: which subtask printed a line is not the result."""
    return sorted(line.split("> ", 1)[1] if "> " in line else line for line in stdout.splitlines())


def build_wheel(directory: Path) -> Path:
    """A minimal pure-Python wheel of package `tinypkg_strom` 0.1 (PEP 427: a zip with the package, METADATA,
    WHEEL and RECORD), built here so the install needs no index."""
    files = {
        "tinypkg_strom/__init__.py": b"def triple(x):\n    return 3 * x\n",
        "tinypkg_strom-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg-strom\nVersion: 0.1\n",
        "tinypkg_strom-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: strom-test\nRoot-Is-Purelib: true\n"
                                              b"Tag: py3-none-any\n",
    }

    def record(name: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{name},sha256={digest},{len(data)}"

    lines = [record(n, d) for n, d in files.items()] + ["tinypkg_strom-0.1.dist-info/RECORD,,"]
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / "tinypkg_strom-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("tinypkg_strom-0.1.dist-info/RECORD", "\n".join(lines) + "\n")
    return wheel


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    d = {name: tmp_path / name for name in ("deps", "job", "cwd", "work")}
    for p in d.values():
        p.mkdir()
    return d


# -- on a cluster --------------------------------------------------------------------------------------
FILE_JOB = '''\
import os, sys
from strom.datastream import StreamExecutionEnvironment

MOD = {mod!r}
env = StreamExecutionEnvironment.get_execution_environment()
env.add_python_file(MOD)
import shout  # importable here because add_python_file put it on this program's sys.path

def loud(word):
    import shout as module  # on a TaskManager: only from what the job shipped
    return (shout.shout(word), os.path.dirname(module.__file__) != os.path.dirname(MOD))

env.set_parallelism(2)
env.from_collection(["to", "be", "or"]).map(loud).print()
env.execute("python file")
'''


def test_a_python_file_added_to_the_job_is_importable_by_functions_on_a_taskmanager(dirs):
    mod = dirs["deps"] / "shout.py"
    mod.write_text("def shout(s):\n    return s.upper() + '!'\n")
    job = dirs["job"] / "job.py"
    job.write_text(FILE_JOB.format(mod=str(mod)))
    r = strom_run(dirs["cwd"], job, dirs["work"])
    assert r.returncode == 0, r.stderr
    # the module the function imported was the shipped copy, not the client's file
    assert printed(r.stdout) == sorted(str((w.upper() + "!", True)) for w in ["to", "be", "or"])
    assert list(dirs["work"].glob("*/files/0/shout.py")), "the file was extracted into the job's directory"


ARCHIVE_JOB = '''\
from strom.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.add_python_archive({archive!r}, "lexicon")
env.add_python_file({zipped!r})

def lookup(word):
    import scoring  # from the zip added with add_python_file (zipimport)
    with open("lexicon/weights.txt") as f:  # the archive, extracted into the working directory
        weights = dict(line.split("=") for line in f.read().split())
    return (word, scoring.score(int(weights[word])))

env.set_parallelism(2)
env.from_collection(["to", "be", "or"]).map(lookup).print()
env.execute("python archive")
'''


def test_an_archive_is_extracted_into_the_working_directory_and_a_zip_file_is_importable(dirs):
    weights = {"to": 1, "be": 2, "or": 3}
    archive = dirs["deps"] / "lexicon.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("weights.txt", "\n".join(f"{w}={n}" for w, n in weights.items()))
    zipped = dirs["deps"] / "scoring.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("scoring.py", "def score(n):\n    return n * 100 + 7\n")
    job = dirs["job"] / "job.py"
    job.write_text(ARCHIVE_JOB.format(archive=str(archive), zipped=str(zipped)))
    r = strom_run(dirs["cwd"], job, dirs["work"])
    assert r.returncode == 0, r.stderr
    assert printed(r.stdout) == sorted(str((w, n * 100 + 7)) for w, n in weights.items())


REQUIREMENTS_JOB = '''\
from strom.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_python_requirements({requirements!r}, {cache!r})

def tripled(x):
    import tinypkg_strom  # installed by pip on the TaskManager; this program cannot import it
    return tinypkg_strom.triple(x)

env.set_parallelism(2)
env.from_collection([1, 2, 3, 4]).map(tripled).print()
env.execute("python requirements")
'''


def test_requirements_are_installed_offline_from_the_cache_directory_on_the_taskmanager(dirs):
    cache = dirs["deps"] / "cache"
    build_wheel(cache)
    requirements = dirs["deps"] / "requirements.txt"
    requirements.write_text("tinypkg-strom==0.1\n")
    job = dirs["job"] / "job.py"
    job.write_text(REQUIREMENTS_JOB.format(requirements=str(requirements), cache=str(cache)))
    r = strom_run(dirs["cwd"], job, dirs["work"])
    assert r.returncode == 0, r.stderr
    assert printed(r.stdout) == sorted(str(3 * x) for x in [1, 2, 3, 4])
    assert list(dirs["work"].glob("*/site-packages/tinypkg_strom/__init__.py"))


def test_a_requirement_missing_from_the_cache_fails_the_job_naming_the_key(dirs):
    cache = dirs["deps"] / "cache"
    build_wheel(cache)
    requirements = dirs["deps"] / "requirements.txt"
    requirements.write_text("tinypkg-strom==9.9\n")  # the cache has 0.1 only, and there is no index
    job = dirs["job"] / "job.py"
    job.write_text(REQUIREMENTS_JOB.format(requirements=str(requirements), cache=str(cache)))
    r = strom_run(dirs["cwd"], job, dirs["work"], "-D", "restart-strategy.type=none")
    assert r.returncode != 0
    assert "pip could not install the requirements of 'python.requirements'" in r.stderr, r.stderr


# -- refusals -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "key"),
    [
        (lambda env, p: env.add_python_file(p), "python.files"),
        (lambda env, p: env.add_python_archive(p, "data"), "python.archives"),
        (lambda env, p: env.set_python_requirements(p), "python.requirements"),
    ],
)
def test_a_missing_file_is_one_line_naming_the_path_and_the_key(tmp_path, call, key):
    missing = str(tmp_path / "nowhere" / "thing.py")
    with pytest.raises(FileNotFoundError) as e:
        call(StreamExecutionEnvironment.get_execution_environment(), missing)
    assert str(e.value) == f"file {missing!r} named by '{key}' does not exist: check the path"


def test_a_missing_cache_directory_is_refused_naming_the_key(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("x\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(FileNotFoundError, match="directory .*nocache.* named by 'python.requirements'"):
        env.set_python_requirements(str(requirements), str(tmp_path / "nocache"))


def test_a_key_set_directly_is_checked_when_the_job_is_built(tmp_path):
    missing = str(tmp_path / "gone.py")
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({"python.files": missing}))
    env.from_collection([1]).print()
    with pytest.raises(FileNotFoundError, match="'python.files'"):
        env.get_stream_graph()


def test_an_archive_member_outside_its_directory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("STROM_PYTHON_WORKING_DIR", str(tmp_path / "work"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../escaped.py", "x = 1\n")
    deps = PythonDependencies("t" * 32, archives=(ShippedArchive("evil.zip", "data", buf.getvalue()),))
    with pytest.raises(PythonEnvironmentError, match="points outside its directory"):
        activate(deps)
    assert not (tmp_path / "escaped.py").exists()


def test_an_interpreter_of_another_python_version_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("STROM_PYTHON_WORKING_DIR", str(tmp_path / "work"))
    fake = tmp_path / "python2"
    fake.write_text("#!/bin/sh\necho '[[2, 7], []]'\n")
    fake.chmod(0o755)
    with pytest.raises(PythonEnvironmentError, match=r"is Python 2\.7, the TaskManager runs Python 3\.\d+"):
        activate(PythonDependencies("u" * 32, executable=str(fake)))
    with pytest.raises(PythonEnvironmentError, match="named by 'python.executable' does not exist"):
        activate(PythonDependencies("v" * 32, executable=str(tmp_path / "no-python")))


def test_a_working_directory_writable_by_others_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("STROM_PYTHON_WORKING_DIR", str(shared))
    with pytest.raises(PythonEnvironmentError, match="writable by others"):
        activate(PythonDependencies("w" * 32, executable=sys.executable))


def test_a_job_without_python_dependencies_carries_no_bundle():
    assert collect_dependencies(Configuration()) is None


# -- BATCH mode on Spark -------------------------------------------------------------------------------------
BATCH_JOB = '''\
import os
from pyspark.sql import SparkSession
from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

# a session that exists before the job: its workers started without the job's files
SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
MOD = {mod!r}
env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.add_python_file(MOD)
env.add_python_archive({archive!r}, "lexicon")
import shout

def loud(word):
    import shout as module
    with open("lexicon/suffix.txt") as f:
        suffix = f.read()
    return (shout.shout(word) + suffix, os.path.dirname(module.__file__) != os.path.dirname(MOD))

env.set_parallelism(2)
env.from_collection(["to", "be", "or"]).map(loud).print()
env.execute("python file on spark")
'''


def test_files_and_archives_reach_spark_workers_even_when_a_session_already_exists(dirs):
    from tests.batch.test_batch_cli_output import needs_spark

    needs_spark()
    mod = dirs["deps"] / "shout.py"
    mod.write_text("def shout(s):\n    return s.upper() + '!'\n")
    archive = dirs["deps"] / "lexicon.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("suffix.txt", "?")
    job = dirs["job"] / "job.py"
    job.write_text(BATCH_JOB.format(mod=str(mod), archive=str(archive)))
    env = dict(os.environ, STROM_PYTHON_WORKING_DIR=str(dirs["work"]),
               PYTHONPATH=os.pathsep.join([str(ROOT / "runtime-image"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(job)], cwd=dirs["cwd"], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert printed(r.stdout) == sorted(str((w.upper() + "!?", True)) for w in ["to", "be", "or"])


# -- submitted to a session cluster ------------------------------------------------------------------------
SUBMITTED_JOB = '''\
from strom.common import Encoder
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.connectors.file_system import FileSink

env = StreamExecutionEnvironment.get_execution_environment()
env.add_python_file({mod!r})
env.set_python_requirements({requirements!r}, {cache!r})
import shout

def both(word):
    import tinypkg_strom
    return shout.shout(word) * tinypkg_strom.triple(1)

env.from_collection(["to", "be"]).map(both).sink_to(
    FileSink.for_row_format({out!r}, Encoder.simple_string_encoder()).build())
env.execute("submitted with dependencies")
'''


def test_a_job_submitted_over_rest_brings_its_files_and_requirements_to_the_cluster(dirs, monkeypatch):
    """`strom submit` sends the payload to a JobManager process, which decodes it, and deploys it to a
    TaskManager process; neither was started with the job's directories."""
    from tests.engine.cluster_testing import SessionCluster

    monkeypatch.setenv("STROM_PYTHON_WORKING_DIR", str(dirs["work"]))
    mod = dirs["deps"] / "shout.py"
    mod.write_text("def shout(s):\n    return s.upper() + '!'\n")
    cache = dirs["deps"] / "cache"
    build_wheel(cache)
    requirements = dirs["deps"] / "requirements.txt"
    requirements.write_text("tinypkg-strom==0.1\n")
    out = dirs["cwd"] / "out"
    job = dirs["job"] / "job.py"
    job.write_text(SUBMITTED_JOB.format(mod=str(mod), requirements=str(requirements), cache=str(cache),
                                        out=str(out)))
    cluster = SessionCluster(taskmanagers=1, slots=1)
    try:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "runtime-image"),
                                                           os.environ.get("PYTHONPATH", "")]))
        r = subprocess.run([sys.executable, "-m", "strom.cli", "submit", str(job), "--jobmanager",
                            f"127.0.0.1:{cluster.rest_port}"], cwd=dirs["cwd"], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        job_id = r.stdout.split()[-1]
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED"), timeout=180) == "FINISHED"
    finally:
        cluster.close()
    lines = sorted(line for f in out.rglob("*") if f.is_file() and not f.name.startswith(".")
                   for line in f.read_text().splitlines())
    assert lines == sorted((w.upper() + "!") * 3 for w in ["to", "be"])


def test_the_embedded_executor_installs_requirements_in_its_own_process(dirs, monkeypatch):
    """`python job.py` (and `strom run --threads`) run the job's functions in the program's process: the
    requirements are installed for it too, as PyFlink's local mode does for its Python workers."""
    monkeypatch.setenv("STROM_PYTHON_WORKING_DIR", str(dirs["work"]))
    monkeypatch.setattr(sys, "path", list(sys.path))  # restored after the test, with what it imported
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    cache = dirs["deps"] / "cache"
    build_wheel(cache)
    requirements = dirs["deps"] / "requirements.txt"
    requirements.write_text("tinypkg-strom==0.1\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_python_requirements(str(requirements), str(cache))

    def tripled(x):
        import tinypkg_strom

        return tinypkg_strom.triple(x)

    assert sorted(env.from_collection([1, 2]).map(tripled).execute_and_collect()) == [3, 6]
