"""Flink's REST response bodies, built from the read model: pure functions, no I/O.

Every Flink JSON field name the REST API uses is written here and nowhere else (as Flink keeps
them in `org.apache.flink.runtime.rest.messages`). Also here, because they decide what a
response says: back-pressure levels, subtask metric aggregation and metric query parsing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from strom.common.sensitive_keys import masked_mapping
from strom.runtime.jobmanager.read_model import (
    CheckpointEntry,
    ClusterOverview,
    ExceptionEntry,
    ExecutionState,
    JobCheckpoints,
    JobConfig,
    JobDetails,
    JobExceptions,
    JobPlan,
    JobSummary,
    SavepointStatus,
    SubtaskDetails,
    SubtaskMetrics,
    TaskManagerInfo,
    VertexDetails,
)

Json = dict[str, Any]

# Flink's VertexBackPressureLevel thresholds on backPressuredTimeMsPerSecond / 1000.
BACKPRESSURE_LOW_THRESHOLD = 0.10
BACKPRESSURE_HIGH_THRESHOLD = 0.50
AGGREGATIONS = ("min", "max", "avg", "sum")


class QueryError(ValueError):
    """A query parameter that cannot be understood (answered with 400)."""


def duration(start: int, end: int, now: int) -> int:
    """Flink's rule: running time so far while not ended, -1 before the start."""
    if start < 0:
        return -1
    return (end if end >= 0 else now) - start


# -- cluster --------------------------------------------------------------------------------------


def overview_json(o: ClusterOverview) -> Json:
    return {
        "taskmanagers": o.taskmanagers,
        "slots-total": o.slots_total,
        "slots-available": o.slots_available,
        "jobs-running": o.jobs_running,
        "jobs-finished": o.jobs_finished,
        "jobs-cancelled": o.jobs_cancelled,
        "jobs-failed": o.jobs_failed,
        "flink-version": o.flink_version,
        "flink-commit": o.flink_commit,
    }


def dashboard_config_json(
    version: str, revision: str, *, refresh_interval: int = 3000, submit: bool = False, cancel: bool = True
) -> Json:
    """/config: Flink's DashboardConfiguration; the dashboard polls every `refresh_interval` ms
    (web.refresh-interval) and shows only the actions its features allow (web.submit.enable,
    web.cancel.enable)."""
    offset_s = -(time.altzone if time.localtime().tm_isdst > 0 else time.timezone)
    return {
        "refresh-interval": refresh_interval,
        "timezone-name": time.tzname[0],
        "timezone-offset": offset_s * 1000,
        "flink-version": version,
        "flink-revision": revision,
        "features": {"web-submit": submit, "web-cancel": cancel, "web-rescale": False, "web-history": False},
    }


def job_config_json(c: JobConfig) -> Json:
    """/jobs/:jobid/config: Flink's JobConfigInfo."""
    return {
        "jid": c.jid,
        "name": c.name,
        "execution-config": {
            "execution-mode": c.execution_mode,
            "restart-strategy": c.restart_strategy,
            "job-parallelism": c.parallelism,
            "object-reuse-mode": False,
            "user-config": {},
        },
    }


def key_value_json(config: Mapping[str, str]) -> list[Json]:
    """/jobmanager/config and /jobs/:jobid/jobmanager/config: the configuration as Flink lists it,
    sensitive values masked (Flink's GlobalConfiguration.isSensitive)."""
    return [{"key": k, "value": v} for k, v in masked_mapping(config).items()]


def taskmanager_json(tm: TaskManagerInfo) -> Json:
    return {
        "id": tm.id,
        "path": tm.path,
        "dataPort": tm.data_port,
        "jmxPort": -1,
        "timeSinceLastHeartbeat": tm.last_heartbeat,
        "slotsNumber": tm.slots_number,
        "freeSlots": tm.free_slots,
        "hardware": {
            "cpuCores": tm.hardware.cpu_cores,
            "physicalMemory": tm.hardware.physical_memory,
            "freeMemory": tm.hardware.free_memory,
            "managedMemory": tm.hardware.managed_memory,
        },
        "memoryConfiguration": dict(tm.memory_configuration),
    }


