"""Metric groups and the metric types user functions register (Flink's MetricGroup, in memory).

`get_runtime_context().get_metrics_group()` hands a user function its operator's group; the
function registers counters, gauges, meters, histograms and distributions, and updates them
from its own thread. Readers (the registry's snapshot) only read them. `RateView` is the
sliding-window rate that both meters and the task I/O rates use (Flink's MeterView).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Flink's DescriptiveStatisticsHistogram reports these quantiles.
QUANTILES: tuple[float, ...] = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)


class RateView:
    """Rate per second of a growing total over the last `span_s` seconds (Flink's MeterView).

    Samples of the total are kept at most every span/12 (Flink: 5 s of 60 s) when the rate is
    read; the window runs from the newest sample at least `span_s` old to now, so it covers
    between span and span + span/12 seconds once warmed up, and everything since `start` before.
    Pure arithmetic over the times it is given; the caller serializes readers.
    """

    __slots__ = ("span_s", "granularity_s", "_samples")

    def __init__(self, span_s: float, start: float, start_total: float = 0.0) -> None:
        if span_s <= 0:
            raise ValueError(f"rate time span must be positive seconds, got {span_s!r}")
        self.span_s = span_s
        self.granularity_s = span_s / 12
        self._samples: deque[tuple[float, float]] = deque([(start, start_total)])

    def rate(self, now: float, total: float) -> float:
        samples = self._samples
        if now - samples[-1][0] >= self.granularity_s:
            samples.append((now, total))
        horizon = now - self.span_s
        while len(samples) >= 2 and samples[1][0] <= horizon:
            samples.popleft()
        t0, v0 = samples[0]
        dt = now - t0
        return (total - v0) / dt if dt > 0 else 0.0


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


class Gauge:
    """A value read on demand from a user callable. Calling the gauge reads it, so code that kept
    the callable returned by `MetricGroup.gauge` before gauges had a type still works."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"a gauge needs a callable returning a number, got {fn!r}")
        self._fn = fn

    def get_value(self) -> Any:
        return self._fn()

    def __call__(self) -> Any:
        return self._fn()


class Meter:
    """Events and their rate per second over the last `time_span_in_seconds` (Flink's MeterView)."""

    def __init__(self, time_span_in_seconds: float = 60, clock: Callable[[], float] = time.monotonic) -> None:
        self.span = time_span_in_seconds
        self.count = 0
        self._clock = clock
        self._view = RateView(time_span_in_seconds, clock())
        self._lock = threading.Lock()  # readers only: several scrapes may read at once

    def mark_event(self, value: int = 1) -> None:
        self.count += value

    def get_count(self) -> int:
        return self.count

    def get_rate(self) -> float:
        with self._lock:
            return self._view.rate(self._clock(), self.count)


@dataclass(frozen=True, slots=True)
class HistogramStatistics:
    """Flink's HistogramStatistics: `count` and `sum` over all values, the rest over the window."""

    count: int
    sum: float
    min: float
    max: float
    mean: float
    stddev: float
    quantiles: tuple[tuple[float, float], ...]

    def get_quantile(self, q: float) -> float:
        for k, v in self.quantiles:
            if k == q:
                return v
        if not self.quantiles:
            return math.nan
        raise ValueError(f"quantile {q} is not computed; available: {', '.join(str(k) for k, _ in self.quantiles)}")


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (what Flink's DescriptiveStatistics does)."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    pos = q * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Histogram:
    """Distribution of values over the last `window_size` updates (Flink's
    DescriptiveStatisticsHistogram): min, max, mean, stddev and quantiles over the window;
    count and sum over every value seen. Memory is bounded by the window."""

    def __init__(self, window_size: int = 1024) -> None:
        if window_size < 1:
            raise ValueError(f"histogram window size must be >= 1, got {window_size!r}")
        self._window: deque[float] = deque(maxlen=window_size)
        self.count = 0
        self.sum = 0.0

    def update(self, value: float) -> None:
        self._window.append(value)
        self.count += 1
        self.sum += value

    def get_count(self) -> int:
        return self.count

    def get_statistics(self) -> HistogramStatistics:
        values = sorted(list(self._window))  # list() first: the owner may append meanwhile
        if not values:
            return HistogramStatistics(self.count, self.sum, math.nan, math.nan, math.nan, math.nan, ())
        n = len(values)
        mean = sum(values) / n
        stddev = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
        quantiles = tuple((q, _quantile(values, q)) for q in QUANTILES)
        return HistogramStatistics(self.count, self.sum, values[0], values[-1], mean, stddev, quantiles)


class Distribution(Histogram):
    """PyFlink's distribution: count, sum, min, max and mean over every value seen, plus the
    window statistics of a Histogram (quantiles, stddev) over the recent values."""

    def __init__(self, window_size: int = 1024) -> None:
        super().__init__(window_size)
        self.min = math.inf
        self.max = -math.inf

    def update(self, value: float) -> None:
        super().update(value)
        if value < self.min:
            self.min = value
        if value > self.max:
            self.max = value

    def get_statistics(self) -> HistogramStatistics:
        s = Histogram.get_statistics(self)
        if not self.count:
            return s
        return HistogramStatistics(
            s.count, s.sum, self.min, self.max, self.sum / self.count, s.stddev, s.quantiles
        )


Metric = Counter | Gauge | Meter | Histogram


class MetricGroup:
    """A named scope of metrics. `add_group(name)` nests a scope; `add_group(key, value)` nests a
    key/value scope whose key becomes a label (Flink's user variables)."""

    def __init__(
        self,
        scope: tuple[str, ...] = (),
        variables: dict[str, str] | None = None,
        *,
        name: str = "",
        value: str | None = None,
    ) -> None:
        self.scope = scope
        self.variables = dict(variables or {})
        self.name = name
        self.value = value
        self.metrics: dict[str, Metric] = {}
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
                scope = self.scope + (name,) + ((extra,) if extra is not None else ())
                g = self.groups[key] = MetricGroup(scope, variables, name=name, value=extra)
            return g

    def counter(self, name: str) -> Counter:
        return self._register(name, Counter())

    def gauge(self, name: str, obj: Callable[[], Any]) -> Gauge:
        return self._register(name, Gauge(obj))

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._register(name, Meter(time_span_in_seconds))

    def histogram(self, name: str, histogram: Histogram | None = None) -> Histogram:
        return self._register(name, histogram if histogram is not None else Histogram())

    def distribution(self, name: str) -> Distribution:
        return self._register(name, Distribution())

    def _register(self, name: str, metric: Any) -> Any:
        with self._lock:
            existing = self.metrics.get(name)
            if existing is not None:
                return existing
            self.metrics[name] = metric
            return metric

    def child_groups(self) -> list[MetricGroup]:
        with self._lock:
            return list(self.groups.values())

    def registered_metrics(self) -> list[tuple[str, Metric]]:
        with self._lock:
            return list(self.metrics.items())

    def get_metric_group_identifier(self) -> str:
        return ".".join(self.scope)
