"""Events aggregated as the kubelet's: a repeat bumps count and lastTimestamp of the same Event."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from strom_operator.clients.event_recorder import EventRecorder
from strom_operator.clients.kube_api import KubeApiError

from tests.operator.fakes import T0

BODY = {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
        "metadata": {"name": "wc", "namespace": "streams", "uid": "uid-1", "resourceVersion": "7"}}


class FakeEvents:
    """The Events API: create (409 on a taken name), merge patch (404 when gone)."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        self.calls.append("create")
        if name in self.events:
            raise KubeApiError("POST", "/api/v1/namespaces/streams/events", 409, "AlreadyExists", name)
        self.events[name] = obj
        return obj

    async def merge_patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("patch")
        if name not in self.events:
            raise KubeApiError("PATCH", f"/api/v1/namespaces/{namespace}/events/{name}", 404, "NotFound", name)
        self.events[name].update(patch)
        return self.events[name]


def _post_all(posts: list[tuple[str, str, str]], kube: FakeEvents, times: list[datetime]) -> None:
    clock = iter(times)
    recorder = EventRecorder(kube, clock=lambda: next(clock), host="node-1")  # type: ignore[arg-type]

    async def run() -> None:
        for type_, reason, message in posts:
            recorder.post(BODY, type_, reason, message)
        await recorder.close()

    asyncio.run(run())


def test_seventeen_identical_warnings_are_one_event_counted_seventeen_times() -> None:
    kube = FakeEvents()
    times = [T0 + timedelta(seconds=5 * i) for i in range(17)]
    _post_all([("Warning", "S3Unreachable", "deploying the job: connection refused")] * 17, kube, times)
    assert kube.calls == ["create"] + ["patch"] * 16
    (event,) = kube.events.values()
    assert (event["count"], event["firstTimestamp"], event["lastTimestamp"]) == (
        17, "2024-05-01T12:00:00Z", "2024-05-01T12:01:20Z")
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning", "S3Unreachable", "deploying the job: connection refused")
    assert event["involvedObject"] == {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob", "name": "wc",
                                       "namespace": "streams", "uid": "uid-1", "resourceVersion": "7"}
    assert event["metadata"]["namespace"] == "streams" and event["metadata"]["name"].startswith("wc.")
    assert event["source"] == {"component": "strom-operator", "host": "node-1"}


def test_another_reason_or_message_is_another_event() -> None:
    kube = FakeEvents()
    posts = [("Warning", "Forbidden", "a"), ("Warning", "Forbidden", "b"), ("Warning", "Invalid", "a"),
             ("Normal", "Forbidden", "a"), ("Warning", "Forbidden", "a")]
    _post_all(posts, kube, [T0] * len(posts))
    assert sorted((e["type"], e["reason"], e["message"], e["count"]) for e in kube.events.values()) == [
        ("Normal", "Forbidden", "a", 1), ("Warning", "Forbidden", "a", 2), ("Warning", "Forbidden", "b", 1),
        ("Warning", "Invalid", "a", 1)]


def test_an_expired_event_is_created_again_and_the_count_goes_on() -> None:
    kube = FakeEvents()
    recorder = EventRecorder(kube, clock=lambda: T0, host="h")  # type: ignore[arg-type]

    async def run() -> None:
        recorder.post(BODY, "Warning", "Forbidden", "m")
        await recorder.flush()
        kube.events.clear()  # the API server's event TTL (1 h) passed
        recorder.post(BODY, "Warning", "Forbidden", "m")
        await recorder.close()

    asyncio.run(run())
    assert kube.calls == ["create", "patch", "create"]
    assert [e["count"] for e in kube.events.values()] == [2]


def test_a_refused_event_is_logged_and_the_next_ones_still_go() -> None:
    class Refusing(FakeEvents):
        async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
            if obj["reason"] == "First":
                raise KubeApiError("POST", "/api/v1/namespaces/streams/events", 403, "Forbidden", "no")
            return await super().create(obj)

    kube = Refusing()
    _post_all([("Warning", "First", "m"), ("Normal", "Second", "m")], kube, [T0, T0])
    assert [e["reason"] for e in kube.events.values()] == ["Second"]
