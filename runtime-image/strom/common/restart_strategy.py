"""`RestartStrategies` (`pyflink.common.restart_strategy`): a program's restart strategy as Flink's keys.

`env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 1000))` writes
`restart-strategy.type: fixed-delay`, `restart-strategy.fixed-delay.attempts: 3` and
`restart-strategy.fixed-delay.delay: 1000 ms` into the job's configuration, which is what the
runtime's restart strategy reads (the program's setting wins over the cluster's, as in Flink).
Delays are milliseconds or `datetime.timedelta`, as PyFlink takes them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import timedelta
from typing import TYPE_CHECKING, TypeAlias

from strom.common.config_options import parse_duration_ms

if TYPE_CHECKING:
    from strom.common.configuration import Configuration

FlinkValue: TypeAlias = str | int | float  # a restart-strategy.* value as Flink's configuration writes it

_TYPE = "restart-strategy.type"
_PREFIXES = ("restart-strategy.",)


def _ms(value: int | timedelta, what: str) -> int:
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be milliseconds (an int >= 0) or a datetime.timedelta, got {value!r}")
    return value


class RestartStrategyConfiguration(ABC):
    """One restart strategy; `to_configuration()` gives its Flink keys."""

    @abstractmethod
    def to_configuration(self) -> dict[str, FlinkValue]:
        """Flink's `restart-strategy.*` keys of this strategy."""

    @abstractmethod
    def get_description(self) -> str:
        """The strategy in words."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RestartStrategyConfiguration) and type(other) is type(self) and (
            other.to_configuration() == self.to_configuration()
        )

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.to_configuration().items())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_description()})"


class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
    def to_configuration(self) -> dict[str, FlinkValue]:
        return {_TYPE: "none"}

    def get_description(self) -> str:
        return "Restart deactivated."


class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
    """Use the cluster's restart strategy: the program sets no `restart-strategy.*` key."""

    def to_configuration(self) -> dict[str, FlinkValue]:
        return {}

    def get_description(self) -> str:
        return "Cluster level default restart strategy"


class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
    def __init__(self, restart_attempts: int, delay_between_attempts_interval: int | timedelta) -> None:
        if isinstance(restart_attempts, bool) or not isinstance(restart_attempts, int) or restart_attempts < 0:
            raise ValueError(f"restart_attempts must be an int >= 0, got {restart_attempts!r}")
        self._attempts = restart_attempts
        self._delay_ms = _ms(delay_between_attempts_interval, "delay_between_attempts_interval")

    def get_restart_attempts(self) -> int:
        return self._attempts

    def get_delay_between_attempts_interval(self) -> timedelta:
        return timedelta(milliseconds=self._delay_ms)

    def to_configuration(self) -> dict[str, FlinkValue]:
        return {
            _TYPE: "fixed-delay",
            "restart-strategy.fixed-delay.attempts": self._attempts,
            "restart-strategy.fixed-delay.delay": f"{self._delay_ms} ms",
        }

    def get_description(self) -> str:
        return f"Restart with fixed delay ({self._delay_ms} ms). #{self._attempts} restart attempts."


class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
    def __init__(
        self, max_failure_rate: int, failure_interval: int | timedelta, delay_between_attempts_interval: int | timedelta
    ) -> None:
        if isinstance(max_failure_rate, bool) or not isinstance(max_failure_rate, int) or max_failure_rate < 1:
            raise ValueError(f"max_failure_rate must be an int >= 1, got {max_failure_rate!r}")
        self._rate = max_failure_rate
        self._interval_ms = _ms(failure_interval, "failure_interval")
        self._delay_ms = _ms(delay_between_attempts_interval, "delay_between_attempts_interval")

    def get_max_failure_rate(self) -> int:
        return self._rate

    def get_failure_interval(self) -> timedelta:
        return timedelta(milliseconds=self._interval_ms)

    def get_delay_between_attempts_interval(self) -> timedelta:
        return timedelta(milliseconds=self._delay_ms)

    def to_configuration(self) -> dict[str, FlinkValue]:
        return {
            _TYPE: "failure-rate",
            "restart-strategy.failure-rate.max-failures-per-interval": self._rate,
            "restart-strategy.failure-rate.failure-rate-interval": f"{self._interval_ms} ms",
            "restart-strategy.failure-rate.delay": f"{self._delay_ms} ms",
        }

    def get_description(self) -> str:
        return (f"Failure rate restart with maximum of {self._rate} failures within interval {self._interval_ms} ms "
                f"and fixed delay {self._delay_ms} ms.")


class ExponentialDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
    def __init__(
        self,
        initial_backoff: int | timedelta,
        max_backoff: int | timedelta,
        backoff_multiplier: float,
        reset_backoff_threshold: int | timedelta,
        jitter_factor: float,
    ) -> None:
        self._initial_ms = _ms(initial_backoff, "initial_backoff")
        self._max_ms = _ms(max_backoff, "max_backoff")
        self._multiplier = float(backoff_multiplier)
        self._reset_ms = _ms(reset_backoff_threshold, "reset_backoff_threshold")
        self._jitter = float(jitter_factor)
        if self._multiplier < 1:
            raise ValueError(f"backoff_multiplier must be >= 1, got {backoff_multiplier!r}")
        if not 0 <= self._jitter <= 1:
            raise ValueError(f"jitter_factor must be in [0, 1], got {jitter_factor!r}")

    def get_initial_backoff(self) -> timedelta:
        return timedelta(milliseconds=self._initial_ms)

    def get_max_backoff(self) -> timedelta:
        return timedelta(milliseconds=self._max_ms)

    def get_backoff_multiplier(self) -> float:
        return self._multiplier

    def get_reset_backoff_threshold(self) -> timedelta:
        return timedelta(milliseconds=self._reset_ms)

    def get_jitter_factor(self) -> float:
        return self._jitter

    def to_configuration(self) -> dict[str, FlinkValue]:
        return {
            _TYPE: "exponential-delay",
            "restart-strategy.exponential-delay.initial-backoff": f"{self._initial_ms} ms",
            "restart-strategy.exponential-delay.max-backoff": f"{self._max_ms} ms",
            "restart-strategy.exponential-delay.backoff-multiplier": self._multiplier,
            "restart-strategy.exponential-delay.reset-backoff-threshold": f"{self._reset_ms} ms",
            "restart-strategy.exponential-delay.jitter-factor": self._jitter,
        }

    def get_description(self) -> str:
        return (f"Restart with exponential delay: initial backoff {self._initial_ms} ms, max backoff {self._max_ms} "
                f"ms, multiplier {self._multiplier:g}.")


class RestartStrategies:
    """PyFlink's factory of restart strategy configurations."""

    NoRestartStrategyConfiguration: TypeAlias = NoRestartStrategyConfiguration
    FallbackRestartStrategyConfiguration: TypeAlias = FallbackRestartStrategyConfiguration
    FixedDelayRestartStrategyConfiguration: TypeAlias = FixedDelayRestartStrategyConfiguration
    FailureRateRestartStrategyConfiguration: TypeAlias = FailureRateRestartStrategyConfiguration
    ExponentialDelayRestartStrategyConfiguration: TypeAlias = ExponentialDelayRestartStrategyConfiguration

    @staticmethod
    def no_restart() -> NoRestartStrategyConfiguration:
        return NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> FallbackRestartStrategyConfiguration:
        return FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: int | timedelta
    ) -> FixedDelayRestartStrategyConfiguration:
        return FixedDelayRestartStrategyConfiguration(restart_attempts, delay_between_attempts)

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: int | timedelta, delay_interval: int | timedelta
    ) -> FailureRateRestartStrategyConfiguration:
        return FailureRateRestartStrategyConfiguration(failure_rate, failure_interval, delay_interval)

    @staticmethod
    def exponential_delay_restart(
        initial_backoff: int | timedelta,
        max_backoff: int | timedelta,
        backoff_multiplier: float,
        reset_backoff_threshold: int | timedelta,
        jitter_factor: float,
    ) -> ExponentialDelayRestartStrategyConfiguration:
        return ExponentialDelayRestartStrategyConfiguration(
            initial_backoff, max_backoff, backoff_multiplier, reset_backoff_threshold, jitter_factor
        )


def apply_restart_strategy(conf: Configuration, strategy: RestartStrategyConfiguration) -> None:
    """Replace the `restart-strategy.*` keys of `conf` (a Configuration) with `strategy`'s."""
    if not isinstance(strategy, RestartStrategyConfiguration):
        raise TypeError(
            f"set_restart_strategy expects a RestartStrategyConfiguration (from RestartStrategies), got {strategy!r}"
        )
    for key in [k for k in conf.keys() if k.startswith(_PREFIXES)]:
        conf.remove_config(key)
    for key, value in strategy.to_configuration().items():
        conf.set(key, value)


def restart_strategy_of(conf: Configuration) -> RestartStrategyConfiguration:
    """The strategy the configuration's `restart-strategy.*` keys describe (PyFlink's get_restart_strategy)."""
    raw = conf.get(_TYPE)
    if raw is None or not conf.contains_key(_TYPE):
        return FallbackRestartStrategyConfiguration()
    kind = str(raw).strip().lower().replace("_", "-")
    if kind in ("none", "off", "disable"):
        return NoRestartStrategyConfiguration()

    def dur(key: str, default: int) -> int:
        v = conf.get(key)
        return default if v is None else parse_duration_ms(v)

    if kind in ("fixed-delay", "fixeddelay"):
        return FixedDelayRestartStrategyConfiguration(
            int(conf.get("restart-strategy.fixed-delay.attempts") or 1), dur("restart-strategy.fixed-delay.delay", 1000)
        )
    if kind in ("failure-rate", "failurerate"):
        return FailureRateRestartStrategyConfiguration(
            int(conf.get("restart-strategy.failure-rate.max-failures-per-interval") or 1),
            dur("restart-strategy.failure-rate.failure-rate-interval", 60_000),
            dur("restart-strategy.failure-rate.delay", 1000),
        )
    return ExponentialDelayRestartStrategyConfiguration(
        dur("restart-strategy.exponential-delay.initial-backoff", 1000),
        dur("restart-strategy.exponential-delay.max-backoff", 60_000),
        float(conf.get("restart-strategy.exponential-delay.backoff-multiplier") or 2.0),
        dur("restart-strategy.exponential-delay.reset-backoff-threshold", 3_600_000),
        float(conf.get("restart-strategy.exponential-delay.jitter-factor") or 0.1),
    )
