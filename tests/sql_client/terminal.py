"""Driving `strom sql` as a user does: in a pseudo-terminal (pexpect), reading what the screen shows.

The client draws with escape sequences (prompt_toolkit at the prompt, the full-screen result views); `text()`
is the output with them removed. `frame(title)` is the last full-screen frame with that title: each frame is
drawn from the top of a cleared screen, so the last one starts at the title's last occurrence.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pexpect

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")
PROMPT = "Strom SQL>"
ALT_SCREEN_OFF = "\x1b[?1049l"  # what the client writes when it leaves a full-screen result view


def client_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STROM_CONF_DIR", "COLUMNS", "LINES")}
    # HOME: the history file (~/.strom/sql_history) goes to the test's directory; no cursor position requests
    # (the pseudo-terminal does not answer them)
    env.update(HOME=str(home), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    return env


class SqlTerminal:
    def __init__(self, *args: str, cwd: Path, rows: int = 40, cols: int = 120,
                 env: dict[str, str] | None = None) -> None:
        self.child = pexpect.spawn(sys.executable, ["-m", "strom.cli", "sql", *args], cwd=str(cwd),
                                   env={**client_env(cwd), **(env or {})}, encoding="utf-8", dimensions=(rows, cols),
                                   timeout=5)
        self.raw = ""
        self.ended = False

    def _pump(self, timeout: float) -> None:
        try:
            self.raw += self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            self.ended = True

    def text(self) -> str:
        return _ANSI.sub("", self.raw)

    def wait_for(self, needle: str, *, count: int = 1, timeout: float = 120) -> str:
        """Wait until `needle` was shown `count` times in all; the text so far."""
        deadline = time.monotonic() + timeout
        while self.text().count(needle) < count:
            if self.ended:
                raise AssertionError(f"strom sql ended before showing {needle!r} x{count}:\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} x{count} not shown within {timeout} s:\n{self.text()[-3000:]}")
            self._pump(0.1)
        return self.text()

    def wait_for_match(self, pattern: str, *, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while (m := re.search(pattern, self.text())) is None:
            if self.ended or time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not shown:\n{self.text()[-2000:]}")
            self._pump(0.1)
        return m

    def leave_view(self, key: str = "q", timeout: float = 60) -> None:
        """Press `key` in a full-screen result view and wait until the terminal left it (its alternate screen
        was switched off), so that what is typed next goes to the prompt, not to the view."""
        before = self.raw.count(ALT_SCREEN_OFF)
        self.key(key)
        deadline = time.monotonic() + timeout
        while self.raw.count(ALT_SCREEN_OFF) <= before:
            if self.ended or time.monotonic() > deadline:
                raise AssertionError(f"the view was not left after {key!r}:\n{self.text()[-2000:]}")
            self._pump(0.1)

    def type(self, line: str) -> None:
        self.child.send(line + "\r")

    def key(self, key: str) -> None:
        self.child.send(key)

    def run(self, statement: str, *, then: str, timeout: float = 120) -> str:
        """Type a statement (lines joined by Enter), wait for `then` to show once more; the output after it."""
        before = self.text().count(then)
        start = len(self.text())
        for line in statement.split("\n"):
            self.type(line)
        return self.wait_for(then, count=before + 1, timeout=timeout)[start:]

    def quit(self, timeout: float = 120) -> int:
        self.type("QUIT;")
        deadline = time.monotonic() + timeout
        while not self.ended:
            if time.monotonic() > deadline:
                raise AssertionError(f"strom sql did not end after QUIT;:\n{self.text()[-2000:]}")
            self._pump(0.1)
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)

    def frame(self, title: str, timeout: float = 30) -> list[str]:
        """The lines of the last frame of the full-screen view titled `title`, once drawn down to its footer (the
        status line a test waits for may come before the rest of the frame's lines reach the terminal)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            lines = text[text.rindex(title):].split("\n")
            end = next((i for i, line in enumerate(lines) if line.startswith("Q Quit")), None)
            if end is not None:
                return lines[:end + 2]
            if self.ended or time.monotonic() > deadline:
                raise AssertionError(f"the {title!r} view's footer not shown within {timeout} s:\n{text[-3000:]}")
            self._pump(0.1)


def tableau_rows(text: str) -> list[list[str]]:
    """The cells of a tableau's data lines (`| +I | a | 1 |`), header excluded."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.split("\n")
            if line.strip().startswith("|")]
    return rows[1:]


def view_rows(frame: list[str]) -> list[list[str]]:
    """The rows of a table/changelog view frame: the lines between the column header (4th line) and the hints."""
    body = frame[3:]
    end = next(i for i, line in enumerate(body) if line.startswith("Q Quit"))
    return [line.split() for line in body[1:end] if line.strip()]
