"""A stop signal inside `defer_stop_signals()` is raised when the block ends, not in the middle of it (a
TaskManager's slot process start must not be cut in half: the child then dies in multiprocessing's
spawn_main with an EOFError traceback)."""

from __future__ import annotations

import os
import signal

import pytest
from strom.runtime.shutdown_signals import Terminated, defer_stop_signals, stop_on_signals


def test_a_sigterm_inside_the_block_is_raised_when_it_ends() -> None:
    steps = []
    with pytest.raises(Terminated) as raised, stop_on_signals():
        with defer_stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)  # let the interpreter run the handler here, inside the block
            steps.append("after the signal, still inside")
        steps.append("after the block")
    assert steps == ["after the signal, still inside"]
    assert raised.value.signum == signal.SIGTERM


def test_without_the_block_the_signal_raises_at_once() -> None:
    steps = []
    with pytest.raises(Terminated), stop_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)
        steps.append("not reached")
    assert steps == []
