"""Where each engine's program runs: Strom and the plain-Python loop in this interpreter, PyFlink and Bytewax
in virtualenvs of their own under a cache folder, made by `--setup` with pinned packages.

The foreign engines never enter Strom's environment (PyFlink brings apache-beam, pyarrow and a JVM bridge;
Bytewax a Rust extension), and nothing in tests imports them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"
REPO_ROOT = PROGRAMS.parents[2]
DEFAULT_CACHE = Path(os.environ.get("STROM_COMPARE_CACHE", Path.home() / ".cache" / "strom-compare"))
JAVA_HOME_CANDIDATES = ("/usr/lib/jvm/java-17-openjdk-amd64",)
ENGINES = ("python", "strom", "bytewax", "pyflink")


@dataclass(frozen=True, slots=True)
class ForeignEngine:
    name: str
    packages: tuple[str, ...]  # pinned: figures are only comparable across runs with the same versions
    interpreter: str  # the Python that makes the virtualenv (PyFlink 2.x: 3.9-3.12; Bytewax 0.21: wheels for 3.11)


FOREIGN = {
    "pyflink": ForeignEngine("pyflink", ("apache-flink==2.3.0",), "python3.11"),
    "bytewax": ForeignEngine("bytewax", ("bytewax==0.21.1", "numpy"), "python3.11"),
}


def venv_python(cache: Path, engine: str) -> Path:
    return cache / engine / "bin" / "python"


def setup(cache: Path, engines: list[str]) -> None:
    """Create (or update) the virtualenvs of the foreign engines among `engines` and install their pins."""
    for name in engines:
        spec = FOREIGN.get(name)
        if spec is None:
            continue
        target = cache / name
        interpreter = shutil.which(spec.interpreter) or sys.executable
        if not venv_python(cache, name).exists():
            print(f"creating {target} with {interpreter}", flush=True)
            subprocess.run([interpreter, "-m", "venv", str(target)], check=True)
        print(f"installing {' '.join(spec.packages)} into {target}", flush=True)
        subprocess.run([str(venv_python(cache, name)), "-m", "pip", "install", "-q", *spec.packages], check=True)


def java_home() -> str | None:
    """JAVA_HOME for PyFlink: the environment's, else a JDK 17 found on this machine, else that of `java`."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    for candidate in JAVA_HOME_CANDIDATES:
        if Path(candidate, "bin", "java").exists():
            return candidate
    java = shutil.which("java")
    return str(Path(java).resolve().parents[1]) if java else None


def command(cache: Path, engine: str, workload: str, events: int, repeat: int) -> list[str]:
    """The command line that runs `workload` on `engine` and prints its JSON line."""
    args = ["--workload", workload, "--events", str(events), "--repeat", str(repeat)]
    if engine in FOREIGN:
        python = venv_python(cache, engine)
        if not python.exists():
            raise SystemExit(f"no virtualenv for {engine} at {python.parent.parent}: run with --setup first")
        return [str(python), str(PROGRAMS / f"{engine}_job.py"), *args]
    return [sys.executable, "-m", f"benchmarks.compare.programs.{engine}_job", *args]


def environment(engine: str) -> dict[str, str]:
    env = dict(os.environ)
    if engine == "pyflink" and (home := java_home()):
        env["JAVA_HOME"] = home
    if engine in FOREIGN:
        env.pop("PYTHONPATH", None)  # keep this checkout's packages out of the foreign virtualenv
    return env
