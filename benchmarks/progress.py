"""Per-step progress of a benchmark, on stderr (stdout keeps the figures a reader copies): a line when a
step starts and one when it ends with its seconds, so that a run of minutes says where it is."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


@contextmanager
def step(what: str, out: TextIO | None = None) -> Iterator[None]:
    stream = out or sys.stderr
    print(f"[{time.strftime('%H:%M:%S')}] {what} ...", file=stream, flush=True)
    start = time.monotonic()
    ok = False
    try:
        yield
        ok = True
    finally:
        print(f"[{time.strftime('%H:%M:%S')}] {what}: {'done' if ok else 'FAILED'} in {time.monotonic() - start:.1f} s",
              file=stream, flush=True)
