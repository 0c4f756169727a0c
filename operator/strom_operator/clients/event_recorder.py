"""The FlinkJobs' Events, aggregated as the kubelet's are: one Event per (object, type, reason, message).

The first occurrence creates a core/v1 Event (`count: 1`, `firstTimestamp`, `lastTimestamp`); a
repeat patches that Event's `count` and `lastTimestamp` instead of creating another one (what
client-go's EventCorrelator does for the kubelet), so a failure retried every few seconds is one
line in `kubectl describe` with "x17 over 85s", not 17. `EventSeries` decides (pure); the
recorder sends, from one background task, so posting never blocks or fails a reconciliation.
RBAC: events `create` and `patch`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from strom_operator.clients.kube_api import KubeApi, KubeApiError
from strom_operator.crd.status import format_time

log = logging.getLogger(__name__)

COMPONENT = "strom-operator"
MAX_MESSAGE = 1000
SERIES_KEPT = 4096  # client-go's cache size: the least recently seen series are forgotten first


@dataclass(frozen=True, slots=True)
class EventKey:
    namespace: str
    involved: str  # the involved object's uid, or its name when it has none
    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class EventWrite:
    """Create the Event `name` (count 1), or patch its count and lastTimestamp."""

    name: str
    create: bool
    count: int
    first: datetime
    last: datetime


@dataclass(slots=True)
class _Series:
    name: str
    count: int
    first: datetime


class EventSeries:
    """Which Event an occurrence goes to, and its count."""

    def __init__(self, *, capacity: int = SERIES_KEPT) -> None:
        self._series: OrderedDict[EventKey, _Series] = OrderedDict()
        self._capacity = capacity

    def record(self, key: EventKey, involved_name: str, now: datetime) -> EventWrite:
        series = self._series.get(key)
        if series is None:
            # client-go's naming: <object>.<unix nanoseconds in hex>, unique per occurrence series
            name = f"{involved_name}.{time.time_ns():x}"
            series = self._series[key] = _Series(name, 0, now)
        self._series.move_to_end(key)
        while len(self._series) > self._capacity:
            self._series.popitem(last=False)
        series.count += 1
        return EventWrite(series.name, series.count == 1, series.count, series.first, now)


def event_body(involved: Mapping[str, Any], key: EventKey, write: EventWrite, *, host: str) -> dict[str, Any]:
    """A core/v1 Event as the kubelet writes them (legacy fields: no eventTime/series)."""
    meta = involved.get("metadata") or {}
    ref = {"apiVersion": involved.get("apiVersion", ""), "kind": involved.get("kind", ""),
           "name": meta.get("name", ""), "namespace": key.namespace}
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": write.name, "namespace": key.namespace},
        "involvedObject": ref,
        "type": key.type, "reason": key.reason, "message": key.message,
        "count": write.count,
        "firstTimestamp": format_time(write.first), "lastTimestamp": format_time(write.last),
        "source": {"component": COMPONENT, "host": host},
    }


def _key(body: Mapping[str, Any], type_: str, reason: str, message: str) -> EventKey:
    meta = body.get("metadata") or {}
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE - 3] + "..."
    return EventKey(meta.get("namespace") or "default", meta.get("uid") or meta.get("name", ""), type_, reason,
                    message)


class EventRecorder:
    """`post(body, type, reason, message)`: the reconciler's EventPoster, aggregated (see the module)."""

    def __init__(self, kube: KubeApi, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 host: str | None = None) -> None:
        self.kube = kube
        self.series = EventSeries()
        self._clock = clock
        self._host = host or os.environ.get("HOSTNAME") or socket.gethostname()
        self._queue: asyncio.Queue[tuple[Mapping[str, Any], EventKey, datetime]] | None = None
        self._worker: asyncio.Task[None] | None = None

    def post(self, body: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._send_all())
        self._queue.put_nowait((body, _key(body, type_, reason, message), self._clock()))

    async def flush(self) -> None:
        """Until every Event posted so far is sent (or failed)."""
        if self._queue is not None and self._worker is not None and not self._worker.done():
            await self._queue.join()

    async def close(self) -> None:
        await self.flush()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None

    async def _send_all(self) -> None:
        assert self._queue is not None
        while True:
            body, key, now = await self._queue.get()
            try:
                await self._send(body, key, now)
            except KubeApiError as e:  # Events are for people: never a reason to fail a reconciliation
                log.warning("event %s %s not posted: %s", key.type, key.reason, e)
            except Exception:  # noqa: BLE001 - the worker must outlive any one Event
                log.exception("event %s %s not posted", key.type, key.reason)
            finally:
                self._queue.task_done()

    async def _send(self, body: Mapping[str, Any], key: EventKey, now: datetime) -> None:
        write = self.series.record(key, (body.get("metadata") or {}).get("name", ""), now)
        if not write.create:
            try:
                await self.kube.merge_patch("Event", key.namespace, write.name,
                                            {"count": write.count, "lastTimestamp": format_time(write.last)})
                return
            except KubeApiError as e:
                if e.status != 404:  # gone: the server expires Events after an hour; the series goes on
                    raise
        try:
            await self.kube.create(event_body(body, key, write, host=self._host))
        except KubeApiError as e:
            if e.status != 409:  # created by an earlier attempt whose answer was lost
                raise
