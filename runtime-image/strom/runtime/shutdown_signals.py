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

import signal
import threading
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
        raise Terminated(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
