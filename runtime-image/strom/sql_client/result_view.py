"""Showing a running query in the terminal: rows are fetched by a thread (the result iterator blocks) while
this loop draws and reads keys.

The terminal is put in cbreak mode WITHOUT signals while a result shows: Ctrl-C then arrives as a key and
cancels the query only. With signals on, the terminal would send SIGINT to the whole foreground process
group, and the local mini-cluster's TaskManagers are in it. Without a terminal (a script, a pipe) there are no
keys: results print until they end, and Ctrl-C is a KeyboardInterrupt that cancels the query.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import shutil
import termios
import threading
import time
import tty
from collections.abc import Callable
from datetime import datetime
from typing import Any, TextIO

from strom.sql_client import display
from strom.sql_client.results import ChangelogBuffer, MaterializedTable, row_kind

CTRL_C = "\x03"
_END = object()
_ALT_SCREEN_ON, _ALT_SCREEN_OFF = "\x1b[?1049h\x1b[?25l", "\x1b[?25h\x1b[?1049l"
_HOME_CLEAR = "\x1b[H\x1b[2J"


def stops_the_client(interrupt: KeyboardInterrupt) -> bool:
    """SIGTERM (a Terminated, which carries its signal) ends the client; Ctrl-C only cancels a query."""
    return getattr(interrupt, "signum", None) is not None


class RowFetcher:
    """Pulls a query's rows into a queue on a daemon thread; `close()` cancels the query's job."""

    def __init__(self, iterator: Any) -> None:
        self._it = iterator
        self.rows: queue.Queue[Any] = queue.Queue(maxsize=10_000)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="strom-sql-result", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for row in self._it:
                self.rows.put(row)
        except BaseException as e:  # noqa: BLE001 - the query's failure, shown by the view
            self.error = e
        self.rows.put(_END)

    def take(self, timeout: float, limit: int = 1000) -> tuple[list[Any], bool]:
        """The rows that arrived (waiting up to `timeout` for the first), and whether the result ended."""
        out: list[Any] = []
        try:
            item = self.rows.get(timeout=timeout)
            while True:
                if item is _END:
                    return out, True
                out.append(item)
                if len(out) >= limit:
                    return out, False
                item = self.rows.get_nowait()
        except queue.Empty:
            return out, False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._it.close()


class Keys:
    """Single keys from the terminal, without echo and without signals (see the module's docstring)."""

    def __init__(self, stream: TextIO) -> None:
        self.fd: int | None = None
        try:
            if stream.isatty():
                self.fd = stream.fileno()
        except (AttributeError, ValueError, OSError):
            self.fd = None
        self._saved: Any = None

    def __enter__(self) -> Keys:
        if self.fd is not None:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[3] &= ~termios.ISIG  # Ctrl-C as a key: see the module's docstring
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None and self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def read(self, timeout: float) -> str | None:
        """A key pressed within `timeout` seconds, else None (no terminal: waits `timeout`)."""
        if self.fd is None:
            time.sleep(timeout)
            return None
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return None
        data = os.read(self.fd, 16)
        return data.decode("utf-8", "replace") if data else None


def show_tableau_stream(
    iterator: Any, columns: display.Columns, *, out: TextIO, keys: Keys, max_column_width: int
) -> None:
    """Streaming tableau: rows printed as they arrive until the result ends or Ctrl-C cancels it."""
    tab = display.StreamingTableau(columns, max_column_width)
    fetcher = RowFetcher(iterator)
    _write(out, tab.header())
    count, cancelled = 0, False
    try:
        with keys:
            while True:
                rows, ended = fetcher.take(0.05)
                lines = [tab.row(row_kind(r), tuple(r)) for r in rows]
                count += len(rows)
                _write(out, lines)
                if ended:
                    break
                if keys.read(0) == CTRL_C:
                    cancelled = True
                    break
    except KeyboardInterrupt as e:
        cancelled = True
        if stops_the_client(e):
            fetcher.close()
            raise
    finally:
        if cancelled:
            fetcher.close()
    _write(out, tab.footer(count, cancelled=cancelled))
    if fetcher.error is not None and not cancelled:
        raise fetcher.error


def collect_all(iterator: Any, *, keys: Keys) -> list[Any] | None:
    """Every row of a batch result (None when Ctrl-C cancelled it)."""
    fetcher = RowFetcher(iterator)
    rows: list[Any] = []
    try:
        with keys:
            while True:
                got, ended = fetcher.take(0.05)
                rows += got
                if ended:
                    break
                if keys.read(0) == CTRL_C:
                    fetcher.close()
                    return None
    except KeyboardInterrupt as e:
        fetcher.close()
        if stops_the_client(e):
            raise
        return None
    if fetcher.error is not None:
        raise fetcher.error
    return rows


def show_live_view(
    iterator: Any,
    columns: display.Columns,
    *,
    changelog: bool,
    out: TextIO,
    keys: Keys,
    max_rows: int,
    max_column_width: int,
    clock: Callable[[], datetime] = datetime.now,
) -> bool:
    """The full-screen `table` or `changelog` view, refreshed in place until Q; True when the query was still
    running at Q (the caller says "Result retrieval cancelled.")."""
    result: MaterializedTable | ChangelogBuffer = (ChangelogBuffer(max_rows) if changelog
                                                   else MaterializedTable(max_rows))
    fetcher = RowFetcher(iterator)
    refresh = display.DEFAULT_REFRESH
    page: int | None = None  # None: follow the last page
    goto: str | None = None  # digits typed after G
    ended = False
    drawn: tuple[Any, ...] | None = None  # what the frame on screen showed
    last_draw = 0.0
    title = "SQL Query Result (Changelog)" if changelog else "SQL Query Result (Table)"
    out.write(_ALT_SCREEN_ON)
    try:
        with keys:
            while True:
                if not ended:
                    rows, ended = fetcher.take(0.02)
                    for r in rows:
                        result.apply(row_kind(r), tuple(r))
                key = keys.read(0.05)
                if key is not None:
                    k = key[:1]
                    if goto is not None:
                        if k.isdigit():
                            goto += k
                        elif k in ("\r", "\n"):
                            page, goto = (int(goto) if goto else None), None
                        else:
                            goto = None
                    elif k in ("q", "Q", CTRL_C):
                        break
                    elif k == "+":
                        refresh = max(0, refresh - 1)
                    elif k == "-":
                        refresh = min(len(display.REFRESH_INTERVALS) - 1, refresh + 1)
                    elif not changelog and k in ("n", "N", "p", "P", "l", "L", "g", "G"):
                        page, goto = _page_key(k.upper(), page, len(result.rows), _page_size(out)), None
                        if k in ("g", "G"):
                            goto = ""
                now = time.monotonic()
                state = (result.version, ended, page, goto, refresh)
                due = now - last_draw >= display.REFRESH_INTERVALS[refresh][0]
                if key is not None or (state != drawn and (due or ended)) or (due and not ended):
                    status = ("Table program finished." if ended and fetcher.error is None
                              else f"Query failed: {fetcher.error}" if ended
                              else f"Refresh: {display.REFRESH_INTERVALS[refresh][1]}")
                    if goto is not None:
                        status = f"Goto page number: {goto}"
                    _draw(out, result, columns, changelog=changelog, title=title, status=status, page=page,
                          updated=clock().strftime("%H:%M:%S.%f")[:-3], max_column_width=max_column_width)
                    drawn, last_draw = state, now
    except KeyboardInterrupt as e:
        if stops_the_client(e):
            raise
    finally:
        out.write(_ALT_SCREEN_OFF)
        out.flush()
        if not ended:
            fetcher.close()
    return not ended


def _page_size(out: TextIO) -> int:
    _, height = _size(out)
    return max(1, height - display.HEADER_LINES - display.FOOTER_LINES - 1)


def _page_key(key: str, page: int | None, total: int, page_size: int) -> int | None:
    pages = display.page_count(total, page_size)
    current = pages if page is None else page
    if key == "N":
        return None if current + 1 >= pages else current + 1
    if key == "P":
        return max(1, current - 1)
    if key == "L":
        return None
    return current


def _size(out: TextIO) -> tuple[int, int]:
    size = shutil.get_terminal_size((100, 30))
    return size.columns, size.lines


def _draw(out: TextIO, result: MaterializedTable | ChangelogBuffer, columns: display.Columns, *, changelog: bool,
          title: str, status: str, page: int | None, updated: str, max_column_width: int) -> None:
    width, height = _size(out)
    if isinstance(result, ChangelogBuffer):
        rows: list[Any] = [v for _, v in result.rows]
        op: list[str] | None = [k for k, _ in result.rows]
    else:
        rows, op = result.rows, None
    lines = display.render_view(title=title, columns=columns, rows=rows, op=op, status=status, page=page,
                                updated=updated, width=width, height=height, max_column_width=max_column_width)
    out.write(_HOME_CLEAR + "\r\n".join(lines))
    out.flush()


def _write(out: TextIO, lines: list[str]) -> None:
    if lines:
        out.write("".join(line + "\n" for line in lines))
        out.flush()
