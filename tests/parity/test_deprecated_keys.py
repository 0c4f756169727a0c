"""Deprecated configuration keys that Flink still accepts are accepted, with a warning naming the new key (issue 18).

Flink's configuration docs list, for each option, its "Deprecated keys" (e.g.
`pipeline.operator-chaining.enabled` <- `pipeline.operator-chaining`, `state.backend.type` <-
`state.backend`, `restart-strategy.type` <- `restart-strategy`, `rest.port` <- `web.port`); Flink
reads a deprecated key's value as the new key's and logs "Config uses deprecated configuration key
'X' instead of proper key 'Y'". When both are given, the new key wins.
"""

from __future__ import annotations

import logging

import pytest
from strom.common.config_options import ConfigError
from strom.common.configuration import Configuration
from strom.datastream import StreamExecutionEnvironment

DEPRECATED = [
    ("pipeline.operator-chaining", "false", "pipeline.operator-chaining.enabled", False),
    ("state.backend", "rocksdb", "state.backend.type", "ROCKSDB"),
    ("restart-strategy", "fixed-delay", "restart-strategy.type", "FIXED_DELAY"),
    ("state.backend.fs.checkpointdir", "file:///ckpt", "state.checkpoints.dir", "file:///ckpt"),
    ("savepoints.state.backend.fs.dir", "file:///svp", "state.savepoints.dir", "file:///svp"),
    ("execution.checkpointing.alignment-timeout", "2 s", "execution.checkpointing.aligned-checkpoint-timeout", 2000),
    ("web.port", "8082", "rest.port", 8082),
    ("taskmanager.network.memory.segment-size", "64kb", "taskmanager.memory.segment-size", 65536),
    ("taskmanager.network.memory.max", "128mb", "taskmanager.memory.network.max", 128 << 20),
    ("taskmanager.maxRegistrationDuration", "5 min", "taskmanager.registration.timeout", 300_000),
]


@pytest.mark.parametrize(("old", "value", "new", "parsed"), DEPRECATED, ids=[d[0] for d in DEPRECATED])
def test_a_deprecated_key_sets_the_new_key_and_warns(
    old: str, value: str, new: str, parsed: object, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="strom.common.configuration"):
        conf = Configuration({old: value})
    assert conf.to_dict() == {new: parsed}
    assert conf.get(old) == parsed and conf.contains_key(old)
    assert any(old in r.getMessage() and new in r.getMessage() for r in caplog.records)


def test_the_new_key_wins_over_its_deprecated_key() -> None:
    conf = Configuration({"pipeline.operator-chaining.enabled": "true"})
    conf.set("pipeline.operator-chaining", "false")
    assert conf.get("pipeline.operator-chaining.enabled") is True


def test_a_deprecated_key_is_validated_as_the_new_key() -> None:
    with pytest.raises(ConfigError, match="'pipeline.operator-chaining.enabled'"):
        Configuration({"pipeline.operator-chaining": "maybe"})


def test_an_old_program_disabling_chaining_by_the_deprecated_key_gets_no_chains() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration({"pipeline.operator-chaining": False}))
    assert not env.is_chaining_enabled()


def test_keys_flink_never_had_are_still_refused() -> None:
    with pytest.raises(ConfigError, match="unknown configuration key 'pipeline.operator-chainingz'"):
        Configuration({"pipeline.operator-chainingz": "false"})
