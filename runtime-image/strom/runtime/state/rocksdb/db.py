"""Opening a RocksDB database as the backend, its snapshots and its restores all do: raw keys, no WAL."""

from __future__ import annotations

from rocksdict import Options, Rdict, WriteOptions


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    return opts


def open_db(path: str) -> Rdict:
    db = Rdict(path, db_options())
    wo = WriteOptions()
    # checkpoints, not the WAL, recover state (a property at run time; rocksdict's stub calls it a method)
    wo.disable_wal = True  # type: ignore[method-assign,assignment]
    db.set_write_options(wo)
    return db
