"""The workloads every engine runs, in plain Python with no engine imports (this file is loaded by the
PyFlink and Bytewax programs in their own virtualenvs, and shipped to PyFlink's Python workers).

Engine-core pipelines (as benchmarks/micro.py): N events (key = i % 1000, event time = i ms, value = 1);
  (a) map -> filter (keeps 1/3) -> sink, (b) key_by -> 1 s tumbling event-time window -> reduce(sum) -> sink.
Nexmark q0 (pass-through), q2 (selection), q5 (hot items): events from Strom's own numpy generator module,
loaded by file path (it imports only numpy and its sibling modules), so every engine sees the same events.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WINDOW_MS = 1000
NEXMARK_CHUNK = 8192  # events generated per numpy call, as Strom's NexmarkSource does
NEXMARK_WATERMARK_DELAY_MS = 4000  # Nexmark's DDL: WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
Q5_SIZE_MS, Q5_SLIDE_MS = 10_000, 2_000
Q2_MODULUS = 123
MICRO = ("a", "b")
NEXMARK = ("q0", "q2", "q5")
WORKLOADS = MICRO + NEXMARK


# -- engine-core events and user functions (the same bodies as benchmarks/micro.py) ----------------------
def make_event(i: int) -> tuple[int, int, int]:
    return (i % 1000, i, 1)


def map_fn(e: tuple[int, int, int]) -> tuple[int, int, int]:
    return (e[0], e[1], e[2] * 2)


def filter_fn(e: tuple[int, int, int]) -> bool:
    return e[1] % 3 == 0


def key_fn(e: tuple[int, int, int]) -> int:
    return e[0]


def sum_fn(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return (a[0], a[1], a[2] + b[2])


def micro_outputs(workload: str, n: int) -> int:
    """How many records reach the sink: (a) every third event; (b) one per key and 1 s window."""
    if workload == "a":
        return len(range(0, n, 3))
    windows = (n + WINDOW_MS - 1) // WINDOW_MS
    return sum(min(1000, n - w * WINDOW_MS) for w in range(windows))


# -- Nexmark -----------------------------------------------------------------------------------------
def strom_package_dir() -> Path:
    """runtime-image/strom of this checkout (this file is benchmarks/compare/programs/workloads.py)."""
    return Path(__file__).resolve().parents[3] / "runtime-image" / "strom"


def load_nexmark_generator(strom_dir: str | Path | None = None) -> types.ModuleType:
    """Strom's generator module, imported by path without running the engine's package __init__ files:
    empty parent packages point at the source folders, so only config, model, strings and generator load."""
    root = Path(strom_dir) if strom_dir else strom_package_dir()
    for name, folder in (("strom", root), ("strom.connectors", root / "connectors"),
                         ("strom.connectors.nexmark", root / "connectors" / "nexmark")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            sys.modules[name] = package
    return importlib.import_module("strom.connectors.nexmark.generator")


class NexmarkEvents:
    """Nexmark events by chunk number: chunk c holds the events NEXMARK_CHUNK*c .. of `events`, in order."""

    def __init__(self, events: int, strom_dir: str | Path | None = None) -> None:
        import numpy as np

        generator = load_nexmark_generator(strom_dir)
        config_module = importlib.import_module("strom.connectors.nexmark.config")
        model = importlib.import_module("strom.connectors.nexmark.model")
        self.events = events
        self.bid_type = model.Bid
        self._np = np
        self._generator = generator.EventBatchGenerator(config_module.NexmarkConfig(events=events))

    @property
    def chunks(self) -> int:
        return (self.events + NEXMARK_CHUNK - 1) // NEXMARK_CHUNK

    def chunk(self, c: int) -> list[Any]:
        lo = c * NEXMARK_CHUNK
        numbers = self._np.arange(lo, min(lo + NEXMARK_CHUNK, self.events), dtype=self._np.int64)
        return self._generator.generate(numbers)[0]

    def __iter__(self) -> Iterator[list[Any]]:
        return (self.chunk(c) for c in range(self.chunks))


def q0_row(b: Any) -> tuple[Any, ...]:
    """SELECT auction, bidder, price, dateTime, extra FROM bid"""
    return (b.auction, b.bidder, b.price, b.date_time, b.extra)


def q2_keep(b: Any) -> bool:
    return b.auction % Q2_MODULUS == 0


def q2_row(b: Any) -> tuple[int, int]:
    return (b.auction, b.price)


def q5_window_ends(ts: int) -> range:
    """The ends of the sliding 10 s / 2 s windows holding event time `ts` (window = [end - 10 s, end))."""
    last_end = ts - ts % Q5_SLIDE_MS + Q5_SIZE_MS
    return range(last_end, ts, -Q5_SLIDE_MS)
