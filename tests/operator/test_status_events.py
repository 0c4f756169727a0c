"""The Events a status write posts: one per change a user should see, never two for one change.

The reconciler's `_write_status` is driven with statuses as the lifecycles write them and a fake API
that records the status patch; the expected Events are listed by hand.
"""

from __future__ import annotations

import asyncio
from typing import Any

from strom_operator.batch.batch_lifecycle import next_batch_step
from strom_operator.batch.batch_steps import CreateDriver
from strom_operator.batch.observed_driver import ObservedBatch
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.observe.observed import ObservedJob
from strom_operator.reconcile.reconciler import Reconciler

from tests.operator.fakes import T0, make_spec


class StatusOnlyApi:
    """Takes status patches; anything else the reconciler might ask is a test failure."""

    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []

    async def merge_patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any], *,
                          subresource: str | None = None) -> dict[str, Any]:
        assert (kind, subresource) == ("FlinkJob", "status")
        self.patches.append(patch)
        return {}


def written_events(body: dict[str, Any], before: FlinkJobStatus, after: FlinkJobStatus) -> list[tuple[str, str, str]]:
    events: list[tuple[str, str, str]] = []
    api: Any = StatusOnlyApi()
    reconciler = Reconciler(api, client=None, observer=None,  # type: ignore[arg-type]
                            post_event=lambda _body, type_, reason, message: events.append((type_, reason, message)))
    asyncio.run(reconciler._write_status(body, before, after, T0))
    assert len(api.patches) == 1
    return events


def body(mode: str = "streaming") -> dict[str, Any]:
    return {"metadata": {"name": "count", "namespace": "jobs", "uid": "u-1", "generation": 1},
            "spec": {"mode": mode}}


def test_a_batch_submission_posts_one_submitted_event():
    spec = FlinkJobSpec.from_dict({"image": "strom/runtime:test", "mode": "batch",
                                   "job": {"entry": "/opt/jobs/count.py"}})
    step = next_batch_step(spec, FlinkJobStatus(), ObservedBatch(None), now=T0, name="count", namespace="jobs",
                           generation=1)
    assert isinstance(step, CreateDriver)
    # both Ready and Progressing say Submitted: one change, one Event
    assert {c.reason for c in step.status.conditions if c.type in ("Ready", "Progressing")} == {"Submitted"}
    events = written_events(body("batch"), FlinkJobStatus(), step.status)
    assert [(t, r) for t, r, _ in events if r == "Submitted"] == [("Normal", "Submitted")]
    assert [r for _, r, _ in events] == ["Submitted", "LifecycleState"]


def test_a_first_deployment_posts_deploying_once_though_ready_says_it_too():
    step = next_step(make_spec(), FlinkJobStatus(), ObservedJob(), now=T0, generation=1)
    events = written_events(body(), FlinkJobStatus(), step.status)
    assert events == [("Normal", "Deploying", "Progressing=True: first deployment"),
                      ("Normal", "LifecycleState", "(new) -> CREATED")]


def test_different_reasons_in_one_write_are_each_posted():
    before = FlinkJobStatus(lifecycle_state="DEPLOYED").with_condition(
        "Progressing", "True", "Deployed", "waiting for the job to reach RUNNING", T0)
    after = before.with_condition("Ready", "True", "JobRunning", "the job is RUNNING", T0).with_condition(
        "Progressing", "False", "Stable", "the job is RUNNING", T0)
    events = written_events(body(), before, after)
    assert [r for _, r, _ in events] == ["JobRunning", "Stable"]
