"""Runtime: state. Keyed state (per key and namespace, addressed by key group), operator state, timers.

Start at `api`: it says what a keyed state backend offers; everything else either implements it
or uses only it.

    api.py                the state API: KeyedStateBackend protocol, errors, VOID, InMemoryNamespaces
    abstract_backend.py   what every backend does alike: current key, descriptors -> tables -> states
    ttl.py                time-to-live: ONE layer that wraps any backend's states (values stamped)
    backends.py           `state.backend.type` -> a backend (the only module that knows both)
    heap/                 HASHMAP: state in dicts (see heap/__init__)
    rocksdb/              ROCKSDB: state in an embedded RocksDB on local disk (see rocksdb/__init__)
    snapshots.py          the canonical snapshot form (per key group), shared by both backends
    restore.py            the one restore path: checks, declarations, key groups in range, timers
    state_copies.py       immutable-or-copied values: what makes an in-memory snapshot consistent
    timers.py             the timer service (event and processing time, per key and namespace)
    operator_state.py     non-keyed operator state (list, union, broadcast) and its redistribution
    operator_snapshots.py one operator subtask's keyed + operator + extra state, snapshot and restore
    rocksdb_snapshots.py  old pickle path of incremental RocksDB handles (old checkpoints load)

Rules (import-linter checks the first): `heap` and `rocksdb` never import each other; they import
only the modules above them in this list. Operators reach state through `api` (and `backends` to
create one); the in-memory speed-ups (the aligned-window fast path, the rolling reduce) use a
state's live dicts through `api.InMemoryNamespaces` (heap) or a bounded `api.NamespaceCache` in front
of RocksDB (`api.CachingNamespaces`), never a backend's internals.
"""
