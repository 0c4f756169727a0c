"""`JobExecutionResult` (`pyflink.common.JobExecutionResult`): what a finished job reports."""

from __future__ import annotations

from typing import Any


class JobExecutionResult:
    def __init__(self, job_id: str, net_runtime_ms: int, accumulators: dict[str, Any] | None = None) -> None:
        self._job_id = job_id
        self._net_runtime_ms = net_runtime_ms
        self._accumulators = accumulators or {}

    def get_job_id(self) -> str:
        return self._job_id

    def get_net_runtime(self) -> int:
        return self._net_runtime_ms

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return dict(self._accumulators)

    def __repr__(self) -> str:
        return f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime_ms} ms)"
