"""ExecutionGraph wiring for in-process execution: subtasks, channels, record writers.

Every JobEdge becomes channels between producer and consumer subtasks: one-to-one for
forward, pointwise for rescale (Flink's POINTWISE pattern), all-to-all otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strom.graph.job_graph import JobEdge, JobGraph, JobVertex
from strom.runtime.metrics import MetricGroup
from strom.runtime.network.channels import InputGate
from strom.runtime.network.network_memory import NetworkBuffers
from strom.runtime.network.record_writer import RecordWriter
from strom.runtime.operators.base import OperatorContext
from strom.runtime.tasks.operator_chain import build_chain
from strom.runtime.tasks.processing_time import ProcessingTimeService
from strom.runtime.tasks.stream_task import StreamTask


def pointwise_targets(producer: int, p_up: int, p_down: int) -> list[int]:
    """Consumers a producer subtask feeds under the POINTWISE pattern."""
    if p_up == p_down:
        return [producer]
    if p_up < p_down:
        return list(range(producer * p_down // p_up, (producer + 1) * p_down // p_up))
    return [producer * p_down // p_up]


def connected_consumers(edge: JobEdge, producer: int) -> list[int]:
    kind = edge.stream_edge.partitioner.kind
    p_up, p_down = edge.source_vertex.parallelism, edge.target_vertex.parallelism
    if kind in ("forward", "rescale"):
        return pointwise_targets(producer, p_up, p_down)
    return list(range(p_down))


@dataclass(eq=False)
class ExecutionVertex:
    vertex: JobVertex
    subtask_index: int
    task: StreamTask
    # The subtask's metric group (user metrics live in its "operator" groups); for MetricRegistry.register_task.
    metric_group: MetricGroup | None = None


def build_tasks(
    job_graph: JobGraph,
    *,
    config: Any,
    attempt: int = 0,
    metrics: MetricGroup | None = None,
    clock: Any = None,
    on_done: Any = None,
) -> list[ExecutionVertex]:
    """Every subtask of the job in this process, wired by in-process channels."""
    everything = [(v.id, i) for v in job_graph.vertices for i in range(v.parallelism)]
    return build_subtasks(
        job_graph,
        everything,
        job_id="local",
        attempt=attempt,
        config=config,
        channels=None,
        metrics=metrics or MetricGroup(),
        clock=clock,
        on_done=on_done,
    )


def edge_name(edge: JobEdge) -> str:
    """A JobEdge's name that both ends derive alike from the same StreamGraph."""
    se = edge.stream_edge
    tag = se.output_tag.tag_id if se.output_tag is not None else ""
    return f"{se.source_id}-{se.target_id}-{se.type_number}-{tag}"


ChannelKey = tuple[str, int, str, int, int]  # (job id, attempt, edge name, producer, consumer)


@dataclass(eq=False)
class RemoteChannels:
    """How a slot reaches subtasks in other processes: its data server expects incoming
    channels; outgoing ones connect to the consumer's host and data port."""

    expect: Callable[[ChannelKey, Any], None]
    connect: Callable[[ChannelKey, str, int], Any]
    locations: dict[tuple[str, int], tuple[str, int]]  # (vertex id, subtask) -> (host, data port)


