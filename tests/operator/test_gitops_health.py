"""GitOps health of a FlinkJob: the Argo CD Lua check, the Flux healthCheckExprs and the kstatus
conditions (kstatus_conditions.py) give the expected health for a status of every lifecycle state.

The fixtures are statuses as lifecycle.py, upgrades.py, rescaling.py, batch/batch_lifecycle.py and
action_failures.py write them; the expected health of each is decided here by hand (the `EXPECTED`
table), not taken from any of the three implementations. The Lua runs in Lua 5.1 (lupa), as Argo CD's
gopher-lua is 5.1. The CEL runs in cel-python, in a harness that does what Flux's CEL status reader
does (fluxcd/flux2 RFC-0009): an observedGeneration that differs from metadata.generation is
InProgress without evaluating anything; then inProgress, failed, current in that order, the first true
one wins; none true, or an evaluation error (a missing field), is InProgress. kstatus is emulated by its
generic rules (cli-utils pkg/kstatus/status: deletionTimestamp, generation, Reconciling, Stalled).
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
import yaml
from strom_operator.crd.schema_status import CONDITION_TYPES, LIFECYCLE_STATES
from strom_operator.observe.kstatus_conditions import kstatus_conditions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LUA_FILE = os.path.join(ROOT, "charts", "strom-operator", "health", "flinkjob.lua")
ARGOCD_CM = os.path.join(ROOT, "examples", "gitops", "argocd-cm-health.yaml")
FLUX_KUSTOMIZATION = os.path.join(ROOT, "examples", "gitops", "flux-kustomization.yaml")
CHART_README = os.path.join(ROOT, "charts", "strom-operator", "README.md")
T = "2024-05-01T12:00:00Z"


def c(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message or reason,
            "lastTransitionTime": T}


READY = c("Ready", "True", "JobRunning", "the job is RUNNING")
STABLE = c("Progressing", "False", "Stable", "the job is RUNNING")
SPEC_VALID = c("Degraded", "False", "SpecValid", "the spec is valid")

# name -> (status or None, generation, extra metadata)
FIXTURES: dict[str, tuple[dict[str, Any] | None, int, dict[str, Any]]] = {
    "created, no status yet": (None, 1, {}),
    "CREATED first deployment": ({"lifecycleState": "CREATED", "observedGeneration": 1, "conditions": [
        c("Progressing", "True", "Deploying", "first deployment")]}, 1, {}),
    "DEPLOYED waiting for RUNNING": ({"lifecycleState": "DEPLOYED", "observedGeneration": 1, "conditions": [
        c("Progressing", "True", "Deployed", "waiting for the job to reach RUNNING"),
        c("JobManagerReady", "False", "JobManagerNotReady")]}, 1, {}),
    "STABLE running": ({"lifecycleState": "STABLE", "observedGeneration": 2, "conditions": [
        READY, STABLE, SPEC_VALID, c("JobManagerReady", "True", "JobManagerReady")]}, 2, {}),
    "STABLE job restarting": ({"lifecycleState": "STABLE", "observedGeneration": 2, "conditions": [
        c("Ready", "False", "JobNotRunning", "the job is RESTARTING"), STABLE]}, 2, {}),
    "STABLE pods crash-looping": ({"lifecycleState": "STABLE", "observedGeneration": 2, "conditions": [
        READY, STABLE, c("Degraded", "True", "CrashLoopBackOff", "pod x in CrashLoopBackOff for 6 min")]}, 2, {}),
    "STABLE periodic savepoint failed": ({"lifecycleState": "STABLE", "observedGeneration": 2, "conditions": [
        READY, STABLE], "error": "periodic savepoint failed: timeout"}, 2, {}),
    "UPGRADING stop-with-savepoint": ({"lifecycleState": "UPGRADING", "observedGeneration": 3, "conditions": [
        READY, c("Progressing", "True", "Upgrading", "upgrading with a savepoint")],
        "reconciliation": {"upgradeStep": "STOP_WITH_SAVEPOINT"}}, 3, {}),
    "UPGRADING autoscaler rescale": ({"lifecycleState": "UPGRADING", "observedGeneration": 3, "conditions": [
        READY, c("Progressing", "True", "Rescaling", "autoscaler rescale: busy")]}, 3, {}),
    "UPGRADING resuming": ({"lifecycleState": "UPGRADING", "observedGeneration": 4, "conditions": [
        c("Ready", "False", "Suspended"), c("Progressing", "True", "Resuming", "resuming the job")]}, 4, {}),
    "UPGRADING savepoint failed": ({"lifecycleState": "UPGRADING", "observedGeneration": 3, "conditions": [
        READY, c("Progressing", "False", "SavepointFailed", "upgrade savepoint failed: job not RUNNING")],
        "reconciliation": {"upgradeStep": "SAVEPOINT_FAILED"}, "error": "savepoint failed"}, 3, {}),
    "SUSPENDED": ({"lifecycleState": "SUSPENDED", "observedGeneration": 5, "conditions": [
        c("Ready", "False", "Suspended", "the job is suspended"),
        c("Progressing", "False", "Suspended", "the job is suspended")]}, 5, {}),
    "SUSPENDED from creation": ({"lifecycleState": "SUSPENDED", "observedGeneration": 1, "conditions": [
        c("Ready", "False", "Suspended", "created suspended")]}, 1, {}),
    "FAILED": ({"lifecycleState": "FAILED", "observedGeneration": 2, "error": "the job FAILED", "conditions": [
        c("Ready", "False", "JobFailed", "the job FAILED"), STABLE]}, 2, {}),
    "DEPLOYED timed out": ({"lifecycleState": "DEPLOYED", "observedGeneration": 1, "error": "not RUNNING in 5 min",
                            "conditions": [c("Progressing", "False", "DeploymentTimeout", "not RUNNING")]}, 1, {}),
    "ROLLING_BACK": ({"lifecycleState": "ROLLING_BACK", "observedGeneration": 3, "error": "the job FAILED",
                      "conditions": [c("Progressing", "True", "RollingBack", "the job FAILED after deployment")]},
                     3, {}),
    "ROLLED_BACK running the stable spec": ({"lifecycleState": "ROLLED_BACK", "observedGeneration": 3, "conditions": [
        READY, c("Progressing", "True", "Deployed", "waiting for the job to reach RUNNING")],
        "reconciliation": {"reason": "the job FAILED after deployment"}}, 3, {}),
    "invalid spec": ({"lifecycleState": "STABLE", "observedGeneration": 6, "error": "invalid spec: job.entry",
                      "conditions": [READY, STABLE, c("Degraded", "True", "InvalidSpec", "spec.job.entry: required")]},
                     6, {}),
    "invalid spec, generation not recorded": ({"lifecycleState": "STABLE", "observedGeneration": 6, "conditions": [
        READY, STABLE, c("Degraded", "True", "InvalidSpec", "spec.job.entry: required")]}, 7, {}),
    "spec changed, not yet observed": ({"lifecycleState": "STABLE", "observedGeneration": 7, "conditions": [
        READY, STABLE]}, 8, {}),
    "DELETING": ({"lifecycleState": "DELETING", "observedGeneration": 2, "conditions": [READY, STABLE]}, 2,
                 {"deletionTimestamp": T, "finalizers": ["strom.io/finalizer"]}),
    "deploy refused by RBAC": ({"lifecycleState": "CREATED", "observedGeneration": 1, "conditions": [
        c("Ready", "False", "Forbidden", "deploying the job: cannot create deployments: forbidden"),
        c("Progressing", "True", "Deploying", "first deployment")]}, 1, {}),
    "S3 unreachable, retried": ({"lifecycleState": "STABLE", "observedGeneration": 2, "conditions": [
        c("Ready", "False", "S3Unreachable", "disposing of savepoints: connection refused"), STABLE]}, 2, {}),
    "batch SUBMITTED": ({"lifecycleState": "DEPLOYED", "observedGeneration": 1, "batch": {"state": "SUBMITTED"},
                         "conditions": [c("Ready", "False", "Submitted"), c("Progressing", "True", "Submitted")]},
                        1, {}),
    "batch RUNNING": ({"lifecycleState": "STABLE", "observedGeneration": 1, "batch": {"state": "RUNNING"},
                       "conditions": [c("Ready", "True", "JobRunning"), c("Progressing", "True", "Submitted")]},
                      1, {}),
    "batch PENDING_RERUN after a failed driver": ({
        "lifecycleState": "DEPLOYED", "observedGeneration": 1, "batch": {"state": "PENDING_RERUN"}, "conditions": [
            c("Ready", "False", "DriverFailed", "attempt 1 of 3 failed; retrying"),
            c("Progressing", "True", "Submitted"),
            c("Degraded", "True", "DriverFailed", "attempt 1 of 3 failed; retrying")]}, 1, {}),
    "batch COMPLETED": ({"lifecycleState": "STABLE", "observedGeneration": 1, "batch": {"state": "COMPLETED"},
                         "conditions": [c("Ready", "True", "JobCompleted"), c("Progressing", "False", "JobCompleted"),
                                        c("Degraded", "False", "JobCompleted")]}, 1, {}),
    "batch FAILED": ({"lifecycleState": "FAILED", "observedGeneration": 1, "batch": {"state": "FAILED"},
                      "error": "driver pod x failed after 3 attempts", "conditions": [
                          c("Ready", "False", "JobFailed"), c("Progressing", "False", "JobFailed"),
                          c("Degraded", "True", "JobFailed")]}, 1, {}),
    # as the operator writes them once it keeps kstatus' conditions too (kstatus_conditions.py)
    "kstatus Stalled written": ({"lifecycleState": "STABLE", "observedGeneration": 2, "conditions": [
        READY, STABLE, c("Degraded", "True", "ImagePullBackOff"), c("Reconciling", "False", "Stalled"),
        c("Stalled", "True", "ImagePullBackOff")]}, 2, {}),
    "kstatus Reconciling written": ({"lifecycleState": "UPGRADING", "observedGeneration": 2, "conditions": [
        READY, c("Progressing", "True", "Upgrading"), c("Reconciling", "True", "Upgrading"),
        c("Stalled", "False", "Progressing")]}, 2, {}),
}

# name -> (Argo CD health, Flux health through healthCheckExprs), decided by hand.
EXPECTED: dict[str, tuple[str, str]] = {
    "created, no status yet": ("Progressing", "InProgress"),
    "CREATED first deployment": ("Progressing", "InProgress"),
    "DEPLOYED waiting for RUNNING": ("Progressing", "InProgress"),
    "STABLE running": ("Healthy", "Current"),
    "STABLE job restarting": ("Progressing", "InProgress"),
    "STABLE pods crash-looping": ("Degraded", "Failed"),
    "STABLE periodic savepoint failed": ("Healthy", "Current"),  # the job runs; the error is a warning
    "UPGRADING stop-with-savepoint": ("Progressing", "InProgress"),
    "UPGRADING autoscaler rescale": ("Progressing", "InProgress"),
    "UPGRADING resuming": ("Progressing", "InProgress"),
    "UPGRADING savepoint failed": ("Degraded", "Failed"),  # waits for a spec change
    "SUSPENDED": ("Suspended", "Current"),
    "SUSPENDED from creation": ("Suspended", "Current"),
    "FAILED": ("Degraded", "Failed"),
    "DEPLOYED timed out": ("Degraded", "Failed"),
    "ROLLING_BACK": ("Progressing", "InProgress"),
    "ROLLED_BACK running the stable spec": ("Degraded", "Failed"),  # the spec in Git does not run
    "invalid spec": ("Degraded", "Failed"),
    # Flux looks at the generation first: it waits until the operator records the invalid generation.
    "invalid spec, generation not recorded": ("Degraded", "InProgress"),
    "spec changed, not yet observed": ("Progressing", "InProgress"),
    "DELETING": ("Progressing", "InProgress"),
    "deploy refused by RBAC": ("Degraded", "Failed"),
    "S3 unreachable, retried": ("Progressing", "InProgress"),
    "batch SUBMITTED": ("Progressing", "InProgress"),
    "batch RUNNING": ("Progressing", "InProgress"),  # as Flux waits for a Job: until it completes
    "batch PENDING_RERUN after a failed driver": ("Progressing", "InProgress"),
    "batch COMPLETED": ("Healthy", "Current"),
    "batch FAILED": ("Degraded", "Failed"),
    "kstatus Stalled written": ("Degraded", "Failed"),
    "kstatus Reconciling written": ("Progressing", "InProgress"),
}


def flinkjob(name: str) -> dict[str, Any]:
    status, generation, meta = FIXTURES[name]
    obj: dict[str, Any] = {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob",
                           "metadata": {"name": "wordcount", "namespace": "streams", "generation": generation,
                                        **meta},
                           "spec": {"image": "strom/runtime:1", "job": {"entry": "/opt/jobs/wc.py"}}}
    if status is not None:
        obj["status"] = copy.deepcopy(status)
    return obj


# -- Argo CD ---------------------------------------------------------------------------------------

def argocd_health(obj: dict[str, Any], script: str) -> dict[str, str]:
    from lupa import lua51  # Argo CD's gopher-lua is Lua 5.1

    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(script)
    return {"status": result["status"], "message": result["message"]}


def _lua() -> str:
    with open(LUA_FILE, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("name", list(FIXTURES))
def test_argocd_health_of_each_lifecycle_state(name):
    pytest.importorskip("lupa", reason="lupa is in the [test] extra")
    health = argocd_health(flinkjob(name), _lua())
    assert health["status"] == EXPECTED[name][0], health
    assert health["message"], health


def test_argocd_messages_say_why():
    pytest.importorskip("lupa", reason="lupa is in the [test] extra")
    assert argocd_health(flinkjob("deploy refused by RBAC"), _lua())["message"] == \
        "Forbidden: deploying the job: cannot create deployments: forbidden"
    assert argocd_health(flinkjob("ROLLED_BACK running the stable spec"), _lua())["message"] == \
        "Rolled back to the last stable spec: the job FAILED after deployment"
    assert argocd_health(flinkjob("spec changed, not yet observed"), _lua())["message"] == \
        "The operator has not yet observed generation 8 (last observed: 7)"


def test_the_argocd_cm_example_carries_the_lua_verbatim_and_the_chart_readme_shows_where():
    with open(ARGOCD_CM, encoding="utf-8") as f:
        cm = yaml.safe_load(f)
    assert cm["data"]["resource.customizations.health.strom.io_FlinkJob"] == _lua()
    with open(CHART_README, encoding="utf-8") as f:
        readme = f.read()
    assert "resource.customizations.health.strom.io_FlinkJob" in readme and "health/flinkjob.lua" in readme


# -- Flux ------------------------------------------------------------------------------------------

def _flux_exprs() -> dict[str, str]:
    with open(FLUX_KUSTOMIZATION, encoding="utf-8") as f:
        kustomization = next(d for d in yaml.safe_load_all(f) if d["kind"] == "Kustomization")
    [check] = kustomization["spec"]["healthCheckExprs"]
    assert (check["apiVersion"], check["kind"]) == ("strom.io/v1beta1", "FlinkJob")
    return {k: check[k] for k in ("inProgress", "failed", "current") if k in check}


def flux_health(obj: dict[str, Any], exprs: dict[str, str]) -> str:
    import celpy

    generation = obj["metadata"].get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    if observed is not None and generation is not None and observed != generation:
        return "InProgress"
    env = celpy.Environment()
    activation = {k: celpy.json_to_cel(v) for k, v in obj.items()}
    for key, health in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        if key not in exprs:
            continue
        try:
            value = env.program(env.compile(exprs[key])).evaluate(activation)
        except celpy.CELEvalError:
            return "InProgress"  # Flux waits on an expression that cannot be evaluated yet
        if isinstance(value, celpy.CELEvalError):
            return "InProgress"
        if value is True or value == celpy.celtypes.BoolType(True):
            return health
    return "InProgress"


@pytest.mark.parametrize("name", list(FIXTURES))
def test_flux_health_of_each_lifecycle_state(name):
    pytest.importorskip("celpy", reason="cel-python is in the [test] extra")
    assert flux_health(flinkjob(name), _flux_exprs()) == EXPECTED[name][1]


def test_flux_expressions_compile_and_the_readme_shows_them():
    celpy = pytest.importorskip("celpy", reason="cel-python is in the [test] extra")
    exprs = _flux_exprs()
    assert set(exprs) == {"failed", "current"}  # no inProgress: failures win over work in progress
    for expr in exprs.values():
        celpy.Environment().compile(expr)
    with open(CHART_README, encoding="utf-8") as f:
        readme = f.read()
    assert "healthCheckExprs" in readme and "examples/gitops/flux-kustomization.yaml" in readme


# -- kstatus ---------------------------------------------------------------------------------------

def kstatus_health(obj: dict[str, Any]) -> str:
    """cli-utils' kstatus Compute for a custom resource: its generic rules, nothing kind-specific."""
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = obj.get("status") or {}
    observed = status.get("observedGeneration")
    if observed is not None and observed != obj["metadata"].get("generation"):
        return "InProgress"
    for cond in status.get("conditions") or ():
        if cond["type"] == "Reconciling" and cond["status"] == "True":
            return "InProgress"
        if cond["type"] == "Stalled" and cond["status"] == "True":
            return "Failed"
    return "Current"


