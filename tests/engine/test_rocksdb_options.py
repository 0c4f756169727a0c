"""RocksDB's own tuning under Flink's keys: defaults, predefined profiles, explicit options over a profile,
refusals naming the key, and a database opened with them keeps every entry (a plain dict is the reference)."""

from __future__ import annotations

import pytest
from strom.common import Configuration
from strom.common.config_options import ConfigError
from strom.common.key_groups import KeyGroupRange
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.state.backends import create_keyed_state_backend
from strom.runtime.state.rocksdb.options import RocksDBTuning, rocksdb_settings, rocksdb_tuning

MB = 1024 * 1024


def test_defaults_are_flinks():
    """Flink's defaults: 8 MB block cache, 4 KB blocks, 64 MB write buffers, 2 of them."""
    t = rocksdb_tuning(Configuration({}))
    assert (t.block_cache_size, t.block_size, t.write_buffer_size, t.write_buffer_count) == (8 * MB, 4096, 64 * MB, 2)
    assert t == RocksDBTuning()


def test_high_mem_profile_and_explicit_options_over_it():
    conf = Configuration({
        "state.backend.rocksdb.predefined-options": "spinning_disk_optimized_high_mem",
        "state.backend.rocksdb.block.cache-size": "32 mb",
        "state.backend.rocksdb.writebuffer.size": "1 mb",
    })
    t = rocksdb_tuning(conf)
    # explicit: 32 MB cache, 1 MB buffers; from the profile: 128 KB blocks, 4 buffers, bloom filter, 4 threads
    assert (t.block_cache_size, t.write_buffer_size) == (32 * MB, 1 * MB)
    assert (t.block_size, t.write_buffer_count, t.bloom_filter, t.background_threads) == (128 * 1024, 4, True, 4)


def test_the_bloom_filter_is_off_as_in_flink_and_set_explicitly_over_a_profile():
    assert rocksdb_tuning(Configuration({"state.backend.rocksdb.use-bloom-filter": "true"})).bloom_filter is True
    high_mem_without = Configuration({
        "state.backend.rocksdb.predefined-options": "spinning_disk_optimized_high_mem",
        "state.backend.rocksdb.use-bloom-filter": "false",
    })
    assert rocksdb_tuning(high_mem_without).bloom_filter is False


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("state.backend.rocksdb.use-bloom-filter", "sometimes"),
        ("state.backend.rocksdb.predefined-options", "FAST"),
        ("state.backend.rocksdb.block.cache-size", "lots"),
        ("state.backend.rocksdb.writebuffer.count", "0"),
        ("state.backend.rocksdb.namespace-cache.max-entries", "-1"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key: str, value: str):
    with pytest.raises((ConfigError, ValueError), match=key.replace(".", r"\.")):
        rocksdb_settings(Configuration({key: value}))


def test_a_database_with_small_write_buffers_and_no_block_cache_keeps_every_entry():
    """64 KB memtables: 3,000 entries of ~100 bytes flush to SST files several times over."""
    conf = Configuration({
        "state.backend.type": "rocksdb",
        "state.backend.rocksdb.block.cache-size": "0",
        "state.backend.rocksdb.writebuffer.size": "64 kb",
        "state.backend.rocksdb.predefined-options": "FLASH_SSD_OPTIMIZED",
    })
    backend = create_keyed_state_backend(conf, max_parallelism=128, key_group_range=KeyGroupRange(0, 127))
    try:
        state = backend.get_state(ValueStateDescriptor("v"))
        reference = {}
        for i in range(3000):
            backend.set_current_key(f"key-{i}")
            state.update("x" * 90 + str(i))
            reference[f"key-{i}"] = "x" * 90 + str(i)
        for key, expected in reference.items():
            backend.set_current_key(key)
            assert state.value() == expected
    finally:
        backend.close()