def build_subtasks(
    job_graph: JobGraph,
    subtasks: list[tuple[str, int]],
    *,
    job_id: str,
    attempt: int,
    config: Any,
    channels: RemoteChannels | None,
    metrics: MetricGroup,
    clock: Any = None,
    on_done: Any = None,
) -> list[ExecutionVertex]:
    """The tasks of `subtasks` (vertex id, index): operator chains, input gates, and a channel
    per connected producer/consumer pair, in-process when both ends are among `subtasks`,
    else remote through `channels`."""
    buffers = NetworkBuffers.from_config(config)
    vertices = {v.id: v for v in job_graph.vertices}
    mine = [(vertices[vid], i) for vid, i in subtasks]
    here = set(subtasks)
    # 1. consumer ends: the gates of our subtasks, with a queue per incoming channel
    inputs = {
        (v.id, i): [
            (edge, prod)
            for edge in v.inputs
            for prod in range(edge.source_vertex.parallelism)
            if i in connected_consumers(edge, prod)
        ]
        for v, i in mine
    }
    buffers.check_budget(
        input_buffers=sum(buffers.gate_buffers(len(p)) for (vid, _i), p in inputs.items() if vertices[vid].inputs),
        output_channels=sum(len(connected_consumers(edge, i)) for v, i in mine for edge in v.outputs),
        where=_describe(mine),
    )
    gates: dict[tuple[str, int], InputGate] = {}
    local: dict[ChannelKey, Any] = {}
    for v, i in mine:
        if not v.inputs:
            continue
        producers = inputs[(v.id, i)]
        gate = gates[(v.id, i)] = InputGate(buffers.segment_size)
        for edge, prod in producers:
            input_index = 2 if edge.stream_edge.type_number == 2 else 1
            ch = gate.add_channel(input_index, buffers.channel_credits(len(producers), len(gate.channels)))
            key = (job_id, attempt, edge_name(edge), prod, i)
            if (edge.source_vertex.id, prod) in here:
                local[key] = ch
            else:
                _remote(channels).expect(key, ch)
    # 2. producer ends and the tasks
    result: list[ExecutionVertex] = []
    for v, i in mine:
        writers_by_edge: dict[int, RecordWriter] = {}
        writers: list[RecordWriter] = []
        for edge in v.outputs:
            name = edge_name(edge)
            outs = []
            for c in connected_consumers(edge, i):
                key = (job_id, attempt, name, i, c)
                if (edge.target_vertex.id, c) in here:
                    outs.append(local[key])
                else:
                    remote = _remote(channels)
                    host, port = remote.locations[(edge.target_vertex.id, c)]
                    outs.append(remote.connect(key, host, port))
            part = edge.stream_edge.partitioner
            w = RecordWriter(
                outs,
                kind=part.kind,
                buffer_records=buffers.buffer_records,
                segment_size=buffers.segment_size,
                key_selector=part.key_selector,
                custom_partitioner=part.custom_partitioner,
                max_parallelism=edge.target_vertex.max_parallelism,
                consumer_parallelism=edge.target_vertex.parallelism,
                subtask_index=i,
            )
            writers_by_edge[id(edge.stream_edge)] = w
            writers.append(w)
        pts = ProcessingTimeService(clock) if clock is not None else ProcessingTimeService()
        task_metrics = metrics.add_group("task", v.name).add_group("subtask", str(i))

        def make_context(
            node: Any, _i: int = i, _v: JobVertex = v, _pts: Any = pts, _m: Any = task_metrics
        ) -> OperatorContext:
            return OperatorContext(
                task_name=_v.name,
                operator_name=node.name,
                operator_uid=node.uid,
                subtask_index=_i,
                parallelism=_v.parallelism,
                max_parallelism=node.max_parallelism,
                attempt=attempt,
                config=config,
                processing_time_service=_pts,
                metrics=_m.add_group("operator", node.name),
            )

        operators, outputs = build_chain(v, writers_by_edge, make_context)
        task = StreamTask(
            name=v.name,
            subtask_index=i,
            parallelism=v.parallelism,
            operators=operators,
            outputs=outputs,
            writers=writers,
            gate=gates.get((v.id, i)),
            processing_time_service=pts,
            config=config,
            on_done=on_done,
        )
        for op in operators:
            if op.ctx is not None:
                op.ctx.mailbox = task.submit
        result.append(ExecutionVertex(v, i, task, task_metrics))
    return result


def _describe(mine: list[tuple[JobVertex, int]]) -> str:
    names = ", ".join(f"{v.name} ({i + 1}/{v.parallelism})" for v, i in mine[:3])
    return f"subtasks {names}" + (f" and {len(mine) - 3} more" if len(mine) > 3 else "")


def _remote(channels: RemoteChannels | None) -> RemoteChannels:
    if channels is None:
        raise RuntimeError("a channel crosses processes, but this build has no remote channels")
    return channels
