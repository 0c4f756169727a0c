"""Restart strategies (Flink's `restart-strategy.*`): whether and when a failed job restarts.

Pure decisions over a failure history and a clock, so the job master only asks
`next_restart_delay(now)` and acts on the answer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from strom.common.config_options import parse_duration_ms


@dataclass(slots=True)
class RestartStrategy:
    """`kind`: none | fixed-delay | failure-rate | exponential-delay."""

    kind: str
    attempts: int = 0
    delay_ms: int = 1000
    # failure-rate
    max_failures_per_interval: int = 1
    failure_interval_ms: int = 60_000
    # exponential-delay
    initial_backoff_ms: int = 1000
    max_backoff_ms: int = 60_000
    multiplier: float = 2.0
    reset_threshold_ms: int = 3_600_000
    jitter: float = 0.0
    restarts: int = 0
    _failures: deque[int] = field(default_factory=deque)
    _current_backoff_ms: int = 0
    _last_failure_ms: int | None = None

    def describe(self) -> str:
        """The strategy in words, as Flink's /jobs/:jobid/config shows it."""
        if self.kind == "fixed-delay":
            return f"Restart with fixed delay ({self.delay_ms} ms). #{self.attempts} restart attempts."
        if self.kind == "failure-rate":
            return (f"Failure rate restart with maximum of {self.max_failures_per_interval} failures within interval "
                    f"{self.failure_interval_ms} ms and fixed delay {self.delay_ms} ms.")
        if self.kind == "exponential-delay":
            limit = f" #{self.attempts} restart attempts." if self.attempts else ""
            return (f"Restart with exponential delay: initial backoff {self.initial_backoff_ms} ms, max backoff "
                    f"{self.max_backoff_ms} ms, multiplier {self.multiplier:g}.{limit}")
        return "Restart deactivated."

    def next_restart_delay(self, now_ms: int) -> int | None:
        """Delay before restarting after a failure at `now_ms`, or None to fail the job."""
        if self.kind == "none":
            return None
        if self.kind == "fixed-delay":
            if self.restarts >= self.attempts:
                return None
            self.restarts += 1
            return self.delay_ms
        if self.kind == "failure-rate":
            self._failures.append(now_ms)
            while self._failures and self._failures[0] <= now_ms - self.failure_interval_ms:
                self._failures.popleft()
            if len(self._failures) > self.max_failures_per_interval:
                return None
            self.restarts += 1
            return self.delay_ms
        # exponential-delay: back off, reset after a quiet period
        if self._last_failure_ms is not None and now_ms - self._last_failure_ms >= self.reset_threshold_ms:
            self._current_backoff_ms = 0
        self._last_failure_ms = now_ms
        if self._current_backoff_ms == 0:
            self._current_backoff_ms = self.initial_backoff_ms
        else:
            self._current_backoff_ms = min(int(self._current_backoff_ms * self.multiplier), self.max_backoff_ms)
        if self.attempts and self.restarts >= self.attempts:
            return None
        self.restarts += 1
        return self._current_backoff_ms


def restart_strategy_from(config: Any) -> RestartStrategy:
    """Flink's keys. Without an explicit type: none (checkpointing off), as in Flink; with
    checkpointing on, Flink's default is fixed-delay with Integer.MAX_VALUE attempts."""
    raw = config.get("restart-strategy.type")
    kind = str(raw).strip().lower().replace("_", "-") if raw is not None else "none"
    kind = {
        "disable": "none",
        "off": "none",
        "fixeddelay": "fixed-delay",
        "failurerate": "failure-rate",
        "exponentialdelay": "exponential-delay",
    }.get(kind, kind)
    checkpointing = (config.get("execution.checkpointing.interval") or 0) > 0
    if raw is None or (kind == "none" and not config.contains_key("restart-strategy.type")):
        kind = "fixed-delay" if checkpointing else "none"
        if checkpointing:
            return RestartStrategy("fixed-delay", attempts=2**31 - 1, delay_ms=1000)

    def dur(key: str, default: int) -> int:
        v = config.get(key)
        return default if v is None else parse_duration_ms(v)

    def num(key: str, default: float) -> float:
        v = config.get(key)
        return default if v is None else float(v)

    if kind == "fixed-delay":
        return RestartStrategy(
            kind,
            attempts=int(num("restart-strategy.fixed-delay.attempts", 1)),
            delay_ms=dur("restart-strategy.fixed-delay.delay", 1000),
        )
    if kind == "failure-rate":
        return RestartStrategy(
            kind,
            max_failures_per_interval=int(num("restart-strategy.failure-rate.max-failures-per-interval", 1)),
            failure_interval_ms=dur("restart-strategy.failure-rate.failure-rate-interval", 60_000),
            delay_ms=dur("restart-strategy.failure-rate.delay", 1000),
        )
    if kind == "exponential-delay":
        return RestartStrategy(
            kind,
            initial_backoff_ms=dur("restart-strategy.exponential-delay.initial-backoff", 1000),
            max_backoff_ms=dur("restart-strategy.exponential-delay.max-backoff", 60_000),
            multiplier=num("restart-strategy.exponential-delay.backoff-multiplier", 2.0),
            reset_threshold_ms=dur("restart-strategy.exponential-delay.reset-backoff-threshold", 3_600_000),
            attempts=int(num("restart-strategy.exponential-delay.attempts-before-reset-backoff", 0)),
        )
    return RestartStrategy("none")