def with_kstatus_conditions(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the operator writes it once it keeps kstatus' conditions."""
    out = copy.deepcopy(obj)
    status = out["status"]
    mapped = {k.type: k for k in kstatus_conditions(status)}
    status["conditions"] = [x for x in status.get("conditions") or () if x["type"] not in mapped] + [
        {"type": k.type, "status": k.status, "reason": k.reason, "message": k.message} for k in mapped.values()]
    return out


@pytest.mark.parametrize("name", [n for n in FIXTURES if FIXTURES[n][0] is not None])
def test_kstatus_alone_agrees_with_the_flux_expressions_once_the_conditions_are_written(name):
    obj = with_kstatus_conditions(flinkjob(name))
    expected = "Terminating" if obj["metadata"].get("deletionTimestamp") else EXPECTED[name][1]
    assert kstatus_health(obj) == expected


@pytest.mark.parametrize("name", [n for n in FIXTURES if FIXTURES[n][0] is not None])
def test_reconciling_and_stalled_are_never_both_true(name):
    reconciling, stalled = kstatus_conditions(FIXTURES[name][0] or {})
    assert (reconciling.type, stalled.type) == ("Reconciling", "Stalled")
    assert not (reconciling.status == "True" and stalled.status == "True")
    assert reconciling.reason and stalled.reason and reconciling.message


@pytest.mark.parametrize("name", [n for n in FIXTURES if FIXTURES[n][0] is not None and n != "DELETING"])
def test_argocd_agrees_with_kstatus_once_the_conditions_are_written(name):
    pytest.importorskip("lupa", reason="lupa is in the [test] extra")
    obj = with_kstatus_conditions(flinkjob(name))
    assert argocd_health(obj, _lua())["status"] == EXPECTED[name][0]


def test_every_lifecycle_state_and_condition_type_has_a_fixture():
    statuses = [s for s, _, _ in FIXTURES.values() if s is not None]
    assert {s.get("lifecycleState") for s in statuses} >= set(LIFECYCLE_STATES)
    assert {x["type"] for s in statuses for x in s.get("conditions", ())} == set(CONDITION_TYPES)
    assert set(FIXTURES) == set(EXPECTED)


# -- Ready, Reconciling and Stalled as the operator writes them ------------------------------------

# Fixtures whose status has no Ready of the lifecycle's: the Ready=False the operator derives
# (derived_status.py), by hand: (reason, message).
DERIVED_READY: dict[str, tuple[str, str]] = {
    "CREATED first deployment": ("Deploying", "first deployment"),
    "DEPLOYED waiting for RUNNING": ("Deploying", "waiting for the job to reach RUNNING"),
    "DEPLOYED timed out": ("NotReady", "not RUNNING"),
    "ROLLING_BACK": ("Deploying", "the job FAILED after deployment"),
}


def as_written(name: str) -> dict[str, Any]:
    """The fixture's object with its status passed through what the reconciler does before each write."""
    from strom_operator.crd.status import FlinkJobStatus
    from strom_operator.observe.derived_status import with_derived_fields
    from strom_operator.resources.labels import FlinkJobRef

    from tests.operator.fakes import T0

    obj = copy.deepcopy(flinkjob(name))
    status = FlinkJobStatus.from_dict(obj["status"])
    written = with_derived_fields(status, FlinkJobRef("ns", "wc", "uid"), batch="batch" in obj["status"], now=T0)
    obj["status"] = written.to_dict()
    return obj


@pytest.mark.parametrize("name", [n for n in FIXTURES if FIXTURES[n][0] is not None])
def test_every_status_written_has_ready_reconciling_and_stalled_and_the_same_health(name):
    obj = as_written(name)
    conditions = {x["type"]: x for x in obj["status"]["conditions"]}
    assert {"Ready", "Reconciling", "Stalled"} <= set(conditions)
    given = {x["type"]: x for x in FIXTURES[name][0]["conditions"]}.get("Ready")
    ready = conditions["Ready"]
    if given is not None:  # the lifecycle's or a failure's Ready is kept as it is
        assert (ready["status"], ready["reason"]) == (given["status"], given["reason"])
    else:
        assert (ready["status"], ready["reason"], ready["message"]) == ("False", *DERIVED_READY[name])
    assert not (conditions["Reconciling"]["status"] == "True" and conditions["Stalled"]["status"] == "True")
    expected = "Terminating" if obj["metadata"].get("deletionTimestamp") else EXPECTED[name][1]
    assert kstatus_health(obj) == expected
    if name != "DELETING":
        pytest.importorskip("lupa", reason="lupa is in the [test] extra")
        assert argocd_health(obj, _lua())["status"] == EXPECTED[name][0]


def test_the_fixtures_without_a_ready_are_the_derived_table():
    assert {n for n, (s, _, _) in FIXTURES.items() if s is not None and
            not any(x["type"] == "Ready" for x in s.get("conditions", ()))} == set(DERIVED_READY)
