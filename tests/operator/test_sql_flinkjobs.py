"""SQL FlinkJobs in the operator: the CRD's exclusivity of entry/sql/sqlFrom, admission of a script (errors
with line and column, never a pod), where the script is in the pods, and the savepoint-upgrade check of a
new script's plan against the deployed one's stateful operators."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from strom_operator.batch.batch_lifecycle import next_batch_step
from strom_operator.batch.observed_driver import ObservedBatch
from strom_operator.clients.sql_checker import SqlChecker
from strom_operator.crd.definition import openapi_schema
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.sql_admission import SqlVerdict, StatefulOperator, lost_state, upgrade_refusal
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.lifecycle.steps import DeployJob, StopWithSavepoint, Wait, WriteStatus
from strom_operator.lifecycle.validation import validate_flinkjob_spec
from strom_operator.resources.builders import build_job_objects
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.fakes import T0, FakeCluster, later, spec_dict

SCRIPT = """CREATE TABLE ev (k BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
WITH ('connector' = 'datagen');
CREATE TABLE out_t (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k, COUNT(*) FROM ev GROUP BY k;
"""
SOURCE = StatefulOperator("source_aaaa", "source:source/", "Source: ev")
AGG = StatefulOperator("group-aggregate_bbbb", "one_input:keyed_process/GroupAggFunction", "GroupAggregate")
SINK = StatefulOperator("sink-out_t_cccc", "sink:sink_v2/", "Sink: out_t")
V1 = SqlVerdict(True, stateful_operators=(SOURCE, AGG, SINK))


def sql_spec(script: str = SCRIPT, **overrides: Any) -> FlinkJobSpec:
    d = spec_dict(**overrides)
    d["job"].pop("entry")
    d["job"]["sql"] = script
    return FlinkJobSpec.from_dict(d)


def drive_sql(spec: FlinkJobSpec, status: FlinkJobStatus, cluster: FakeCluster, now: Any, sql: SqlVerdict,
              max_steps: int = 30) -> tuple[FlinkJobStatus, Any]:
    """tests.operator.fakes.drive with the engine's verdict on the script passed to every step."""
    for _ in range(max_steps):
        step = next_step(spec, status, cluster.observe(), now=now, name="sq", sql=sql)
        cluster.perform(step)
        status = FlinkJobStatus.from_dict(copy.deepcopy(step.status.to_dict()))
        if isinstance(step, Wait):
            return status, step
    raise AssertionError(f"no Wait within {max_steps} steps: {cluster.actions}")


def deployed_v1() -> tuple[FlinkJobSpec, FlinkJobStatus, FakeCluster]:
    spec, cluster = sql_spec(), FakeCluster()
    status, _ = drive_sql(spec, FlinkJobStatus(), cluster, T0, V1)
    assert status.lifecycle_state == "STABLE" and cluster.deploys == 1
    return spec, status, cluster


# -- the CRD and validation ---------------------------------------------------------------------

def _schema_errors(job: dict[str, Any]) -> list[str]:
    manifest = {"apiVersion": "strom.io/v1beta1", "kind": "FlinkJob", "metadata": {"name": "x"},
                "spec": {"image": "i", "job": job}}
    return [e.message for e in jsonschema.Draft7Validator(openapi_schema()).iter_errors(manifest)]


@pytest.mark.parametrize("job", [{"entry": "/j.py"}, {"sql": "INSERT INTO a SELECT 1;"},
                                 {"sqlFrom": {"configMapKeyRef": {"name": "cm", "key": "job.sql"}}}])
def test_the_crd_takes_exactly_one_of_entry_sql_and_sqlfrom(job):
    assert _schema_errors(job) == []


@pytest.mark.parametrize("job", [{}, {"entry": "/j.py", "sql": "x"}, {"sql": "x", "sqlFrom": {
    "configMapKeyRef": {"name": "cm", "key": "k"}}}, {"sqlFrom": {"configMapKeyRef": {"name": "cm"}}}])
def test_the_crd_refuses_none_or_two_of_them_and_an_incomplete_ref(job):
    assert _schema_errors(job)


def test_validation_names_both_fields_when_entry_and_sql_are_given():
    d = spec_dict(job__sql=SCRIPT)
    error = validate_flinkjob_spec(FlinkJobSpec.from_dict(d))
    assert error is not None and error.startswith("spec.job: entry and sql are exclusive")


@pytest.mark.parametrize("job, field", [
    ({"sql": "  \n"}, "spec.job.sql: empty"),
    ({"sqlFrom": {"configMapKeyRef": {"name": "", "key": "k"}}}, "spec.job.sqlFrom.configMapKeyRef.name"),
    ({"sql": SCRIPT, "args": ["--x"]}, "spec.job.args"),
])
def test_validation_refuses_an_unusable_script_source(job, field):
    d = spec_dict()
    d["job"].pop("entry")
    d["job"].update(job)
    error = validate_flinkjob_spec(FlinkJobSpec.from_dict(d))
    assert error is not None and error.startswith(field), error


def test_a_sql_spec_round_trips_through_to_dict():
    for spec in (sql_spec(), FlinkJobSpec.from_dict({**spec_dict(), "job": {
            "sqlFrom": {"configMapKeyRef": {"name": "cm", "key": "job.sql"}}}})):
        assert FlinkJobSpec.from_dict(spec.to_dict()) == spec


# -- admission ----------------------------------------------------------------------------------

BAD = SqlVerdict(False, "SQL parse error at line 4, column 19: Unexpected token (near 'SELEC')", 4, 19)


def test_a_bad_script_is_an_invalid_spec_with_line_and_column_and_nothing_is_deployed():
    cluster = FakeCluster()
    status, step = drive_sql(sql_spec(), FlinkJobStatus(), cluster, T0, BAD)
    assert cluster.deploys == 0 and status.lifecycle_state is None and isinstance(step, Wait)
    degraded = status.condition("Degraded")
    assert degraded is not None and degraded.reason == "InvalidSpec"
    assert degraded.message == "spec.job.sql: SQL parse error at line 4, column 19: Unexpected token (near 'SELEC')"


def test_a_verdict_without_a_position_in_its_text_gets_one_from_its_fields():
    verdict = SqlVerdict(False, "Object 'nope' not found", 3, 8)
    status, _ = drive_sql(sql_spec(), FlinkJobStatus(), FakeCluster(), T0, verdict)
    assert status.condition("Degraded").message == "spec.job.sql: line 3, column 8: Object 'nope' not found"


def test_a_bad_batch_script_starts_no_driver():
    spec = FlinkJobSpec.from_dict({"image": "i", "mode": "batch", "job": {"sql": SCRIPT}})
    step = next_batch_step(spec, FlinkJobStatus(), ObservedBatch(None, 0), now=T0, name="b", sql=BAD)
    assert isinstance(step, WriteStatus) and step.status.condition("Degraded").reason == "InvalidSpec"
    assert "line 4, column 19" in step.status.condition("Degraded").message


def test_the_deployed_plan_is_recorded_in_status_with_the_deployment():
    _, status, _ = deployed_v1()
    assert status.sql == V1.plan_status()
    assert [o["uid"] for o in status.sql["statefulOperators"]] == [SOURCE.uid, AGG.uid, SINK.uid]


# -- upgrades -----------------------------------------------------------------------------------

def test_lost_state_names_missing_uids_and_changed_state_kinds():
    new = (SOURCE, StatefulOperator(SINK.uid, "one_input:window/", "Sink: out_t"))
    assert lost_state((SOURCE, AGG, SINK), new) == [
        "GroupAggregate (uid group-aggregate_bbbb) is not in the new plan",
        "Sink: out_t (uid sink-out_t_cccc) keeps its uid but its state changes from 'sink:sink_v2/' to "
        "'one_input:window/'",
    ]
    assert lost_state((SOURCE,), (SOURCE, AGG)) == []  # a new operator starts empty: nothing is lost


def test_a_compatible_script_upgrades_through_a_savepoint_and_records_the_new_plan():
    _, status, cluster = deployed_v1()
    extra = StatefulOperator("sink-more_dddd", "sink:sink_v2/", "Sink: more")
    v2 = SqlVerdict(True, stateful_operators=(SOURCE, AGG, SINK, extra))
    new = sql_spec(SCRIPT + "INSERT INTO more SELECT k FROM ev;\n")
    status, _ = drive_sql(new, status, cluster, later(60), v2)
    assert "StopWithSavepoint" in cluster.actions and cluster.deploys == 2
    assert cluster.restored_from is not None and cluster.restored_from.startswith("s3://bucket/sp/")
    assert status.lifecycle_state == "STABLE" and status.sql == v2.plan_status()
    assert status.condition("Degraded") is None or status.condition("Degraded").status == "False"


def test_an_incompatible_script_is_refused_before_the_running_job_is_stopped():
    spec, status, cluster = deployed_v1()
    changed_agg = StatefulOperator("group-aggregate_eeee", AGG.state, "GroupAggregate")
    v2 = SqlVerdict(True, stateful_operators=(SOURCE, changed_agg, SINK))
    new = sql_spec(SCRIPT.replace("GROUP BY k", "WHERE k > 1 GROUP BY k"))
    cluster.actions.clear()
    status, step = drive_sql(new, status, cluster, later(60), v2)
    assert "StopWithSavepoint" not in cluster.actions and cluster.deploys == 1 and cluster.job_state == "RUNNING"
    assert status.lifecycle_state == "STABLE"
    assert status.reconciliation.last_reconciled_spec == spec.to_dict()  # the old script goes on
    assert status.sql == V1.plan_status()
    degraded = status.condition("Degraded")
    assert degraded is not None and degraded.status == "True" and degraded.reason == "IncompatibleUpgrade"
    assert "GroupAggregate (uid group-aggregate_bbbb) is not in the new plan" in degraded.message
    assert "allowNonRestoredState" in degraded.message
    # the same script back: the refusal clears and nothing was redeployed
    status, _ = drive_sql(spec, status, cluster, later(120), V1)
    assert status.error is None and status.condition("Degraded").status == "False" and cluster.deploys == 1


@pytest.mark.parametrize("override", [{"job__allowNonRestoredState": True}, {"job__upgradeMode": "stateless"}])
def test_allow_non_restored_state_or_a_stateless_upgrade_lets_an_incompatible_script_through(override):
    _, status, cluster = deployed_v1()
    v2 = SqlVerdict(True, stateful_operators=(SOURCE, SINK))
    new = sql_spec(SCRIPT.replace("COUNT(*)", "SUM(k)"), **override)
    status, _ = drive_sql(new, status, cluster, later(60), v2)
    assert cluster.deploys == 2 and status.sql == v2.plan_status()
    if override.get("job__allowNonRestoredState"):
        assert "StopWithSavepoint" in cluster.actions


def test_an_operator_only_change_is_not_judged():
    spec, status, _ = deployed_v1()
    nonce = sql_spec(job__savepointTriggerNonce=7)
    incompatible = SqlVerdict(True, stateful_operators=())
    assert upgrade_refusal(nonce, spec, status, incompatible) is None


def test_a_refusal_needs_a_recorded_plan():
    spec, status, _ = deployed_v1()
    from dataclasses import replace
    new = sql_spec(SCRIPT + "-- v2\n")
    empty = SqlVerdict(True, stateful_operators=())
    assert upgrade_refusal(new, spec, status, empty) is not None
    assert upgrade_refusal(new, spec, replace(status, sql=None), empty) is None


# -- the script in the pods ---------------------------------------------------------------------

def _objects(spec: FlinkJobSpec) -> dict[tuple[str, str], dict[str, Any]]:
    ref = FlinkJobRef("sq", "ns", "uid-1")
    return {(o["kind"], o["metadata"]["name"]): o for o in build_job_objects(ref, spec)}


def test_an_inline_script_is_in_the_jobs_configmap_and_the_jobmanager_runs_it():
    objs = _objects(sql_spec())
    assert objs[("ConfigMap", "sq-config")]["data"]["job.sql"] == SCRIPT
    jm = objs[("Deployment", "sq-jobmanager")]["spec"]["template"]
    args = jm["spec"]["containers"][0]["args"]
    assert args[args.index("--job") + 1] == "$(STROM_CONF_DIR)/job.sql"
    assert "strom.io/sql-hash" in jm["metadata"]["annotations"]


def test_a_script_from_a_configmap_is_mounted_into_the_jobmanager_only():
    d = spec_dict()
    d["job"].pop("entry")
    d["job"]["sqlFrom"] = {"configMapKeyRef": {"name": "scripts", "key": "counts.sql"}}
    objs = _objects(FlinkJobSpec.from_dict(d))
    jm = objs[("Deployment", "sq-jobmanager")]["spec"]["template"]["spec"]
    container = jm["containers"][0]
    assert container["args"][container["args"].index("--job") + 1] == "$(STROM_SQL_DIR)/job.sql"
    assert {"name": "STROM_SQL_DIR", "value": "/opt/strom/sql"} in container["env"]
    volume = next(v for v in jm["volumes"] if v["name"] == "strom-sql")
    assert volume["configMap"] == {"name": "scripts", "items": [{"key": "counts.sql", "path": "job.sql"}]}
    assert {"name": "strom-sql", "mountPath": "/opt/strom/sql", "readOnly": True} in container["volumeMounts"]
    tm = objs[("Deployment", "sq-taskmanager")]["spec"]["template"]["spec"]
    assert all(v["name"] != "strom-sql" for v in tm["volumes"])


# -- the engine's check, asked by the operator ----------------------------------------------------

class _ConfigMaps:
    """The Kubernetes API as far as SqlChecker reads it."""

    def __init__(self, data: dict[str, dict[str, str]]) -> None:
        self.data = data

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert kind == "ConfigMap"
        return {"data": self.data[name]} if name in self.data else None


def _sql_from(name: str, key: str) -> FlinkJobSpec:
    d = spec_dict()
    d["job"].pop("entry")
    d["job"]["sqlFrom"] = {"configMapKeyRef": {"name": name, "key": key}}
    return FlinkJobSpec.from_dict(d)


def test_the_checker_asks_the_engine_and_gets_the_line_and_column_of_an_error():
    bad = SCRIPT.replace("SELECT k, COUNT(*) FROM ev", "SELECT k, COUNT(*) FROM evs")
    checker = SqlChecker(_ConfigMaps({"scripts": {"good.sql": SCRIPT, "bad.sql": bad}}))  # type: ignore[arg-type]
    good = asyncio.run(checker.verdict("ns", _sql_from("scripts", "good.sql")))
    assert good is not None and good.ok
    assert sorted(o.uid.split("_")[0] for o in good.stateful_operators) == ["group-aggregate", "sink-out", "source"]
    verdict = asyncio.run(checker.verdict("ns", _sql_from("scripts", "bad.sql")))
    assert verdict is not None and not verdict.ok
    assert (verdict.line, verdict.column) == (4, bad.splitlines()[3].index("evs") + 1), verdict
    missing = asyncio.run(checker.verdict("ns", _sql_from("scripts", "nope.sql")))
    assert missing is not None and not missing.ok and "has no key 'nope.sql'" in (missing.error or "")
    gone = asyncio.run(checker.verdict("ns", _sql_from("other", "x")))
    assert gone is not None and "ConfigMap 'other' not found" in (gone.error or "")


def test_stop_with_savepoint_is_the_first_action_of_an_accepted_sql_upgrade():
    _, status, cluster = deployed_v1()
    v2 = SqlVerdict(True, stateful_operators=(SOURCE, AGG, SINK))
    new = sql_spec(SCRIPT + "-- a comment: the same plan\n")
    steps = []
    for _ in range(4):
        step = next_step(new, status, cluster.observe(), now=later(60), name="sq", sql=v2)
        steps.append(type(step).__name__)
        cluster.perform(step)
        status = FlinkJobStatus.from_dict(copy.deepcopy(step.status.to_dict()))
        if isinstance(step, StopWithSavepoint | DeployJob):
            break
    assert steps[-1] == "StopWithSavepoint", steps


# -- examples/sql's manifests -------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sql"


@pytest.mark.parametrize("manifest", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_the_example_manifests_are_valid_and_name_a_script_that_checks(manifest):
    from strom.table.sql_check import check_script

    body = yaml.safe_load((EXAMPLES / manifest).read_text())
    assert list(jsonschema.Draft7Validator(openapi_schema()).iter_errors(body)) == []
    spec = FlinkJobSpec.from_dict(body["spec"])
    assert validate_flinkjob_spec(spec) is None
    assert spec.job.sql_from is not None and spec.job.sql_from.name == "strom-sql-demo"
    # `kubectl create configmap strom-sql-demo --from-file=examples/sql/`: the key is the file's name
    verdict = check_script((EXAMPLES / spec.job.sql_from.key).read_text())
    assert verdict["ok"], verdict


def test_a_batch_sql_flinkjob_runs_the_script_in_its_spark_driver():
    from strom_operator.batch.driver import build_driver_pod, build_spark_configmap

    ref = FlinkJobRef("sb", "ns", "uid-2")
    spec = FlinkJobSpec.from_dict({"image": "i", "mode": "batch", "job": {"sql": SCRIPT}})
    pod = build_driver_pod(ref, spec, submission=1)
    args = pod["spec"]["containers"][0]["args"]
    assert args[:3] == ["run", "--runtime-mode", "batch"] and args[-1] == "$(STROM_CONF_DIR)/job.sql"
    assert build_spark_configmap(ref, spec)["data"]["job.sql"] == SCRIPT


def test_a_rollback_forgets_the_plan_it_did_not_judge():
    _, status, cluster = deployed_v1()
    cluster.start_state = "INITIALIZING"  # the new script's job never starts
    v2 = SqlVerdict(True, stateful_operators=(SOURCE, AGG, SINK, StatefulOperator("sink-x_ffff", "sink:sink_v2/")))
    new = sql_spec(SCRIPT + "INSERT INTO more SELECT k FROM ev;\n")
    status, _ = drive_sql(new, status, cluster, later(60), v2)
    assert status.lifecycle_state == "DEPLOYED" and status.sql == v2.plan_status()
    cluster.start_state = "RUNNING"
    status, _ = drive_sql(new, status, cluster, later(60 + 6 * 60), v2)
    assert status.lifecycle_state == "ROLLED_BACK" and cluster.deployed == sql_spec()
    assert status.sql is None  # v1 runs again, but its plan was not the verdict at hand
