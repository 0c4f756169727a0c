"""Key groups follow Flink's KeyGroupRangeAssignment and never depend on the process."""

import os
import subprocess
import sys

import pytest
from strom.common.key_groups import (
    KeyGroupAssigner,
    KeyGroupRange,
    UnhashableKeyError,
    assign_to_key_group,
    compute_default_max_parallelism,
    operator_index_for_key_group,
    stable_hash,
)
from strom.common.row import Row

KEYS = ["a", "hello", "", 0, 1, -7, 2**70, 3.5, 2.0, (1, "x"), b"raw", None, True]


def test_stable_hash_is_identical_across_processes_and_hash_seeds():
    code = (
        "from strom.common.key_groups import stable_hash;"
        f"print([stable_hash(k) for k in {KEYS!r}])"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join(sys.path))
        outputs.add(subprocess.check_output([sys.executable, "-c", code], env=env, text=True))
    assert len(outputs) == 1
    assert outputs.pop().strip() == str([stable_hash(k) for k in KEYS])


def test_equal_keys_hash_alike():
    assert stable_hash(1) == stable_hash(1.0) == stable_hash(True)
    assert stable_hash(("a", 1)) == stable_hash(Row("a", 1))
    assert stable_hash("a") != stable_hash("b")


def test_key_group_to_operator_index_matches_flink_formula():
    for mp, p in [(128, 1), (128, 3), (128, 4), (256, 7)]:
        for kg in range(mp):
            idx = operator_index_for_key_group(mp, p, kg)
            assert idx == kg * p // mp
            assert kg in KeyGroupRange.for_subtask(mp, p, idx)


def test_key_group_ranges_partition_all_groups():
    for mp, p in [(128, 3), (10, 4), (128, 128)]:
        covered = [kg for i in range(p) for kg in KeyGroupRange.for_subtask(mp, p, i)]
        assert covered == list(range(mp))


def test_default_max_parallelism_follows_flink():
    assert compute_default_max_parallelism(1) == 128
    assert compute_default_max_parallelism(100) == 256
    assert compute_default_max_parallelism(30000) == 32768


def test_assigner_cache_agrees_with_direct_hash():
    a = KeyGroupAssigner(128, cache_limit=4)
    for k in list(range(20)) + ["x", "y"] * 3:
        assert a.key_group(k) == assign_to_key_group(k, 128)


def test_unhashable_key_is_a_clear_error():
    """Lists, dicts and sets are keys by value (tests/parity/test_unhashable_keys.py); a bytearray is not."""
    with pytest.raises(UnhashableKeyError, match="bytearray"):
        stable_hash(bytearray(b"x"))
    with pytest.raises(UnhashableKeyError, match="of type dict is not hashable"):
        KeyGroupAssigner(128).key_group({"a": [bytearray(b"x")]})
