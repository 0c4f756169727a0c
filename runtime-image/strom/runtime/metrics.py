"""Metric groups for user functions and tasks (Flink's MetricGroup, in memory).

The Prometheus exporter (distributed runtime issue) reads these; user code registers
counters, gauges, meters and distributions through `get_metrics_group()`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class Counter:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def dec(self, n: int = 1) -> None:
        self.count -= n

    def get_count(self) -> int:
        return self.count


class Meter:
    """Events per second over the last `time_span_in_seconds`."""

    def __init__(self, time_span_in_seconds: int = 60) -> None:
        self.span = time_span_in_seconds
        self.count = 0
        self._start = time.monotonic()

    def mark_event(self, value: int = 1) -> None:
        self.count += value

    def get_count(self) -> int:
        return self.count

    def get_rate(self) -> float:
        elapsed = max(1e-9, min(time.monotonic() - self._start, self.span))
        return self.count / elapsed


class Distribution:
    def __init__(self) -> None:
        self.values: list[float] = []

    def update(self, value: float) -> None:
        self.values.append(value)


class MetricGroup:
    def __init__(self, scope: tuple[str, ...] = (), variables: dict[str, str] | None = None) -> None:
        self.scope = scope
        self.variables = dict(variables or {})
        self.metrics: dict[str, Any] = {}
        self.groups: dict[str, MetricGroup] = {}
        self._lock = threading.Lock()

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        key = name if extra is None else f"{name}.{extra}"
        with self._lock:
            g = self.groups.get(key)
            if g is None:
                variables = dict(self.variables)
                if extra is not None:
                    variables[name] = extra
                g = self.groups[key] = MetricGroup(self.scope + (name,) + ((extra,) if extra else ()), variables)
            return g

    def counter(self, name: str) -> Counter:
        return self._register(name, Counter())

    def gauge(self, name: str, obj: Callable[[], Any]) -> Callable[[], Any]:
        return self._register(name, obj)

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._register(name, Meter(time_span_in_seconds))

    def distribution(self, name: str) -> Distribution:
        return self._register(name, Distribution())

    def _register(self, name: str, metric: Any) -> Any:
        with self._lock:
            existing = self.metrics.get(name)
            if existing is not None:
                return existing
            self.metrics[name] = metric
            return metric

    def get_metric_group_identifier(self) -> str:
        return ".".join(self.scope)
