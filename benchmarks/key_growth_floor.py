"""The floor under the key-growth benchmark's rolling reduce: the same per-event work with no engine at all.

`benchmarks.key_growth --floor` runs these next to the engine, same machine, same run, so the engine's own cost
growth can be told apart from what the key count costs any Python program on this machine:

* heap floor: a plain dict loop, `acc[k] = reduce(acc[k], e)` for the same events (same seed, same uniform keys
  over a dict that already holds every key). Its cost grows with the key count because a bigger dict and its
  values no longer fit the CPU caches: every event then misses them for the dict slot, the key, the old value;
* RocksDB floor: the same read-modify-write straight on rocksdict, opened with Strom's own RocksDB options (the
  8 MB block cache, bloom filter, no WAL: `strom.runtime.state.rocksdb.db.open_db`) and used the cheapest way a
  Python program can: per 1,000 events one multi-get, the values unpickled, reduced, pickled, and one sorted
  write batch; keys are a fixed 10-byte encoding (no key groups, namespaces or serializer). Past the block cache
  each read is a random read of an SST block (from the OS page cache here), so this floor falls with the key
  count whatever an engine in front of it does.

Events per CPU-second of the measured loop only (process CPU: RocksDB's background compactions included, as in
the engine's figure). Each floor runs in its own process (its RSS is its own).
"""

from __future__ import annotations

import pickle
import random
import struct
import tempfile
import time
from typing import Any

from benchmarks.key_growth import GOLDEN, SEED, reduce_fn

BATCH = 1000


def _measured_keys(keys: int, events: int) -> list[int]:
    rnd = random.Random(SEED).random  # the engine's source draws the same keys in the same order
    return [int(rnd() * keys) for _ in range(events)]


def heap_floor(keys: int, events: int) -> float:
    acc: dict[int, Any] = {}
    for j in range(keys):
        k = (j * GOLDEN) % keys
        acc[k] = (k, 0, 1)
    drawn = _measured_keys(keys, events)
    evs = [(k, j, 1) for j, k in enumerate(drawn)]
    get = acc.get
    start = time.process_time()
    for e in evs:
        k = e[0]
        cur = get(k)
        acc[k] = e if cur is None else reduce_fn(cur, e)
    return events / (time.process_time() - start)


def rocksdb_floor(keys: int, events: int) -> float:
    from rocksdict import WriteBatch
    from strom.runtime.state.rocksdb.db import open_db

    pack = struct.Struct(">HQ").pack  # a key group's two bytes, then the key: the engine's layout, minus the rest
    dumps, loads = pickle.dumps, pickle.loads
    with tempfile.TemporaryDirectory(prefix="key-growth-floor-") as directory:
        db = open_db(directory)
        try:
            for start in range(0, keys, 100_000):
                batch = WriteBatch(raw_mode=True)
                for j in range(start, min(keys, start + 100_000)):
                    k = (j * GOLDEN) % keys
                    batch.put(pack(k & 0x7F, k), dumps((k, 0, 1)))
                db.write(batch)
            drawn = _measured_keys(keys, events)
            start_cpu = time.process_time()
            for start in range(0, events, BATCH):
                chunk = drawn[start:start + BATCH]
                raw_keys = [pack(k & 0x7F, k) for k in chunk]
                current: dict[bytes, Any] = {}
                for raw, value in zip(raw_keys, db.get(raw_keys), strict=True):  # type: ignore[call-overload]
                    if raw not in current:
                        current[raw] = loads(value)
                for j, (raw, k) in enumerate(zip(raw_keys, chunk, strict=True)):
                    current[raw] = reduce_fn(current[raw], (k, start + j, 1))
                batch = WriteBatch(raw_mode=True)
                for raw in sorted(current):
                    batch.put(raw, dumps(current[raw]))
                db.write(batch)
            return events / (time.process_time() - start_cpu)
        finally:
            db.close()


def floor(backend: str, keys: int, events: int) -> float:
    return heap_floor(keys, events) if backend == "hashmap" else rocksdb_floor(keys, events)
