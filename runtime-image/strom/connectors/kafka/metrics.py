"""Kafka connector metrics under Flink's names, registered in the operator's metric group.

Source (Flink's KafkaSourceReaderMetrics and FLIP-33 source metrics):
  operator group: `numRecordsIn`, `numBytesIn` (key + value bytes of the records read),
    `pendingRecords` (consumer lag), `currentFetchEventTimeLag` (fetch time - event time of the last
    record fetched, ms), `currentEmitEventTimeLag` (emit time - event time of the last record emitted, ms);
  `KafkaSourceReader` group: `commitsSucceeded`, `commitsFailed`;
  `KafkaSourceReader.topic.<t>.partition.<p>`: `currentOffset` (offset of the last record read, -1 before
    the first) and `committedOffset` (the offset last committed to the group on checkpoint completion,
    as Kafka acknowledged it; -1 before the first).
Sink (Flink's KafkaWriter): `numRecordsSend`, `numBytesSend`, `numRecordsSendErrors`, and FLIP-33's
  `numRecordsOut` / `numBytesOut` aliases of the first two.

The reader and writer bump plain counters per batch or per delivery report; gauges read values the
reader keeps anyway, so a scrape from another thread costs the reader nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Flink's KafkaSourceReaderMetrics.INITIAL_OFFSET: shown until a partition has an offset to report.
INITIAL_OFFSET = -1
UNDEFINED_LAG = -1


def operator_metric_group(runtime_context: Any) -> Any:
    """The operator's metric group from a RuntimeContext, or None (a reader built outside a task)."""
    get = getattr(runtime_context, "get_metrics_group", None)
    return get() if callable(get) else None


class KafkaSourceReaderMetrics:
    """The metrics of one Kafka source reader; `group` None registers nothing (values still kept)."""

    def __init__(self, group: Any, *, pending_records: Callable[[], int | None]) -> None:
        self.group = group
        self.fetch_lag_ms = UNDEFINED_LAG
        self.emit_lag_ms = UNDEFINED_LAG
        self.committed: dict[tuple[str, int], int] = {}
        self._partitions: set[tuple[str, int]] = set()
        if group is None:
            self.records_in = self.bytes_in = self.commits_succeeded = self.commits_failed = None
            self._reader_group = None
            return
        self.records_in = group.counter("numRecordsIn")
        self.bytes_in = group.counter("numBytesIn")
        group.gauge("pendingRecords", lambda: _or_undefined(pending_records()))
        group.gauge("currentFetchEventTimeLag", lambda: self.fetch_lag_ms)
        group.gauge("currentEmitEventTimeLag", lambda: self.emit_lag_ms)
        self._reader_group = group.add_group("KafkaSourceReader")
        self.commits_succeeded = self._reader_group.counter("commitsSucceeded")
        self.commits_failed = self._reader_group.counter("commitsFailed")

    def register_partition(self, topic: str, partition: int, current_offset: Callable[[], int]) -> None:
        """Per-partition gauges under KafkaSourceReader.topic.<t>.partition.<p> (once per partition)."""
        key = (topic, partition)
        if self._reader_group is None or key in self._partitions:
            return
        self._partitions.add(key)
        g = self._reader_group.add_group("topic", topic).add_group("partition", str(partition))
        g.gauge("currentOffset", current_offset)
        g.gauge("committedOffset", lambda: self.committed.get(key, INITIAL_OFFSET))

    def record_batch(self, *, records: int, nbytes: int, last_timestamp_ms: int | None, fetch_ms: int,
                     emit_ms: int) -> None:
        """After a poll: counts, and the event-time lags of its last record (Flink records the last one)."""
        if self.records_in is not None:
            self.records_in.inc(records)
            self.bytes_in.inc(nbytes)
        if last_timestamp_ms is not None and last_timestamp_ms >= 0:
            self.fetch_lag_ms = fetch_ms - last_timestamp_ms
            self.emit_lag_ms = emit_ms - last_timestamp_ms

    def record_commit(self, err: Any, partitions: list[Any]) -> None:
        """confluent-kafka's on_commit callback: the offsets Kafka acknowledged (or the failure)."""
        if err is not None or any(tp.error is not None for tp in partitions):
            if self.commits_failed is not None:
                self.commits_failed.inc()
            return
        for tp in partitions:
            if tp.offset >= 0:
                self.committed[(tp.topic, tp.partition)] = tp.offset
        if self.commits_succeeded is not None:
            self.commits_succeeded.inc()


def _or_undefined(value: int | None) -> int:
    return UNDEFINED_LAG if value is None else value


class KafkaWriterMetrics:
    """The metrics of one Kafka sink writer (Flink's KafkaWriter names); `group` None keeps plain counts."""

    def __init__(self, group: Any) -> None:
        if group is None:
            self._sent = self._bytes = self._errors = self._out = self._bytes_out = None
            return
        self._sent = group.counter("numRecordsSend")
        self._bytes = group.counter("numBytesSend")
        self._errors = group.counter("numRecordsSendErrors")
        # FLIP-33's sink names for the same figures (Flink's SinkWriterMetricGroup)
        self._out = group.counter("numRecordsOut")
        self._bytes_out = group.counter("numBytesOut")

    def record_sent(self, records: int, nbytes: int) -> None:
        if self._sent is not None:
            self._sent.inc(records)
            self._bytes.inc(nbytes)
            self._out.inc(records)
            self._bytes_out.inc(nbytes)

    def record_error(self, records: int = 1) -> None:
        if self._errors is not None:
            self._errors.inc(records)