# -- jobs -----------------------------------------------------------------------------------------


def job_ids_json(jobs: Iterable[JobSummary]) -> Json:
    """/jobs: Flink's JobIdsWithStatusOverview."""
    return {"jobs": [{"id": j.jid, "status": j.state.value} for j in jobs]}


def _task_counts_json(counts: Mapping[str, int]) -> Json:
    """Flink's /jobs/overview "tasks": lower-case state names plus "total"."""
    out = {s.value.lower(): int(counts.get(s.value, 0)) for s in ExecutionState}
    out["total"] = sum(out.values())
    return out


def job_summary_json(j: JobSummary, now: int) -> Json:
    return {
        "jid": j.jid,
        "name": j.name,
        "state": j.state.value,
        "start-time": j.start_time,
        "end-time": j.end_time,
        "duration": duration(j.start_time, j.end_time, now),
        "last-modification": j.last_modification,
        "tasks": _task_counts_json(j.task_counts),
    }


def jobs_overview_json(jobs: Iterable[JobSummary], now: int) -> Json:
    return {"jobs": [job_summary_json(j, now) for j in jobs]}


def io_metrics_json(metrics: Iterable[Mapping[str, float]]) -> Json:
    """Flink's IOMetricsInfo summed over subtasks; "-complete" says every subtask reported it."""
    metrics = list(metrics)
    fields = {
        "read-bytes": "numBytesIn",
        "write-bytes": "numBytesOut",
        "read-records": "numRecordsIn",
        "write-records": "numRecordsOut",
    }
    out: Json = {}
    for field_name, metric in fields.items():
        values = [m[metric] for m in metrics if metric in m]
        out[field_name] = int(sum(values))
        out[f"{field_name}-complete"] = bool(metrics) and len(values) == len(metrics)
    for field_name, metric in (
        ("accumulated-backpressured-time", "accumulatedBackPressuredTimeMs"),
        ("accumulated-idle-time", "accumulatedIdleTimeMs"),
        ("accumulated-busy-time", "accumulatedBusyTimeMs"),
    ):
        out[field_name] = int(sum(m.get(metric, 0) for m in metrics))
    return out


def _vertex_in_job_json(v: VertexDetails, metrics: SubtaskMetrics, now: int) -> Json:
    return {
        "id": v.id,
        "name": v.name,
        "maxParallelism": v.max_parallelism,
        "parallelism": v.parallelism,
        "status": v.status.value,
        "start-time": v.start_time,
        "end-time": v.end_time,
        "duration": duration(v.start_time, v.end_time, now),
        "tasks": v.task_counts(),
        "metrics": io_metrics_json(metrics.values()),
    }


def job_details_json(d: JobDetails, plan: JobPlan, metrics: Mapping[str, SubtaskMetrics], now: int) -> Json:
    """/jobs/:jobid: Flink's JobDetailsInfo. `metrics` maps vertex id -> its subtasks' metrics."""
    status_counts = {s.value: 0 for s in ExecutionState}
    for v in d.vertices:
        status_counts[v.status.value] += 1
    return {
        "jid": d.jid,
        "name": d.name,
        "isStoppable": d.is_stoppable,
        "state": d.state.value,
        "start-time": d.start_time,
        "end-time": d.end_time,
        "duration": duration(d.start_time, d.end_time, now),
        "maxParallelism": d.max_parallelism,
        "now": now,
        "timestamps": dict(d.timestamps),
        "vertices": [_vertex_in_job_json(v, metrics.get(v.id, {}), now) for v in d.vertices],
        "status-counts": status_counts,
        "plan": plan_json(plan)["plan"],
    }


def _subtask_json(s: SubtaskDetails, metrics: Mapping[str, float], now: int) -> Json:
    return {
        "subtask": s.index,
        "status": s.state.value,
        "attempt": s.attempt,
        "endpoint": s.host,  # Flink >= 1.18 calls it endpoint
        "host": s.host,  # and older Flink host; clients of either read it
        "start-time": s.start_time,
        "end-time": s.end_time,
        "duration": duration(s.start_time, s.end_time, now),
        "metrics": io_metrics_json([metrics]),
        "taskmanager-id": s.taskmanager_id or "(unassigned)",
    }


