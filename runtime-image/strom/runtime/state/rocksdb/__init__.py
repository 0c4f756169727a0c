"""The RocksDB keyed state backend: state in an embedded RocksDB on local disk (the `rocksdb` extra).

    backend.py    RocksDBKeyedStateBackend: the database, the current key's bytes, scans, TTL cleanup
    states.py     the state objects over serialized entries
    namespace_cache.py  a bounded in-memory cache of one state's namespaces (the window fast path and
                  the rolling reduce at heap speed), written through before every snapshot
    keys.py       the byte layout of keys and values (key group first, so key groups are prefix ranges)
    canonical.py  RocksDB entries <-> the canonical snapshot form
    snapshots.py  full and incremental (SST files) snapshots, and restoring RocksDB's own files
    options.py    `state.backend.rocksdb.*` / `state.backend.incremental` options, RocksDB's tuning
                  (block cache, write buffers, predefined options; no rocksdict needed)
    db.py         opening a database (raw keys, WAL off, the tuning)

Imports only the state API (`strom.runtime.state.api`, `snapshots`, `ttl`, ...), never `heap`.
This package's __init__ imports nothing, so `options` loads without rocksdict installed.
"""
