"""Every CheckpointConfig getter and setter of PyFlink maps to Strom's checkpoint configuration (issue 18).

PyFlink's CheckpointConfig: "DEFAULT_TIMEOUT: The default timeout of a checkpoint attempt: 10
minutes", "DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS: ... none", "DEFAULT_MAX_CONCURRENT_CHECKPOINTS:
... one"; Flink 1.20's retention default is NO_EXTERNALIZED_CHECKPOINTS;
`get_checkpoint_interval` is -1 while checkpointing is disabled;
`enable_unaligned_checkpoints`: "Unaligned checkpoints can only be enabled if
get_checkpointing_mode is EXACTLY_ONCE" (key execution.checkpointing.unaligned.enabled).
"""

from __future__ import annotations

import pytest
from strom.common import Duration
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.checkpoint_config import CheckpointConfig, ExternalizedCheckpointCleanup
from strom.datastream.checkpoint_storage import (
    CustomCheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from strom.datastream.execution_mode import CheckpointingMode, TimeCharacteristic
from strom.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention


def _env() -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment()


def test_defaults_are_pyflinks() -> None:
    env = _env()
    cfg = env.get_checkpoint_config()
    assert cfg.get_checkpoint_interval() == -1 == env.get_checkpoint_interval()
    assert not cfg.is_checkpointing_enabled()
    assert cfg.get_checkpoint_timeout() == CheckpointConfig.DEFAULT_TIMEOUT == 600_000
    assert cfg.get_min_pause_between_checkpoints() == 0
    assert cfg.get_max_concurrent_checkpoints() == 1
    assert cfg.get_tolerable_checkpoint_failure_number() == 0
    assert cfg.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE is env.get_checkpointing_mode()
    assert not cfg.is_unaligned_checkpoints_enabled()
    assert cfg.get_externalized_checkpoint_cleanup() is ExternalizedCheckpointCleanup.NO_EXTERNALIZED_CHECKPOINTS
    assert not cfg.is_externalized_checkpoints_enabled()
    assert cfg.get_checkpoint_storage() is None
    assert env.get_stream_time_characteristic() is TimeCharacteristic.EventTime


def test_setters_write_the_keys_the_runtime_reads() -> None:
    env = _env()
    cfg = env.get_checkpoint_config()
    cfg.set_checkpoint_interval(5000)
    cfg.set_checkpoint_timeout(30_000)
    cfg.set_min_pause_between_checkpoints(700)
    cfg.set_tolerable_checkpoint_failure_number(3)
    cfg.set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
    cfg.set_externalized_checkpoint_cleanup(ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION)
    cfg.enable_unaligned_checkpoints()
    cfg.set_aligned_checkpoint_timeout(Duration.of_seconds(2))
    conf = env.get_configuration()
    assert conf.get("execution.checkpointing.interval") == 5000 and cfg.get_checkpoint_interval() == 5000
    assert conf.get("execution.checkpointing.timeout") == 30_000 and cfg.get_checkpoint_timeout() == 30_000
    assert conf.get("execution.checkpointing.min-pause") == 700 and cfg.get_min_pause_between_checkpoints() == 700
    assert conf.get("execution.checkpointing.tolerable-failed-checkpoints") == 3
    assert conf.get("execution.checkpointing.mode") == "AT_LEAST_ONCE"
    assert conf.get("execution.checkpointing.externalized-checkpoint-retention") == "RETAIN_ON_CANCELLATION"
    assert cfg.is_externalized_checkpoints_enabled()
    assert cfg.get_externalized_checkpoint_retention() is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    assert conf.get("execution.checkpointing.unaligned.enabled") is True and cfg.is_unaligned_checkpoints_enabled()
    assert conf.get("execution.checkpointing.aligned-checkpoint-timeout") == 2000
    assert cfg.get_aligned_checkpoint_timeout() == Duration.of_seconds(2) == cfg.get_alignment_timeout()
    cfg.disable_unaligned_checkpoints()
    assert not cfg.is_unaligned_checkpoints_enabled()


def test_fail_on_checkpointing_errors_maps_to_tolerable_failures_as_flink_does() -> None:
    cfg = _env().get_checkpoint_config()
    cfg.set_fail_on_checkpointing_errors(False)
    assert cfg.get_tolerable_checkpoint_failure_number() == 2**31 - 1 and not cfg.is_fail_on_checkpointing_errors()
    cfg.set_fail_on_checkpointing_errors(True)
    assert cfg.get_tolerable_checkpoint_failure_number() == 0 and cfg.is_fail_on_checkpointing_errors()


def test_accepted_settings_read_back() -> None:
    cfg = _env().get_checkpoint_config()
    cfg.set_max_concurrent_checkpoints(2)
    cfg.set_force_unaligned_checkpoints(True)
    cfg.set_max_subtasks_per_channel_state_file(3)
    cfg.set_checkpoint_id_of_ignored_in_flight_data(7)
    cfg.enable_approximate_local_recovery(True)
    cfg.set_prefer_checkpoint_for_recovery(True)
    assert cfg.get_max_concurrent_checkpoints() == 2 and cfg.is_force_unaligned_checkpoints()
    assert cfg.get_max_subtasks_per_channel_state_file() == 3
    assert cfg.get_checkpoint_id_of_ignored_in_flight_data() == 7
    assert cfg.is_approximate_local_recovery_enabled() and cfg.is_prefer_checkpoint_for_recovery()


def test_checkpoint_storage_maps_to_the_checkpoint_directory(tmp_path: object) -> None:
    env = _env()
    cfg = env.get_checkpoint_config()
    cfg.set_checkpoint_storage_dir(f"file://{tmp_path}")
    storage = cfg.get_checkpoint_storage()
    assert isinstance(storage, FileSystemCheckpointStorage) and storage.get_checkpoint_path() == f"file://{tmp_path}"
    assert env.get_configuration().get("state.checkpoints.dir") == f"file://{tmp_path}"
    cfg.set_checkpoint_storage(JobManagerCheckpointStorage())
    assert env.get_configuration().get("state.checkpoints.dir") == ""
    assert isinstance(cfg.get_checkpoint_storage(), JobManagerCheckpointStorage)


def test_bad_values_are_refused() -> None:
    cfg = _env().get_checkpoint_config()
    with pytest.raises(ValueError, match="at least 10 ms"):
        cfg.set_checkpoint_interval(5)
    with pytest.raises(ValueError, match="checkpoint timeout"):
        cfg.set_checkpoint_timeout(0)
    with pytest.raises(ValueError, match="max concurrent"):
        cfg.set_max_concurrent_checkpoints(0)
    with pytest.raises(TypeError, match="CheckpointStorage"):
        cfg.set_checkpoint_storage("file:///tmp")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no JVM"):
        CustomCheckpointStorage(object())
    with pytest.raises(ValueError, match="checkpoint path"):
        FileSystemCheckpointStorage("")
