"""The heap (HASHMAP) keyed state backend: state in dicts, one `StateTable` per state.

    backend.py    HeapKeyedStateBackend: tables, state classes, incremental TTL cleanup of dicts
    states.py     StateTable and the state objects (value, list, map, reducing, aggregating)
    snapshots.py  tables -> canonical snapshot (copy at the barrier) and canonical entries -> tables

Imports only the state API (`strom.runtime.state.api`, `snapshots`, `ttl`, ...), never `rocksdb`.
"""
