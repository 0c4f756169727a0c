"""SIGTERM and SIGINT as one way to stop a Strom process, so that it stops what it started.

Python turns SIGINT into KeyboardInterrupt, but SIGTERM (what `timeout`, systemd and Kubernetes
send) kills a process at once: its `finally` blocks never run, and the TaskManagers and slot
processes it started keep running. `stop_on_signals()` makes both signals raise `Terminated` (a
KeyboardInterrupt, so code that already cleans up on Ctrl-C does it on SIGTERM too) in the main
thread. The first signal starts the shutdown; later ones are ignored while it runs (it is bounded:
children get SIGTERM, then SIGKILL), so a second Ctrl-C cannot cut the cleanup short and leave
orphans. The exit status follows the shell's convention: 128 + the signal's number (130, 143).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by a signal; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(interrupt: BaseException) -> int:
    """128 + the signal's number: 130 for Ctrl-C (a plain KeyboardInterrupt), 143 for SIGTERM."""
    return 128 + int(getattr(interrupt, "signum", signal.SIGINT))


def signal_name(interrupt: BaseException) -> str:
    return signal.Signals(int(getattr(interrupt, "signum", signal.SIGINT))).name


def _ignore(signum: int, frame: FrameType | None) -> None:
    """A stop signal during the shutdown it started: nothing more to do."""


_deferring = 0  # depth of defer_stop_signals() blocks in the main thread
_deferred: int | None = None  # the stop signal that arrived inside one, raised when the outermost ends


@contextmanager
def defer_stop_signals() -> Iterator[None]:
    """Within the block a stop signal does not raise at once but when the block ends. For steps that must
    not be cut in half: a child process whose start-up data multiprocessing had only half written dies
    in its spawn_main with an EOFError traceback on stderr."""
    global _deferring, _deferred
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if _deferring == 0 and _deferred is not None:
            signum, _deferred = _deferred, None
            raise Terminated(signum)


@contextmanager
def stop_on_signals(on_signal: Callable[[int], None] | None = None) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise `Terminated` in the main thread (after calling
    `on_signal(signum)`, e.g. to mark a shutdown as expected); the previous handlers come back after it.
    Outside the main thread (signals cannot be handled there) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handle(signum: int, frame: FrameType | None) -> None:
        # The shutdown has begun: a second signal must not interrupt it. A handler that does nothing, not
        # SIG_IGN: a signal already caught but not yet handled would raise "ignored due to race condition".
        for sig in STOP_SIGNALS:
            signal.signal(sig, _ignore)
        if on_signal is not None:
            on_signal(signum)
        if _deferring:
            global _deferred
            _deferred = signum
            return
        raise Terminated(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def child_pids(parent: int | None = None) -> list[int]:
    """The live (not zombie) child processes of `parent` (default: this process), read from /proc."""
    parent = os.getpid() if parent is None else parent
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []  # not Linux: nothing to find this way
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()  # state, ppid, ...
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent and fields[0] != b"Z":
            found.append(int(name))
    return found


def stop_children(grace_s: float = 10.0) -> list[int]:
    """SIGTERM to the children this process still has after a stop signal (what a library started and did
    not get to stop, e.g. Spark's JVM when the signal came during its start), SIGKILL to those left after
    `grace_s`; the pids it found."""
    children = child_pids()
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while (left := [p for p in child_pids() if p in children]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return children
