"""Operator-side validation: each rule, with the field path leading the message."""

from __future__ import annotations

import pytest
from strom_operator.lifecycle.validation import validate_flinkjob_spec, validate_spec_change

from tests.operator.fakes import make_spec


def test_valid_spec_has_no_error():
    assert validate_flinkjob_spec(make_spec()) is None


@pytest.mark.parametrize("overrides, expected", [
    ({"job__parallelism": 8, "job__maxParallelism": 4}, "spec.job.parallelism: 8 exceeds spec.job.maxParallelism 4"),
    ({"job__parallelism": 0}, "spec.job.parallelism: 0 must be an integer >= 1"),
    ({"job__maxParallelism": 40000}, "spec.job.maxParallelism: 40000 must be"),
    ({"image": ""}, "spec.image: required"),
    ({"job__entry": "wordcount"}, "spec.job.entry: 'wordcount' is neither"),
    ({"job__entry": "module:"}, "spec.job.entry: 'module:' needs a module name"),
    ({"job__upgradeMode": "snapshot"}, "spec.job.upgradeMode: 'snapshot' is not one of"),
    ({"taskManager__slots": 0}, "spec.taskManager.slots: 0 must be an integer >= 1"),
    ({"job__upgradeMode": "last-state", "checkpointing": {}},
     "spec.job.upgradeMode: 'last-state' needs checkpointing"),
    ({"checkpointing": {"interval": "10 s"}}, "spec.checkpointing.dir: required when"),
    ({"savepoints": {}}, "spec.savepoints.dir: required by spec.job.upgradeMode 'savepoint'"),
    ({"job__upgradeMode": "stateless", "savepoints": {"periodicInterval": "1 h"}},
     "spec.savepoints.dir: required by spec.savepoints.periodicInterval"),
    ({"savepoints__dir": "hdfs://nn/sp"}, "spec.savepoints.dir: 'hdfs://nn/sp' must start with s3:// or file://"),
    ({"savepoints__dir": "s3:///sp"}, "spec.savepoints.dir: 's3:///sp' names no bucket"),
    ({"checkpointing__dir": "file://relative"}, "spec.checkpointing.dir: 'file://relative' must be absolute"),
    ({"checkpointing__interval": "10 x"}, "spec.checkpointing.interval: '10 x' is not a duration"),
    ({"savepoints__maxHistory": 0}, "spec.savepoints.maxHistory: 0 must be an integer >= 1"),
    ({"flinkConfiguration": {"taskmanager.bogus": "1"}},
     "spec.flinkConfiguration[taskmanager.bogus]: unknown configuration key"),
    ({"flinkConfiguration": {"execution.buffer-timeout": "fast"}},
     "spec.flinkConfiguration[execution.buffer-timeout]: invalid value 'fast'"),
    ({"flinkConfiguration": {"parallelism.default": "4"}},
     "spec.flinkConfiguration[parallelism.default]: set by spec.job.parallelism"),
    ({"flinkConfiguration": {"s3.secret-key": "x"}},
     "spec.flinkConfiguration[s3.secret-key]: credentials must not be in the configuration"),
    ({"flinkConfiguration": {"security.cluster-secret": "0123456789abcdef0123"}},
     "spec.flinkConfiguration[security.cluster-secret]: the cluster secret must not be in the configuration"),
    ({"flinkConfiguration": {"kubernetes.operator.savepoint.timeout": "never"}},
     "spec.flinkConfiguration[kubernetes.operator.savepoint.timeout]: invalid value 'never'"),
    ({"flinkConfiguration": {"kubernetes.operator.nope": "1"}},
     "spec.flinkConfiguration[kubernetes.operator.nope]: unknown operator option"),
    ({"s3": {"endpoint": "minio:9000"}}, "spec.s3.endpoint: 'minio:9000' must be an http"),
    ({"podTemplate": {"spec": {"containers": [{"image": "x"}]}}},
     "spec.podTemplate.spec.containers: every container needs a name"),
])
def test_invalid_spec_reports_field_path(overrides, expected):
    error = validate_flinkjob_spec(make_spec(**overrides))
    assert error is not None and error.startswith(expected), error


def test_known_engine_and_pass_through_keys_are_accepted():
    conf = {"execution.buffer-timeout": "50 ms", "state.backend.type": "rocksdb", "strom.user.topic": "t",
            "kubernetes.operator.job.upgrade.last-state-fallback.enabled": "true"}
    assert validate_flinkjob_spec(make_spec(flinkConfiguration=conf)) is None


def test_max_parallelism_cannot_change_when_state_is_restored():
    error = validate_spec_change(make_spec(job__maxParallelism=256), make_spec())
    assert error.startswith("spec.job.maxParallelism: cannot change from 128 to 256")
    assert validate_spec_change(make_spec(job__maxParallelism=256, job__upgradeMode="stateless"), make_spec()) is None
