"""`env.set_state_backend(...)` selects Strom's real backends (issue 18).

PyFlink documents EmbeddedRocksDBStateBackend as "A State Backend that stores its state in an
embedded RocksDB instance. This state backend can store very large state that exceeds memory and
spills to local disk." and `set_db_storage_paths` as "Sets the directories in which the local
RocksDB database puts its files"; HashMapStateBackend "holds working state in the memory (JVM heap)
of the TaskManagers". The deprecated MemoryStateBackend / FsStateBackend / RocksDBStateBackend
are, per Flink's migration guide, HashMap + JobManager storage, HashMap + file storage and RocksDB +
file storage.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from strom.common import Types
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.checkpoint_storage import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from strom.datastream.functions import KeyedProcessFunction, RuntimeContext
from strom.datastream.state import ValueStateDescriptor
from strom.datastream.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    FsStateBackend,
    HashMapStateBackend,
    MemoryStateBackend,
    PredefinedOptions,
    RocksDBStateBackend,
)

VALUES = [(k % 7, k) for k in range(200)]


def _files_under(directory: Path) -> list[str]:
    return [os.path.join(root, f) for root, _, files in os.walk(directory) for f in files]


class RunningSum(KeyedProcessFunction):
    """Keeps a per-key sum in keyed state and emits, with it, how many files the RocksDB directory holds now."""

    def __init__(self, rocksdb_dir: str) -> None:
        self.rocksdb_dir = rocksdb_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        total = (self.sum.value() or 0) + value[1]
        self.sum.update(total)
        yield value[0], total, len(_files_under(Path(self.rocksdb_dir)))


def _run(env: StreamExecutionEnvironment, rocksdb_dir: Path) -> tuple[dict[int, int], list[int]]:
    seen: list[int] = []
    ds = env.from_collection(VALUES, Types.TUPLE([Types.INT(), Types.LONG()]))
    out = ds.key_by(lambda v: v[0]).process(RunningSum(str(rocksdb_dir)))
    finals: dict[int, int] = {}
    for key, total, files in out.execute_and_collect():
        finals[key] = max(finals.get(key, 0), total)
        seen.append(files)
    return finals, seen


def _expected() -> dict[int, int]:
    sums: dict[int, int] = {}
    for k, v in VALUES:
        sums[k] = sums.get(k, 0) + v
    return sums


def test_embedded_rocksdb_backend_keeps_the_state_in_rocksdb_under_the_storage_path(tmp_path: Path) -> None:
    pytest.importorskip("rocksdict")
    backend = EmbeddedRocksDBStateBackend()
    backend.set_db_storage_paths(str(tmp_path))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_state_backend(backend)
    assert env.get_state_backend() is backend
    finals, seen = _run(env, tmp_path)
    assert finals == _expected()
    # every record found RocksDB's files (its SSTs, logs and manifest) under the path while the job ran
    assert seen and min(seen) > 0


def test_hashmap_backend_keeps_the_state_in_memory(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_state_backend(HashMapStateBackend())
    env.get_configuration().set("state.backend.rocksdb.localdir", str(tmp_path))  # would be used by RocksDB
    finals, seen = _run(env, tmp_path)
    assert finals == _expected()
    assert max(seen) == 0 and _files_under(tmp_path) == []


def test_backends_write_flinks_keys() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True))
    conf = env.get_configuration()
    assert (conf.get("state.backend.type"), conf.get("state.backend.incremental")) == ("ROCKSDB", True)
    env.set_state_backend(FsStateBackend("file:///tmp/ckpts", "file:///tmp/svp"))
    assert conf.get("state.backend.type") == "HASHMAP"
    assert (conf.get("state.checkpoints.dir"), conf.get("state.savepoints.dir")) == ("file:///tmp/ckpts", "file:///tmp/svp")
    assert isinstance(env.get_checkpoint_config().get_checkpoint_storage(), FileSystemCheckpointStorage)
    env.set_state_backend(RocksDBStateBackend("file:///tmp/r"))
    assert (conf.get("state.backend.type"), conf.get("state.checkpoints.dir")) == ("ROCKSDB", "file:///tmp/r")
    env.set_state_backend(MemoryStateBackend())
    assert conf.get("state.backend.type") == "HASHMAP" and conf.get("state.checkpoints.dir") == ""
    assert isinstance(env.get_checkpoint_config().get_checkpoint_storage(), JobManagerCheckpointStorage)


def test_rocksdb_settings_read_back_as_set() -> None:
    b = EmbeddedRocksDBStateBackend()
    assert not b.is_incremental_checkpoints_enabled()
    b.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM)
    b.set_number_of_transfer_threads(8)
    assert b.get_predefined_options() is PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM
    assert b.get_number_of_transfer_threads() == 8
    assert MemoryStateBackend().get_max_state_size() == MemoryStateBackend.DEFAULT_MAX_STATE_SIZE == 5 * 1024 * 1024


def test_what_strom_cannot_do_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="one path"):
        EmbeddedRocksDBStateBackend().set_db_storage_paths("/a", "/b")
    with pytest.raises(TypeError, match="no JVM"):
        CustomStateBackend(object())
    with pytest.raises(ValueError, match="checkpoint_directory_uri"):
        FsStateBackend()
    with pytest.raises(TypeError, match="expects a StateBackend"):
        StreamExecutionEnvironment.get_execution_environment().set_state_backend("rocksdb")
    assert StreamExecutionEnvironment.get_execution_environment().get_state_backend() is None
