"""Driving `strom` as a user's shell does, and finding every process it started.

Each command runs in a session of its own (its own process group, as a shell's job), so that a
signal can go to the whole group as Ctrl-C does, or to the command alone as `kill`/`timeout` do.
The processes of one run carry an environment variable with a value of its own (children inherit
the environment, whatever their parent): `marked_pids` finds them in /proc, also after the command
exited, which is how an orphan shows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARK_VAR = "STROM_TEST_PROCESS_MARK"
JOB_SOURCE_ENDLESS = """
import time
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import SourceFunction


class Endless(SourceFunction):
    def __init__(self):
        self.running = True

    def run(self, ctx):
        i = 0
        while self.running:
            ctx.collect(i)
            i += 1
            time.sleep(0.05)

    def cancel(self):
        self.running = False


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.add_source(Endless()).map(lambda x: x).print()
env.execute("endless")
"""


def wait_until(condition: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Poll `condition` until it is truthy; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


def marked_pids(mark: str) -> list[int]:
    """Live processes whose environment holds MARK_VAR=mark (a zombie's environment reads empty)."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


class StromProcess:
    """`python -m strom.cli ARGS` in a new session, its stderr (and stdout) collected line by line."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.mark = uuid.uuid4().hex
        full_env = {k: v for k, v in os.environ.items() if k != "STROM_CONF_DIR"}
        full_env.update(env or {})
        full_env[MARK_VAR] = self.mark
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "strom.cli", *args],
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def descendants(self) -> list[int]:
        return [p for p in marked_pids(self.mark) if p != self.proc.pid]

    def wait_for_stderr(self, text: str, *, timeout: float = 60) -> str:
        return wait_until(
            lambda: next((line for line in list(self.stderr) if text in line), None) or self._exited_early(text),
            timeout=timeout,
            what=f"{text!r} on stderr",
        )

    def _exited_early(self, text: str) -> None:
        if self.proc.poll() is not None:
            for reader in self._readers:
                reader.join(5)
            if not any(text in line for line in self.stderr):
                raise AssertionError(f"exited {self.proc.returncode} before {text!r}:\n{self.err()}")

    def signal_group(self, sig: int) -> None:
        """As Ctrl-C (SIGINT) or a container runtime does: the signal to every process of the group."""
        os.killpg(self.proc.pid, sig)

    def signal_command(self, sig: int) -> None:
        """As `kill PID`, `timeout` or systemd's main-process kill: the command alone."""
        os.kill(self.proc.pid, sig)

    def wait(self, timeout: float = 60) -> int:
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        for reader in self._readers:
            reader.join(5)
        return code

    def err(self) -> str:
        return "".join(self.stderr)

    def out(self) -> str:
        return "".join(self.stdout)

    def kill_leftovers(self) -> list[int]:
        """SIGKILL whatever of this run is still alive (a test's cleanup); the pids it found."""
        left = marked_pids(self.mark)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left


def run_strom(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "STROM_CONF_DIR"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "strom.cli", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)