def vertex_json(v: VertexDetails, metrics: SubtaskMetrics, now: int) -> Json:
    """/jobs/:jobid/vertices/:vertexid: Flink's JobVertexDetailsInfo."""
    return {
        "id": v.id,
        "name": v.name,
        "maxParallelism": v.max_parallelism,
        "parallelism": v.parallelism,
        "now": now,
        "subtasks": [_subtask_json(s, metrics.get(s.index, {}), now) for s in v.subtasks],
    }


def plan_json(p: JobPlan) -> Json:
    """/jobs/:jobid/plan: Flink's JobPlanInfo; sources have no "inputs"."""
    nodes = []
    for n in p.nodes:
        node: Json = {
            "id": n.id,
            "parallelism": n.parallelism,
            "operator": n.operator,
            "operator_strategy": n.operator_strategy,
            "description": n.description,
        }
        if n.inputs:
            node["inputs"] = [
                {"num": i.num, "id": i.id, "ship_strategy": i.ship_strategy, "exchange": i.exchange} for i in n.inputs
            ]
        node["optimizer_properties"] = {}
        nodes.append(node)
    return {"plan": {"jid": p.jid, "name": p.name, "type": p.type, "nodes": nodes}}


def _exception_entry_json(e: ExceptionEntry, *, root: bool) -> Json:
    out: Json = {"exceptionName": e.exception_name, "stacktrace": e.stacktrace, "timestamp": e.timestamp}
    # Flink omits the task fields of a global failure (JsonInclude NON_NULL).
    for key, value in (("taskName", e.task_name), ("location", e.location), ("taskManagerId", e.taskmanager_id)):
        if value is not None:
            out[key] = value
    out["failureLabels"] = dict(e.failure_labels)
    if root:
        out["concurrentExceptions"] = [_exception_entry_json(c, root=False) for c in e.concurrent]
    return out


def exceptions_json(x: JobExceptions) -> Json:
    """/jobs/:jobid/exceptions: Flink's JobExceptionsInfoWithHistory (with the legacy root fields)."""
    out: Json = {}
    if x.root is not None:
        out["root-exception"] = x.root.stacktrace
        out["timestamp"] = x.root.timestamp
    out["all-exceptions"] = [
        {
            "exception": e.stacktrace,
            "task": e.task_name,
            "location": e.location,
            "timestamp": e.timestamp,
            "taskManagerId": e.taskmanager_id,
        }
        for e in x.history
        if e.task_name is not None
    ]
    out["truncated"] = x.truncated
    out["exceptionHistory"] = {
        "entries": [_exception_entry_json(e, root=True) for e in x.history],
        "truncated": x.truncated,
    }
    return out


# -- checkpoints ----------------------------------------------------------------------------------


def _checkpoint_json(c: CheckpointEntry) -> Json:
    """Flink's CheckpointStatistics (Completed/Failed/PendingCheckpointStatistics by `className`)."""
    kind = {"COMPLETED": "Completed", "FAILED": "Failed"}.get(c.status, "Pending")
    out: Json = {
        "className": f".{kind}CheckpointStatistics",
        "id": c.id,
        "status": c.status,
        "is_savepoint": c.is_savepoint,
        "savepointFormat": None,
        "trigger_timestamp": c.trigger_timestamp,
        "latest_ack_timestamp": c.latest_ack_timestamp,
        "checkpointed_size": c.state_size,
        "state_size": c.state_size,
        "end_to_end_duration": c.end_to_end_duration,
        "alignment_buffered": 0,
        "processed_data": 0,
        "persisted_data": c.persisted_data,
        "num_subtasks": c.num_subtasks,
        "num_acknowledged_subtasks": c.num_acknowledged_subtasks,
        "checkpoint_type": "SAVEPOINT" if c.is_savepoint else "UNALIGNED_CHECKPOINT" if c.unaligned else "CHECKPOINT",
        "tasks": {},
    }
    if c.status == "COMPLETED":
        out["external_path"] = c.external_path
        out["discarded"] = False
    elif c.status == "FAILED":
        out["failure_timestamp"] = c.failure_timestamp
        out["failure_message"] = c.failure_message
    return out


