"""Status fields derived before each write: kstatus' Reconciling/Stalled and the scale selector.

Expected values are worked by hand from kstatus' rules (Reconciling: the controller works towards the
spec; Stalled: it cannot get there without the user; never both) and from the labels the
TaskManager Deployment selects by (the selector must select exactly the pods the builder labels).
"""

from __future__ import annotations

from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.observe.derived_status import with_derived_fields
from strom_operator.observe.observed import ObservedJob
from strom_operator.resources.labels import FlinkJobRef
from strom_operator.resources.taskmanager_deployment import build_taskmanager_deployment

from tests.operator.fakes import T0, deploy_stable, make_spec

REF = FlinkJobRef("ns", "orders", "uid-1")


def conditions(status: FlinkJobStatus) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions}


def matches(selector: str, labels: dict[str, str]) -> bool:
    """A `kubectl get -l` equality selector against a pod's labels."""
    return all(labels.get(k) == v for k, v in (term.split("=", 1) for term in selector.split(",")))


def test_a_stable_running_job_is_neither_reconciling_nor_stalled_and_selects_its_taskmanagers():
    _, status, _ = deploy_stable()
    derived = with_derived_fields(status, REF, batch=False, now=T0)
    assert conditions(derived)["Reconciling"] == ("False", "Reconciled")
    assert conditions(derived)["Stalled"] == ("False", "Reconciled")
    template_labels = build_taskmanager_deployment(REF, make_spec())["spec"]["template"]["metadata"]["labels"]
    assert matches(derived.selector, template_labels)
    jobmanager_labels = dict(template_labels, **{"app.kubernetes.io/component": "jobmanager"})
    assert not matches(derived.selector, jobmanager_labels)  # the scale target counts TaskManagers only
    assert derived.to_dict()["selector"] == derived.selector


def test_a_first_deployment_is_reconciling():
    step = next_step(make_spec(), FlinkJobStatus(), ObservedJob(), now=T0, generation=1)
    derived = with_derived_fields(step.status, REF, batch=False, now=T0)
    assert conditions(derived)["Reconciling"][0] == "True"
    assert conditions(derived)["Stalled"][0] == "False"


def test_an_invalid_spec_is_stalled_and_its_generation_observed():
    step = next_step(make_spec(taskManager__slots=0), FlinkJobStatus(), ObservedJob(), now=T0, generation=3)
    assert step.status.observed_generation == 3  # Flux compares generations before it reads Stalled
    derived = with_derived_fields(step.status, REF, batch=False, now=T0)
    assert conditions(derived)["Stalled"] == ("True", "InvalidSpec")
    assert conditions(derived)["Reconciling"][0] == "False"


def test_batch_flinkjobs_have_no_taskmanager_selector():
    assert with_derived_fields(FlinkJobStatus(), REF, batch=True, now=T0).selector is None


def test_deriving_twice_changes_nothing():
    _, status, _ = deploy_stable()
    once = with_derived_fields(status, REF, batch=False, now=T0)
    assert with_derived_fields(once, REF, batch=False, now=T0) == once


def test_a_first_deployment_has_ready_false_from_its_first_status_write():
    step = next_step(make_spec(), FlinkJobStatus(), ObservedJob(), now=T0, generation=1)
    assert step.status.condition("Ready") is None  # the lifecycle does not know yet ...
    derived = with_derived_fields(step.status, REF, batch=False, now=T0)
    ready = derived.condition("Ready")  # ... what is written says it is not ready, and why
    assert (ready.status, ready.reason, ready.message) == ("False", "Deploying", "first deployment")


def test_the_derived_ready_follows_progressing_and_yields_to_the_lifecycles_and_to_failures():
    from strom_operator.clients.action_failures import ActionFailure, with_failure, without_failure

    first = with_derived_fields(FlinkJobStatus(lifecycle_state="DEPLOYED").with_condition(
        "Progressing", "True", "Deployed", "waiting for the job to reach RUNNING", T0), REF, batch=False, now=T0)
    assert conditions(first)["Ready"] == ("False", "Deploying")
    assert first.condition("Ready").message == "waiting for the job to reach RUNNING"
    timed_out = with_derived_fields(first.with_condition("Progressing", "False", "DeploymentTimeout", "not RUNNING",
                                                         T0), REF, batch=False, now=T0)
    assert (conditions(timed_out)["Ready"], timed_out.condition("Ready").message) == (("False", "NotReady"),
                                                                                      "not RUNNING")
    refused = with_derived_fields(with_failure(first, ActionFailure("Forbidden", "cannot create"), T0), REF,
                                  batch=False, now=T0)
    assert conditions(refused)["Ready"] == ("False", "Forbidden")
    assert conditions(with_derived_fields(without_failure(refused), REF, batch=False, now=T0))["Ready"] == (
        "False", "Deploying")
    running = first.with_condition("Ready", "True", "JobRunning", "the job is RUNNING", T0)
    assert with_derived_fields(running, REF, batch=False, now=T0).condition("Ready") == running.condition("Ready")
