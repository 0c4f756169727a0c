"""Restart strategies decide as Flink's do (pure, with a controlled clock)."""

from strom.common.configuration import Configuration
from strom.runtime.jobmanager.restart_strategies import restart_strategy_from


def test_no_strategy_and_no_checkpointing_means_no_restart():
    assert restart_strategy_from(Configuration()).next_restart_delay(0) is None


def test_checkpointing_without_strategy_restarts_with_fixed_delay_like_flink():
    s = restart_strategy_from(Configuration({"execution.checkpointing.interval": "10 s"}))
    assert s.kind == "fixed-delay" and s.next_restart_delay(0) == 1000


def test_fixed_delay_allows_the_configured_attempts():
    s = restart_strategy_from(
        Configuration(
            {
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": 2,
                "restart-strategy.fixed-delay.delay": "250 ms",
            }
        )
    )
    assert [s.next_restart_delay(t) for t in (0, 1, 2)] == [250, 250, None]


def test_failure_rate_counts_failures_in_the_interval():
    s = restart_strategy_from(
        Configuration(
            {
                "restart-strategy.type": "failure-rate",
                "restart-strategy.failure-rate.max-failures-per-interval": 2,
                "restart-strategy.failure-rate.failure-rate-interval": "10 s",
                "restart-strategy.failure-rate.delay": "1 s",
            }
        )
    )
    assert s.next_restart_delay(0) == 1000
    assert s.next_restart_delay(1_000) == 1000
    assert s.next_restart_delay(2_000) is None  # third failure within 10 s
    s2 = restart_strategy_from(
        Configuration(
            {
                "restart-strategy.type": "failure-rate",
                "restart-strategy.failure-rate.max-failures-per-interval": 2,
                "restart-strategy.failure-rate.failure-rate-interval": "10 s",
            }
        )
    )
    assert [s2.next_restart_delay(t) for t in (0, 5_000, 20_000, 25_000)] == [1000, 1000, 1000, 1000]


def test_exponential_delay_backs_off_to_the_maximum_and_resets_after_quiet_period():
    s = restart_strategy_from(
        Configuration(
            {
                "restart-strategy.type": "exponential-delay",
                "restart-strategy.exponential-delay.initial-backoff": "100 ms",
                "restart-strategy.exponential-delay.max-backoff": "1 s",
                "restart-strategy.exponential-delay.backoff-multiplier": 2.0,
                "restart-strategy.exponential-delay.reset-backoff-threshold": "1 min",
            }
        )
    )
    delays = [s.next_restart_delay(t) for t in (0, 10, 20, 30, 40, 50)]
    assert delays == [100, 200, 400, 800, 1000, 1000]
    assert s.next_restart_delay(50 + 60_000) == 100