def _min_max_avg(values: Sequence[int]) -> Json:
    if not values:
        return {"min": 0, "max": 0, "avg": 0}
    return {"min": min(values), "max": max(values), "avg": sum(values) // len(values)}


def checkpoints_json(x: JobCheckpoints) -> Json:
    """/jobs/:jobid/checkpoints: Flink's CheckpointingStatistics (summary over the completed history)."""
    done = [c for c in x.history if c.status == "COMPLETED"]
    restored = x.latest_restored
    return {
        "counts": {
            "restored": x.restored,
            "total": x.total,
            "in_progress": x.in_progress,
            "completed": x.completed,
            "failed": x.failed,
        },
        "summary": {
            "checkpointed_size": _min_max_avg([c.state_size for c in done]),
            "state_size": _min_max_avg([c.state_size for c in done]),
            "end_to_end_duration": _min_max_avg([c.end_to_end_duration for c in done]),
            "alignment_buffered": _min_max_avg([]),
            "processed_data": _min_max_avg([]),
            "persisted_data": _min_max_avg([c.persisted_data for c in done]),
        },
        "latest": {
            "completed": _checkpoint_json(x.latest_completed) if x.latest_completed is not None else None,
            "savepoint": None,
            "failed": _checkpoint_json(x.latest_failed) if x.latest_failed is not None else None,
            "restored": None
            if restored is None
            else {
                "id": restored.id,
                "restore_timestamp": restored.restore_timestamp,
                "is_savepoint": restored.is_savepoint,
                "external_path": restored.external_path,
            },
        },
        "history": [_checkpoint_json(c) for c in x.history],
    }


# -- metrics --------------------------------------------------------------------------------------


def parse_csv(value: str | None) -> list[str] | None:
    """`get=a,b` -> ["a", "b"]; absent -> None; an empty item is an error."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",")]
    if not all(items):
        raise QueryError(f"empty item in {value!r}: expected a comma-separated list such as 'a,b'")
    return items


def parse_aggregations(value: str | None) -> list[str]:
    aggs = parse_csv(value) or list(AGGREGATIONS)
    unknown = [a for a in aggs if a not in AGGREGATIONS]
    if unknown:
        raise QueryError(f"unknown aggregation {unknown[0]!r} in agg: expected some of {', '.join(AGGREGATIONS)}")
    return aggs


def parse_subtask_selection(value: str | None, parallelism: int) -> set[int] | None:
    """Flink's `subtasks=0,2-4`; absent -> every subtask. Indexes are clipped to the vertex's
    `parallelism` before anything is built, so `0-20000000` costs what the vertex has, not 20 M ints."""
    selected: set[int] = set()
    for item in parse_csv(value) or ():
        low, sep, high = item.partition("-")
        try:
            first, last = (int(low), int(high)) if sep else (int(item), int(item))
        except ValueError:
            expected = "expected indexes or ranges such as '0,2-4'"
            raise QueryError(f"invalid subtask {item!r} in subtasks: {expected}") from None
        if first < 0 or last < first:
            raise QueryError(f"invalid subtask range {item!r} in subtasks")
        selected.update(range(min(first, parallelism), min(last, parallelism - 1) + 1))
    return selected if value is not None else None


def format_metric_value(value: float) -> str:
    """Flink sends metric values as strings; counters read as integers."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def metric_ids_json(names: Iterable[str]) -> list[Json]:
    return [{"id": n} for n in sorted(set(names))]


def metric_values_json(metrics: Mapping[str, float], get: Sequence[str] | None) -> list[Json]:
    """/jobs/:jobid/metrics and /taskmanagers/:tmid/metrics: ids without `get`, else id + value.
    A requested metric that does not exist is left out, as Flink does."""
    if get is None:
        return metric_ids_json(metrics)
    return [{"id": n, "value": format_metric_value(metrics[n])} for n in get if n in metrics]


def watermarks_json(metrics: SubtaskMetrics) -> list[Json]:
    """/jobs/:jobid/vertices/:vertexid/watermarks: each subtask's currentInputWatermark as
    `{"id": "<subtask>.currentInputWatermark", "value": "<ms>"}` (Flink's JobVertexWatermarksHandler;
    Long.MIN_VALUE while none arrived). Subtasks that reported no metrics yet are left out, as in Flink."""
    return [
        {"id": f"{i}.currentInputWatermark", "value": format_metric_value(m["currentInputWatermark"])}
        for i, m in sorted(metrics.items())
        if "currentInputWatermark" in m
    ]


def aggregate_subtask_metrics(
    metrics: SubtaskMetrics, get: Sequence[str] | None, aggs: Sequence[str], subtasks: set[int] | None = None
) -> list[Json]:
    """Flink's AggregatedSubtaskMetricsHandler: each requested metric over the subtasks reporting it."""
    chosen = [m for i, m in sorted(metrics.items()) if subtasks is None or i in subtasks]
    if get is None:
        return metric_ids_json(name for m in chosen for name in m)
    out: list[Json] = []
    for name in get:
        values = [float(m[name]) for m in chosen if name in m]
        if not values:
            continue
        figures = {"min": min(values), "max": max(values), "sum": sum(values), "avg": sum(values) / len(values)}
        entry: Json = {"id": name}
        entry.update({a: figures[a] for a in aggs})
        out.append(entry)
    return out


def backpressure_level(ratio: float) -> str:
    """ok <= 0.10 < low <= 0.50 < high (Flink's JobVertexBackPressureHandler)."""
    if ratio <= BACKPRESSURE_LOW_THRESHOLD:
        return "ok"
    if ratio <= BACKPRESSURE_HIGH_THRESHOLD:
        return "low"
    return "high"


def backpressure_json(v: VertexDetails, metrics: SubtaskMetrics, now: int) -> Json:
    """/jobs/:jobid/vertices/:vertexid/backpressure from the subtasks' *TimeMsPerSecond metrics.
    With no figures yet, Flink answers status "deprecated" and nothing else; so do we."""
    attempts = {s.index: s.attempt for s in v.subtasks}
    subtasks = []
    for index, m in sorted(metrics.items()):
        if "backPressuredTimeMsPerSecond" not in m:
            continue
        ratio = float(m["backPressuredTimeMsPerSecond"]) / 1000.0
        subtasks.append(
            {
                "subtask": index,
                "attempt-number": attempts.get(index, 0),
                "backpressure-level": backpressure_level(ratio),
                "ratio": ratio,
                "idleRatio": float(m.get("idleTimeMsPerSecond", 0.0)) / 1000.0,
                "busyRatio": float(m.get("busyTimeMsPerSecond", 0.0)) / 1000.0,
            }
        )
    if not subtasks:
        return {"status": "deprecated"}
    worst = max(s["ratio"] for s in subtasks)
    return {"status": "ok", "backpressure-level": backpressure_level(worst), "end-timestamp": now, "subtasks": subtasks}


# -- savepoints -----------------------------------------------------------------------------------


def savepoint_trigger_json(trigger_id: str) -> Json:
    """202 answer of POST /jobs/:jobid/savepoints and /stop: Flink's TriggerResponse."""
    return {"request-id": trigger_id}


def savepoint_status_json(s: SavepointStatus) -> Json:
    """GET /jobs/:jobid/savepoints/:triggerid: Flink's AsynchronousOperationResult."""
    if s.status != "COMPLETED":
        return {"status": {"id": s.status}, "operation": None}
    if s.failure is not None:
        cause = {"class": "org.apache.flink.runtime.checkpoint.CheckpointException", "stack-trace": s.failure}
        return {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": cause}}
    return {"status": {"id": "COMPLETED"}, "operation": {"location": s.location}}
