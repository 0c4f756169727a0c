"""`env.set_restart_strategy(RestartStrategies....)` configures the job's restart strategy (issue 18).

PyFlink documents `fixed_delay_restart(restart_attempts, delay_between_attempts)`: "Generates a
FixedDelayRestartStrategyConfiguration. :param restart_attempts: Number of restart attempts for
the FixedDelayRestartStrategy. :param delay_between_attempts: Delay in-between restart attempts
for the FixedDelayRestartStrategy, the input could be integer value in milliseconds or
datetime.timedelta object." and `no_restart()`: "Generates NoRestartStrategyConfiguration."
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from strom.common import Types
from strom.common.restart_strategy import RestartStrategies
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import MapFunction, RuntimeContext


class FailingUntilAttempt(MapFunction):
    """Fails in open() until the subtask runs as attempt `succeed_at` (0 = the first run), so nothing is emitted
    by a failed attempt; then squares its input."""

    def __init__(self, succeed_at: int) -> None:
        self.succeed_at = succeed_at

    def open(self, runtime_context: RuntimeContext) -> None:
        if runtime_context.get_attempt_number() < self.succeed_at:
            raise RuntimeError(f"planned failure of attempt {runtime_context.get_attempt_number()}")

    def map(self, value: Any) -> Any:
        return value * value


def _job(strategy: Any, succeed_at: int) -> list[int]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_restart_strategy(strategy)
    ds = env.from_collection(list(range(20)), Types.INT()).map(FailingUntilAttempt(succeed_at), Types.INT())
    return sorted(ds.execute_and_collect())


def test_fixed_delay_restarts_a_failing_job_until_it_succeeds() -> None:
    """Two failures, three attempts allowed: the third attempt's output is the plain-Python result."""
    assert _job(RestartStrategies.fixed_delay_restart(3, 10), succeed_at=2) == sorted(v * v for v in range(20))


def test_fixed_delay_gives_up_after_its_attempts() -> None:
    with pytest.raises(Exception, match="planned failure of attempt 1"):  # noqa: PT011 - the job's failure
        _job(RestartStrategies.fixed_delay_restart(1, timedelta(milliseconds=10)), succeed_at=2)


def test_no_restart_fails_the_job_at_the_first_failure() -> None:
    with pytest.raises(Exception, match="planned failure of attempt 0"):  # noqa: PT011
        _job(RestartStrategies.no_restart(), succeed_at=1)


def test_strategies_read_back_and_write_flinks_keys() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_restart_strategy(RestartStrategies.failure_rate_restart(3, timedelta(minutes=5), timedelta(seconds=10)))
    got = env.get_restart_strategy()
    assert (got.get_max_failure_rate(), got.get_failure_interval(), got.get_delay_between_attempts_interval()) == (
        3, timedelta(minutes=5), timedelta(seconds=10)
    )
    conf = env.get_configuration()
    assert conf.get("restart-strategy.failure-rate.max-failures-per-interval") == 3
    env.get_config().set_restart_strategy(RestartStrategies.fixed_delay_restart(4, 250))
    assert env.get_restart_strategy() == RestartStrategies.fixed_delay_restart(4, 250)
    assert conf.get("restart-strategy.failure-rate.max-failures-per-interval") is None  # replaced, not merged
    assert env.get_config().get_restart_strategy().get_restart_attempts() == 4


def test_bad_strategies_are_refused() -> None:
    with pytest.raises(ValueError, match="restart_attempts"):
        RestartStrategies.fixed_delay_restart(-1, 10)
    with pytest.raises(ValueError, match="delay_between_attempts_interval"):
        RestartStrategies.fixed_delay_restart(1, "10 s")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="RestartStrategyConfiguration"):
        StreamExecutionEnvironment.get_execution_environment().set_restart_strategy("fixed-delay")  # type: ignore[arg-type]
