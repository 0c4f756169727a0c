"""CheckpointConfigInfo from a job's effective configuration: Flink's field names, Strom's options and defaults."""

from __future__ import annotations

import pytest
from strom.common.config_options import ConfigError
from strom.runtime.jobmanager.checkpoint_config_info import checkpoint_config_info


def test_checkpointing_off_has_no_config_info() -> None:
    assert checkpoint_config_info({}) is None
    assert checkpoint_config_info({"execution.checkpointing.interval": "0"}) is None


def test_the_options_a_job_set_are_reported_with_flinks_names() -> None:
    info = checkpoint_config_info({
        "execution.checkpointing.interval": "10 s",
        "execution.checkpointing.mode": "AT_LEAST_ONCE",
        "execution.checkpointing.timeout": "1 min",
        "execution.checkpointing.min-pause": "500 ms",
        "execution.checkpointing.tolerable-failed-checkpoints": "3",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "state.backend.type": "ROCKSDB",
        "state.checkpoints.dir": "s3://bucket/checkpoints",
    })
    assert info is not None
    assert (info["mode"], info["interval"]) == ("at_least_once", 10_000)
    assert (info["timeout"], info["min_pause"]) == (60_000, 500)
    assert info["tolerable_failed_checkpoints"] == 3
    assert info["externalization"] == {"enabled": True, "delete_on_cancellation": False}
    assert (info["state_backend"], info["checkpoint_storage"]) == (
        "EmbeddedRocksDBStateBackend",
        "FileSystemCheckpointStorage",
    )


def test_unset_options_take_flinks_defaults() -> None:
    info = checkpoint_config_info({"execution.checkpointing.interval": "300"})
    assert info is not None
    assert (info["mode"], info["timeout"], info["min_pause"], info["max_concurrent"]) == ("exactly_once", 600_000, 0, 1)
    assert info["externalization"] == {"enabled": False, "delete_on_cancellation": True}
    assert (info["state_backend"], info["checkpoint_storage"]) == ("HashMapStateBackend", "JobManagerCheckpointStorage")


def test_an_ill_typed_option_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="execution.checkpointing.timeout"):
        checkpoint_config_info({"execution.checkpointing.interval": "300", "execution.checkpointing.timeout": "soon"})
