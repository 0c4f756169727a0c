"""`ExecutionConfig` and `CheckpointConfig`: views over the environment's Configuration."""

from __future__ import annotations

from typing import Any

from strom.common import config_options as opts
from strom.common.configuration import Configuration
from strom.common.time import Duration, to_millis


class ExecutionConfig:
    def __init__(self, configuration: Configuration) -> None:
        self._conf = configuration
        self._global_job_parameters: dict[str, str] = {}

    def set_auto_watermark_interval(self, interval: int | Duration) -> ExecutionConfig:
        self._conf.set(opts.AUTO_WATERMARK_INTERVAL.key, to_millis(interval, what="interval"))
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._conf.get(opts.AUTO_WATERMARK_INTERVAL)

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._conf.set(opts.PARALLELISM.key, parallelism)
        return self

    def get_parallelism(self) -> int:
        return self._conf.get(opts.PARALLELISM)

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._conf.set(opts.MAX_PARALLELISM.key, max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self._conf.get(opts.MAX_PARALLELISM)

    def enable_object_reuse(self) -> ExecutionConfig:
        self._conf.set(opts.OBJECT_REUSE.key, True)
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        self._conf.set(opts.OBJECT_REUSE.key, False)
        return self

    def is_object_reuse_enabled(self) -> bool:
        return self._conf.get(opts.OBJECT_REUSE)

    def set_global_job_parameters(self, params: dict[str, Any]) -> ExecutionConfig:
        self._global_job_parameters = {str(k): str(v) for k, v in dict(params).items()}
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._global_job_parameters)


class CheckpointConfig:
    def __init__(self, configuration: Configuration) -> None:
        self._conf = configuration

    def set_checkpoint_interval(self, interval_ms: int) -> CheckpointConfig:
        self._conf.set(opts.CHECKPOINT_INTERVAL.key, interval_ms)
        return self

    def get_checkpoint_interval(self) -> int:
        return self._conf.get(opts.CHECKPOINT_INTERVAL)

    def is_checkpointing_enabled(self) -> bool:
        return self.get_checkpoint_interval() > 0

    def set_checkpointing_mode(self, mode: Any) -> CheckpointConfig:
        self._conf.set(opts.CHECKPOINT_MODE.key, getattr(mode, "name", mode))
        return self

    def get_checkpointing_mode(self) -> Any:
        from strom.datastream.execution_mode import CheckpointingMode

        return CheckpointingMode[self._conf.get(opts.CHECKPOINT_MODE)]

    def set_checkpoint_storage_dir(self, path: str) -> CheckpointConfig:
        self._conf.set(opts.CHECKPOINTS_DIR.key, path)
        return self
