"""Builds the tasks of one slot from a DeploySlot: operator chains, input gates and the
channels of every edge, in-process where producer and consumer share this worker and over
TCP where they do not.

Channel identity is (job, attempt, edge, producer, consumer); an edge is named by its
stream edge's endpoints and input side so that both ends derive the same name from the
same StreamGraph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.common import config_options as opts
from strom.graph.job_graph import JobEdge, JobGraph, JobVertex
from strom.runtime.execution_graph import connected_consumers
from strom.runtime.metrics import MetricGroup
from strom.runtime.network.channels import InputGate
from strom.runtime.network.record_writer import RecordWriter
from strom.runtime.operators.base import OperatorContext
from strom.runtime.rpc import DeploySlot
from strom.runtime.tasks.operator_chain import build_chain
from strom.runtime.tasks.processing_time import ProcessingTimeService
from strom.runtime.tasks.stream_task import StreamTask


def edge_name(edge: JobEdge) -> str:
    se = edge.stream_edge
    tag = se.output_tag.tag_id if se.output_tag is not None else ""
    return f"{se.source_id}-{se.target_id}-{se.type_number}-{tag}"


class ChannelFactory:
    """Creates the two ends of a channel; the process code supplies the remote kinds."""

    def __init__(
        self,
        *,
        local: set[tuple[str, int]],
        expect_remote: Callable[[tuple[str, int, str, int, int], Any], None],
        connect_remote: Callable[[tuple[str, int, str, int, int], str, int], Any],
        locations: dict[tuple[str, int], tuple[str, int]],
    ) -> None:
        self.local = local
        self.expect_remote = expect_remote
        self.connect_remote = connect_remote
        self.locations = locations


def build_slot_tasks(
    deploy: DeploySlot,
    job_graph: JobGraph,
    *,
    config: Any,
    channels: ChannelFactory,
    metrics: MetricGroup,
    on_done: Callable[[StreamTask], None],
) -> list[tuple[JobVertex, int, StreamTask]]:
    buffer_records = config.get(opts.BUFFER_RECORDS)
    capacity = config.get(opts.BUFFERS_PER_CHANNEL) + config.get(opts.FLOATING_BUFFERS)
    vertices = {v.id: v for v in job_graph.vertices}
    mine = [(vertices[s.vertex_id], s.subtask_index) for s in deploy.subtasks]
    mine_set = {(v.id, i) for v, i in mine}
    # 1. consumer ends: the gates of our subtasks, with a queue per incoming channel
    gates: dict[tuple[str, int], InputGate] = {}
    local_channels: dict[tuple[str, int, str, int, int], Any] = {}
    for v, i in mine:
        if not v.inputs:
            continue
        gate = gates[(v.id, i)] = InputGate()
        for edge in v.inputs:
            input_index = 2 if edge.stream_edge.type_number == 2 else 1
            name = edge_name(edge)
            for prod in range(edge.source_vertex.parallelism):
                if i not in connected_consumers(edge, prod):
                    continue
                ch = gate.add_channel(input_index, capacity)
                cid = (deploy.job_id, deploy.attempt, name, prod, i)
                if (edge.source_vertex.id, prod) in mine_set:
                    local_channels[cid] = ch
                else:
                    channels.expect_remote(cid, ch)
    # 2. producer ends and the tasks
    result: list[tuple[JobVertex, int, StreamTask]] = []
    for v, i in mine:
        writers_by_edge: dict[int, RecordWriter] = {}
        writers: list[RecordWriter] = []
        for edge in v.outputs:
            name = edge_name(edge)
            targets = connected_consumers(edge, i)
            outs = []
            for c in targets:
                cid = (deploy.job_id, deploy.attempt, name, i, c)
                if (edge.target_vertex.id, c) in mine_set:
                    outs.append(local_channels[cid])
                else:
                    host, port = channels.locations[(edge.target_vertex.id, c)]
                    outs.append(channels.connect_remote(cid, host, port))
            part = edge.stream_edge.partitioner
            w = RecordWriter(
                outs,
                kind=part.kind,
                buffer_records=buffer_records,
                key_selector=part.key_selector,
                custom_partitioner=part.custom_partitioner,
                max_parallelism=edge.target_vertex.max_parallelism,
                consumer_parallelism=edge.target_vertex.parallelism,
                subtask_index=i,
            )
            writers_by_edge[id(edge.stream_edge)] = w
            writers.append(w)
        pts = ProcessingTimeService()
        task_metrics = metrics.add_group("task", v.name).add_group("subtask", str(i))

        def make_context(node: Any, _i: int = i, _v: JobVertex = v, _pts: Any = pts, _m: Any = task_metrics) -> Any:
            return OperatorContext(
                task_name=_v.name,
                operator_name=node.name,
                operator_uid=node.uid,
                subtask_index=_i,
                parallelism=_v.parallelism,
                max_parallelism=node.max_parallelism,
                attempt=deploy.attempt,
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
        task.metric_group = task_metrics  # type: ignore[attr-defined]
        result.append((v, i, task))
    return result
