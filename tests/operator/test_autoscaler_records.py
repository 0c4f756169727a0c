"""Where the autoscaler's results go and where its settings come from: spec validation with field paths,
the CRD, the decision in status.scaling, the state in a ConfigMap, and the Prometheus metrics."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema
import pytest
from prometheus_client import CollectorRegistry
from strom_operator.autoscaler import decisions as d
from strom_operator.autoscaler.configmap_store import (
    STATE_KEY,
    autoscaler_configmap_name,
    build_autoscaler_configmap,
    state_from_configmap_data,
    state_to_configmap_data,
)
from strom_operator.autoscaler.metrics_window import MetricsWindow
from strom_operator.autoscaler.prometheus import record_decision
from strom_operator.autoscaler.settings import AutoscalerSettings
from strom_operator.autoscaler.state import AutoscalerState, PendingScaleDown
from strom_operator.autoscaler.topology import VertexId
from strom_operator.crd.definition import openapi_schema
from strom_operator.crd.schema_status import STATUS
from strom_operator.crd.spec import FlinkJobSpec, needs_upgrade
from strom_operator.crd.status import FlinkJobStatus, Scaling
from strom_operator.lifecycle.validation import validate_flinkjob_spec
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.autoscaler_helpers import metrics, sample

BASE = {"image": "strom:1", "job": {"entry": "/opt/job.py", "maxParallelism": 128}}
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _spec(**autoscaler: object) -> FlinkJobSpec:
    return FlinkJobSpec.from_dict({**BASE, "autoscaler": {"enabled": True, **autoscaler}})


# -- settings ----------------------------------------------------------------------------------------


def test_defaults_are_the_documented_ones_in_seconds():
    s = AutoscalerSettings.from_spec(_spec())
    assert (s.metrics_window_s, s.stabilization_s, s.catch_up_duration_s, s.scale_down_delay_s) == (600, 300, 300, 3600)
    assert (s.target_utilization, s.utilization_boundary, s.max_rescales_per_hour) == (0.7, 0.3, 2)
    assert (s.min_parallelism, s.max_parallelism, s.mode) == (1, 128, "scale")


def test_max_parallelism_is_bounded_by_the_jobs():
    assert AutoscalerSettings.from_spec(_spec(maxParallelism=500)).max_parallelism == 128
    assert AutoscalerSettings.from_spec(_spec(maxParallelism=16, metricsWindow="5m")).max_parallelism == 16


@pytest.mark.parametrize("autoscaler, expected", [
    ({"targetUtilization": 0}, "spec.autoscaler.targetUtilization: 0 must be a number in (0, 1]"),
    ({"targetUtilization": 1.5}, "spec.autoscaler.targetUtilization: 1.5 must be a number in (0, 1]"),
    ({"targetUtilization": True}, "spec.autoscaler.targetUtilization: True must be a number in (0, 1]"),
    ({"utilizationBoundary": -0.1}, "spec.autoscaler.utilizationBoundary: -0.1 must be a number in [0, 1]"),
    ({"minParallelism": 8, "maxParallelism": 4}, "spec.autoscaler.minParallelism: 8 exceeds spec.autoscaler."
                                                  "maxParallelism 4"),
    ({"minParallelism": 200}, "spec.autoscaler.minParallelism: 200 exceeds spec.job.maxParallelism 128"),
    ({"minParallelism": 0}, "spec.autoscaler.minParallelism: 0 must be an integer >= 1"),
    ({"scaleDownDelay": "-5 min"}, "spec.autoscaler.scaleDownDelay: '-5 min' is negative"),
    ({"stabilization": "-1s"}, "spec.autoscaler.stabilization: '-1s' is negative"),
    ({"metricsWindow": "0 s"}, "spec.autoscaler.metricsWindow: '0 s' must be longer than 0"),
    ({"catchUpDuration": "soon"}, "spec.autoscaler.catchUpDuration: 'soon' is not a duration"),
    ({"metricsInterval": "20 min"}, "spec.autoscaler.metricsInterval: '20 min' is longer than metricsWindow"),
    ({"mode": "auto"}, "spec.autoscaler.mode: 'auto' is not one of scale, advise"),
    ({"maxRescalesPerHour": 0}, "spec.autoscaler.maxRescalesPerHour: 0 must be an integer >= 1"),
])
def test_out_of_range_settings_are_rejected_with_the_field_path(autoscaler, expected):
    error = validate_flinkjob_spec(_spec(**autoscaler))
    assert error is not None and error.startswith(expected), error
    with pytest.raises(ValueError):
        AutoscalerSettings.from_spec(_spec(**autoscaler))


def test_valid_settings_pass_validation():
    spec = _spec(mode="advise", targetUtilization=1, utilizationBoundary=0, stabilization="0 s", scaleDownDelay="0",
                 minParallelism=2, maxParallelism=64, metricsInterval="30 s", metricsWindow="1 h")
    assert validate_flinkjob_spec(spec) is None


def test_the_crd_schema_holds_the_settings_and_rejects_wrong_ones_with_the_path():
    validator = jsonschema.Draft7Validator(openapi_schema())
    good = {"spec": {**BASE, "autoscaler": _spec(mode="advise", maxParallelism=32).autoscaler.to_dict()}}
    assert list(validator.iter_errors(good)) == []
    for field, value in (("targetUtilization", 1.2), ("mode", "auto"), ("scaleDownDelay", "-5 min"),
                         ("maxRescalesPerHour", 0)):
        bad = {"spec": {**BASE, "autoscaler": {field: value}}}
        paths = ["/".join(map(str, e.absolute_path)) for e in validator.iter_errors(bad)]
        assert paths == [f"spec/autoscaler/{field}"], (field, paths)


def test_changing_autoscaler_settings_is_no_upgrade_of_the_job():
    before = _spec().to_dict()
    assert not needs_upgrade(_spec(targetUtilization=0.5, mode="advise", enabled=False), before)
    assert FlinkJobSpec.from_dict(before) == _spec()


# -- the decision in status.scaling ------------------------------------------------------------------


def _decision() -> d.ScalingDecision:
    vertex = d.VertexFigures("v1", "Source", 2, 4, "2 -> 4: ...", input_rate=1000.0, busy_ms_per_s=800.0,
                             back_pressured_ms_per_s=0.0, true_processing_rate=1250.0, target_rate=1400.0,
                             catch_up_rate=400.0, backlog=120000.0, utilization=1.12)
    return d.ScalingDecision(NOW, "scale", d.RESCALE, d.RESCALED, "rescales Source 2 -> 4", None, {"v1": 4}, 2, 1,
                             (vertex,))


def test_decision_round_trips_through_status_scaling_and_fits_the_status_schema():
    decision = _decision()
    status = FlinkJobStatus(scaling=Scaling(4, 2, 4, {"v1": 4}, decision.to_dict()))
    raw = status.to_dict()
    jsonschema.Draft7Validator(STATUS).validate(raw)
    again = FlinkJobStatus.from_dict(raw)
    assert again.scaling.vertex_parallelism == {"v1": 4}
    assert d.ScalingDecision.from_dict(again.scaling.autoscaler) == decision
    assert raw["scaling"]["autoscaler"]["vertices"][0]["trueProcessingRate"] == 1250.0


def test_non_decisions_fit_the_status_schema_too():
    waiting = d.ScalingDecision(NOW, "advise", d.NONE, d.SCALE_DOWN_DELAYED, "Source: scale-down delayed",
                                until=NOW, vertices=(d.VertexFigures("v1", "Source", 8, 8, "delayed",
                                                                     scale_down_after=NOW),))
    jsonschema.Draft7Validator(STATUS).validate({"scaling": {"parallelism": 8, "taskManagers": 8, "slotsTotal": 8,
                                                             "autoscaler": waiting.to_dict()}})
    assert waiting.to_dict()["until"] == "2024-05-01T12:00:00Z"
    assert waiting.event_message() == "Autoscaler ScaleDownDelayed: Source: scale-down delayed"


# -- the state in a ConfigMap ------------------------------------------------------------------------


def _state(n_samples: int) -> AutoscalerState:
    window = MetricsWindow("job", 1000.0, {VertexId("src"): 2})
    for k in range(n_samples):
        window = window.add(sample(2000.0 + k, src=metrics(busy=500.5, in_rate=1000.0, out_rate=1000.0,
                                                           pending=float(k))), window_s=1e9)
    return AutoscalerState(window, {VertexId("src"): PendingScaleDown(1500.0, 3)}, (900.0,), {VertexId("src"): 2},
                           1950.0)


def test_state_round_trips_through_configmap_data():
    state = _state(3)
    data = state_to_configmap_data(state)
    assert list(data) == [STATE_KEY] and json.loads(data[STATE_KEY])["version"] == 1
    assert state_from_configmap_data(data) == (state, None)


def test_an_oversized_window_keeps_its_newest_samples_that_fit():
    state = _state(200)
    one = len(state_to_configmap_data(_state(1))[STATE_KEY])
    limit = one + 50 * 120  # about 50 more samples' worth (each sample is ~100 characters)
    stored, _ = state_from_configmap_data(state_to_configmap_data(state, max_bytes=limit))
    kept = stored.window.samples
    assert 1 <= len(kept) < 200
    assert kept == state.window.samples[-len(kept):]  # the newest ones
    assert len(state_to_configmap_data(stored)[STATE_KEY]) <= limit
    assert stored.pending_scale_downs == state.pending_scale_downs and stored.restarts == state.restarts


@pytest.mark.parametrize("data", [{STATE_KEY: "{not json"}, {STATE_KEY: json.dumps({"version": 99})},
                                  {STATE_KEY: json.dumps({"version": 1, "window": {"samples": [{"t": 1}]}})}])
def test_unreadable_state_reads_as_empty_with_the_problem_said(data):
    state, problem = state_from_configmap_data(data)
    assert state == AutoscalerState() and "starting afresh" in problem


def test_missing_state_is_empty_without_a_problem():
    assert state_from_configmap_data(None) == (AutoscalerState(), None)
    assert state_from_configmap_data({}) == (AutoscalerState(), None)


def test_configmap_is_named_labelled_and_owned_by_the_flinkjob():
    ref = FlinkJobRef("orders", "prod", "uid-1")
    cm = build_autoscaler_configmap(ref, _state(1))
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["name"] == autoscaler_configmap_name(ref) == "orders-autoscaler"
    assert cm["metadata"]["namespace"] == "prod"
    assert cm["metadata"]["labels"]["app.kubernetes.io/component"] == "autoscaler"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert state_from_configmap_data(cm["data"])[0] == _state(1)


# -- Prometheus --------------------------------------------------------------------------------------


def test_decision_updates_the_autoscaler_metrics_in_the_given_registry():
    registry = CollectorRegistry()
    decision = _decision()
    record_decision(registry, namespace="prod", name="orders", decision=decision)
    record_decision(registry, namespace="prod", name="orders", decision=decision)
    labels = {"namespace": "prod", "flinkjob": "orders", "vertex_id": "v1", "vertex": "Source"}
    assert registry.get_sample_value("strom_autoscaler_true_processing_rate", labels) == 1250.0
    assert registry.get_sample_value("strom_autoscaler_target_rate", labels) == 1400.0
    assert registry.get_sample_value("strom_autoscaler_recommended_parallelism", labels) == 4
    assert registry.get_sample_value("strom_autoscaler_parallelism", labels) == 2
    counted = {"namespace": "prod", "flinkjob": "orders", "action": "rescale", "reason": "Rescaled"}
    assert registry.get_sample_value("strom_autoscaler_decisions_total", counted) == 2


def test_an_unmeasurable_vertex_drops_its_stale_rates():
    registry = CollectorRegistry()
    record_decision(registry, namespace="ns", name="j", decision=_decision())
    unmeasured = d.ScalingDecision(NOW, "scale", d.NONE, d.NO_CHANGE, "keeps 2",
                                   vertices=(d.VertexFigures("v1", "Source", 2, 2, "keeps 2"),))
    record_decision(registry, namespace="ns", name="j", decision=unmeasured)
    labels = {"namespace": "ns", "flinkjob": "j", "vertex_id": "v1", "vertex": "Source"}
    assert registry.get_sample_value("strom_autoscaler_true_processing_rate", labels) is None
    assert registry.get_sample_value("strom_autoscaler_recommended_parallelism", labels) == 2
