"""From a window of samples to each vertex's true processing rate and target rate.

As in the Flink Kubernetes Operator's ScalingMetricEvaluator:
* true processing rate = records in per second / busy fraction: what the vertex would process at
  its current parallelism if it were busy all the time (busy time excludes back-pressured time);
* a source's target rate = its arrival rate (records read per second plus the growth of its
  backlog, which is what a back-pressured source fails to read) + backlog / catchUpDuration;
* downstream, target rate = sum over inputs of input's target rate x the edge's output ratio
  (records the input sends on that edge per record it reads), so fan-out and fan-in carry over.
A figure that cannot be measured (nothing processed, no output rate on an ambiguous edge) is None:
the vertex then keeps its parallelism. A metric no sample reports makes the whole evaluation wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from strom_operator.autoscaler.metrics_window import MetricsWindow
from strom_operator.autoscaler.topology import JobTopology, VertexId, VertexInfo

# A vertex that reports almost no busy time is sized as if busy 1 ms per second: its true rate is
# then large but finite, and the vertex scales down instead of dividing by zero.
MIN_BUSY_MS_PER_S = 1.0


@dataclass(frozen=True, slots=True)
class VertexEvaluation:
    vertex: VertexInfo
    input_rate: float
    output_rate: float | None
    busy_ms_per_s: float
    back_pressured_ms_per_s: float | None
    backlog: float | None
    true_processing_rate: float | None  # records/s at the current parallelism when always busy
    target_rate: float | None
    catch_up_rate: float = 0.0

    @property
    def true_rate_per_subtask(self) -> float | None:
        if self.true_processing_rate is None:
            return None
        return self.true_processing_rate / self.vertex.parallelism

    @property
    def utilization(self) -> float | None:
        """Busy fraction the target rate asks of the current parallelism."""
        if self.true_processing_rate is None or self.target_rate is None:
            return None
        return self.target_rate / self.true_processing_rate


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Per-vertex evaluations in topological order, or what is missing for one."""

    vertices: Mapping[VertexId, VertexEvaluation]
    missing: tuple[str, ...] = ()  # "vertex 'Map' (id) reports no busyTimeMsPerSecond yet"


_REQUIRED = (("busy_ms_per_s", "busyTimeMsPerSecond"), ("records_in_per_s", "numRecordsInPerSecond"))


def evaluate(topology: JobTopology, window: MetricsWindow, *, catch_up_duration_s: float) -> Evaluation:
    missing = [
        f"vertex {v.name!r} ({v.id}) reports no {rest_name} yet"
        for v in topology.vertices
        for attr, rest_name in _REQUIRED
        if window.average(v.id, attr) is None
    ]
    if missing:
        return Evaluation({}, tuple(missing))
    measured: dict[VertexId, VertexEvaluation] = {}
    for v in topology.vertices:
        input_rate = window.average(v.id, "records_in_per_s") or 0.0
        busy = window.average(v.id, "busy_ms_per_s") or 0.0
        true_rate = input_rate / (max(busy, MIN_BUSY_MS_PER_S) / 1000.0) if input_rate > 0 else None
        measured[v.id] = VertexEvaluation(
            vertex=v, input_rate=input_rate, output_rate=window.average(v.id, "records_out_per_s"),
            busy_ms_per_s=busy, back_pressured_ms_per_s=window.average(v.id, "back_pressured_ms_per_s"),
            backlog=_latest(window, v.id, "pending_records"), true_processing_rate=true_rate, target_rate=None)
    out: dict[VertexId, VertexEvaluation] = {}
    for v in topology.vertices:
        ev = measured[v.id]
        if v.is_source:
            arrival = max(0.0, ev.input_rate + _backlog_growth(window, v.id))
            catch_up = (ev.backlog or 0.0) / catch_up_duration_s
            out[v.id] = _with_target(ev, arrival + catch_up, catch_up)
            continue
        target: float | None = 0.0
        for upstream in v.inputs:
            ratio = output_ratio(topology, measured, upstream, v.id)
            up_target = out[upstream].target_rate
            if ratio is None or up_target is None or target is None:
                target = None
                break
            target += up_target * ratio
        out[v.id] = _with_target(ev, target, 0.0)
    return Evaluation(out)


def _with_target(ev: VertexEvaluation, target: float | None, catch_up: float) -> VertexEvaluation:
    return VertexEvaluation(ev.vertex, ev.input_rate, ev.output_rate, ev.busy_ms_per_s, ev.back_pressured_ms_per_s,
                            ev.backlog, ev.true_processing_rate, target, catch_up)


def _latest(window: MetricsWindow, vid: VertexId, metric: str) -> float | None:
    values = window.values(vid, metric)
    return values[-1][1] if values else None


def _backlog_growth(window: MetricsWindow, vid: VertexId) -> float:
    """Records per second by which a source's backlog grew over the window (negative: it shrank)."""
    values = window.values(vid, "pending_records")
    if len(values) < 2 or values[-1][0] <= values[0][0]:
        return 0.0
    (t0, first), (t1, last) = values[0], values[-1]
    return (last - first) / (t1 - t0)


def edge_rate(topology: JobTopology, measured: Mapping[VertexId, VertexEvaluation], src: VertexId,
              dst: VertexId) -> float | None:
    """Records per second on the edge src -> dst, from the most reliable figure available:
    1. dst reads only from src: dst's input rate;
    2. dst's other inputs each feed only dst: dst's input rate less what they send;
    3. src feeds only dst: src's output rate;
    4. otherwise src's output rate shared evenly over its outputs (a task counts a record once per
       output it writes to, so this is exact when every record goes to every output)."""
    inputs = topology.vertex(dst).inputs
    if len(inputs) == 1:
        return measured[dst].input_rate
    others = [i for i in inputs if i != src]
    if all(len(topology.outputs(i)) == 1 for i in others):
        others_out = [measured[i].output_rate for i in others]
        if all(o is not None for o in others_out):
            return max(0.0, measured[dst].input_rate - sum(o for o in others_out if o is not None))
    src_out = measured[src].output_rate
    if src_out is None:
        return None
    return src_out / len(topology.outputs(src))


def output_ratio(topology: JobTopology, measured: Mapping[VertexId, VertexEvaluation], src: VertexId,
                 dst: VertexId) -> float | None:
    """Records sent on src -> dst per record src reads; None when src read nothing to measure by."""
    src_in = measured[src].input_rate
    rate = edge_rate(topology, measured, src, dst)
    if rate is None or src_in <= 0:
        return None
    return rate / src_in
