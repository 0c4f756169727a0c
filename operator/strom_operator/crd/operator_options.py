"""The operator's own per-job options: `kubernetes.operator.*` keys in `spec.flinkConfiguration`.

Names follow the Flink Kubernetes Operator where it has the option. The engine's registry leaves
the `kubernetes.` namespace to the operator (strom.common.configuration.validate_key), so these
keys are checked here: validation.py reports an unknown or ill-typed one with its field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strom.common.config_options import ConfigError, ConfigOption

_OPTIONS: dict[str, ConfigOption[Any]] = {}


def _option(key: str, type_: str, default: Any, description: str) -> ConfigOption[Any]:
    opt = ConfigOption(key, type_, default, description)
    _OPTIONS[key] = opt
    return opt


READINESS_TIMEOUT = _option(
    "kubernetes.operator.deployment.readiness.timeout", "duration", 5 * 60_000,
    "An upgraded job not RUNNING within this time is rolled back.")
ROLLBACK_ENABLED = _option(
    "kubernetes.operator.deployment.rollback.enabled", "bool", True,
    "Roll an upgrade that does not become RUNNING back to the last stable spec.")
LAST_STATE_FALLBACK = _option(
    "kubernetes.operator.job.upgrade.last-state-fallback.enabled", "bool", False,
    "When the upgrade savepoint fails or times out, restart from the latest checkpoint instead of waiting.")
SAVEPOINT_TIMEOUT = _option(
    "kubernetes.operator.savepoint.timeout", "duration", 10 * 60_000,
    "A savepoint not completed within this time counts as failed.")
POD_PROBLEM_DEADLINE = _option(
    "kubernetes.operator.pod.problem.deadline", "duration", 2 * 60_000,
    "Pods in ImagePullBackOff, CrashLoopBackOff or Unschedulable longer than this mark the job Degraded.")

OPERATOR_PREFIX = "kubernetes.operator."


def operator_option_error(key: str, value: Any) -> str | None:
    """None when `key` is a known operator option and `value` parses; otherwise the error."""
    opt = _OPTIONS.get(key)
    if opt is None:
        return f"unknown operator option {key!r}; known: {', '.join(sorted(_OPTIONS))}"
    try:
        opt.parse(value)
    except ConfigError as e:
        return str(e)
    return None


@dataclass(frozen=True, slots=True)
class OperatorOptions:
    """The operator options of one FlinkJob, parsed, with defaults."""

    readiness_timeout_s: float
    rollback_enabled: bool
    last_state_fallback: bool
    savepoint_timeout_s: float
    pod_problem_deadline_s: float

    @classmethod
    def from_flink_configuration(cls, conf: Mapping[str, str]) -> OperatorOptions:
        """Parse the options; an invalid value was already reported by validation, so the default
        applies here rather than a crash in the middle of a reconciliation."""

        def get(opt: ConfigOption[Any]) -> Any:
            if opt.key in conf:
                try:
                    return opt.parse(conf[opt.key])
                except ConfigError:
                    pass
            return opt.default

        return cls(
            readiness_timeout_s=get(READINESS_TIMEOUT) / 1000,
            rollback_enabled=get(ROLLBACK_ENABLED),
            last_state_fallback=get(LAST_STATE_FALLBACK),
            savepoint_timeout_s=get(SAVEPOINT_TIMEOUT) / 1000,
            pod_problem_deadline_s=get(POD_PROBLEM_DEADLINE) / 1000,
        )
