"""Old home of `rocksdb.snapshots`, kept for one reason: checkpoints written before the state package was
split pickle incremental RocksDB handles as `strom.runtime.state.rocksdb_snapshots.IncrementalKeyedStateHandle`,
and unpickling them looks the class up here. New code imports `strom.runtime.state.rocksdb.snapshots`.
"""

from strom.runtime.state.rocksdb.snapshots import IncrementalKeyedStateHandle

__all__ = ["IncrementalKeyedStateHandle"]
