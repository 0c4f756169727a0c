"""The autoscaler's settings: spec.autoscaler checked (with field paths) and read into numbers.

spec.py keeps spec.autoscaler as written (durations as Flink duration strings); this module says
whether it is valid (`autoscaler_spec_error`, one of validation.py's validators) and turns a valid
one into `AutoscalerSettings` with seconds and the effective parallelism bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strom.common.config_options import parse_duration_ms

from strom_operator.crd.spec import AutoscalerSpec, FlinkJobSpec

MODES = ("scale", "advise")
PATH = "spec.autoscaler"


@dataclass(frozen=True, slots=True)
class AutoscalerSettings:
    """A valid spec.autoscaler in seconds; `max_parallelism` is already bounded by the job's."""

    enabled: bool
    mode: str
    metrics_interval_s: float
    metrics_window_s: float
    stabilization_s: float
    target_utilization: float
    utilization_boundary: float
    catch_up_duration_s: float
    scale_down_delay_s: float
    min_parallelism: int
    max_parallelism: int
    max_rescales_per_hour: int

    @property
    def advise_only(self) -> bool:
        return self.mode == "advise"

    @classmethod
    def from_spec(cls, spec: FlinkJobSpec) -> AutoscalerSettings:
        """Settings of a spec that `autoscaler_spec_error` accepted (raises ValueError otherwise)."""
        error = autoscaler_spec_error(spec)
        if error:
            raise ValueError(error)
        a = spec.autoscaler
        job_max = spec.job.max_parallelism
        return cls(
            enabled=a.enabled,
            mode=a.mode,
            metrics_interval_s=_seconds(a.metrics_interval),
            metrics_window_s=_seconds(a.metrics_window),
            stabilization_s=_seconds(a.stabilization),
            target_utilization=float(a.target_utilization),
            utilization_boundary=float(a.utilization_boundary),
            catch_up_duration_s=_seconds(a.catch_up_duration),
            scale_down_delay_s=_seconds(a.scale_down_delay),
            min_parallelism=min(a.min_parallelism, job_max),
            max_parallelism=min(a.max_parallelism or job_max, job_max),
            max_rescales_per_hour=a.max_rescales_per_hour,
        )


def _seconds(value: str) -> float:
    return parse_duration_ms(value) / 1000


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _duration_error(field: str, value: Any, *, positive: bool) -> str | None:
    path = f"{PATH}.{field}"
    if not isinstance(value, str):
        return f"{path}: {value!r} must be a duration string such as '30 s', '5 min' or '1 h'"
    if value.strip().startswith("-"):
        return f"{path}: {value!r} is negative; expected a duration >= 0 such as '5 min'"
    try:
        ms = parse_duration_ms(value)
    except ValueError:
        return f"{path}: {value!r} is not a duration; expected e.g. '30 s', '5 min' or '1 h'"
    if positive and ms <= 0:
        return f"{path}: {value!r} must be longer than 0"
    return None


def autoscaler_spec_error(spec: FlinkJobSpec) -> str | None:
    """The first error of spec.autoscaler, naming the field, or None. Checked even while disabled, so
    that enabling it later cannot surprise."""
    a: AutoscalerSpec = spec.autoscaler
    if a.mode not in MODES:
        return f"{PATH}.mode: {a.mode!r} is not one of {', '.join(MODES)}"
    for field, value, positive in (("metricsInterval", a.metrics_interval, True),
                                   ("metricsWindow", a.metrics_window, True),
                                   ("stabilization", a.stabilization, False),
                                   ("catchUpDuration", a.catch_up_duration, True),
                                   ("scaleDownDelay", a.scale_down_delay, False)):
        error = _duration_error(field, value, positive=positive)
        if error:
            return error
    if _seconds(a.metrics_interval) > _seconds(a.metrics_window):
        return (f"{PATH}.metricsInterval: {a.metrics_interval!r} is longer than metricsWindow "
                f"{a.metrics_window!r}; a window needs several samples")
    u = a.target_utilization
    if not _is_number(u) or not 0 < u <= 1:
        return f"{PATH}.targetUtilization: {u!r} must be a number in (0, 1], e.g. 0.7"
    b = a.utilization_boundary
    if not _is_number(b) or not 0 <= b <= 1:
        return f"{PATH}.utilizationBoundary: {b!r} must be a number in [0, 1], e.g. 0.3"
    if not _is_int(a.min_parallelism) or a.min_parallelism < 1:
        return f"{PATH}.minParallelism: {a.min_parallelism!r} must be an integer >= 1"
    if a.max_parallelism is not None:
        if not _is_int(a.max_parallelism) or a.max_parallelism < 1:
            return f"{PATH}.maxParallelism: {a.max_parallelism!r} must be an integer >= 1"
        if a.min_parallelism > a.max_parallelism:
            return (f"{PATH}.minParallelism: {a.min_parallelism} exceeds {PATH}.maxParallelism "
                    f"{a.max_parallelism}")
    if _is_int(spec.job.max_parallelism) and a.min_parallelism > spec.job.max_parallelism:
        return (f"{PATH}.minParallelism: {a.min_parallelism} exceeds spec.job.maxParallelism "
                f"{spec.job.max_parallelism}")
    if not _is_int(a.max_rescales_per_hour) or a.max_rescales_per_hour < 1:
        return f"{PATH}.maxRescalesPerHour: {a.max_rescales_per_hour!r} must be an integer >= 1"
    return None
