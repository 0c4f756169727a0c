"""Opening a RocksDB database as the backend, its snapshots and its restores all do: raw keys, no WAL,
and the subtask's tuning (block cache, write buffers: `rocksdb.options`)."""

from __future__ import annotations

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteOptions

from strom.runtime.state.rocksdb.options import RocksDBTuning

DEFAULT_TUNING = RocksDBTuning()


def db_options(tuning: RocksDBTuning = DEFAULT_TUNING) -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    table = BlockBasedOptions()
    if tuning.block_cache_size > 0:
        table.set_block_cache(Cache(tuning.block_cache_size))
    else:
        table.disable_cache()
    table.set_block_size(tuning.block_size)
    if tuning.bloom_filter:
        table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
    opts.set_write_buffer_size(tuning.write_buffer_size)
    opts.set_max_write_buffer_number(tuning.write_buffer_count)
    if tuning.background_threads:
        opts.increase_parallelism(tuning.background_threads)
    if tuning.max_open_files:
        opts.set_max_open_files(tuning.max_open_files)
    return opts


def open_db(path: str, tuning: RocksDBTuning = DEFAULT_TUNING) -> Rdict:
    db = Rdict(path, db_options(tuning))
    wo = WriteOptions()
    # checkpoints, not the WAL, recover state (a property at run time; rocksdict's stub calls it a method)
    wo.disable_wal = True  # type: ignore[method-assign,assignment]
    db.set_write_options(wo)
    return db
