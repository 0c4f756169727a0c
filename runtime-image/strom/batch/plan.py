"""The batch plan: a StreamGraph cut into stages that Spark runs one partition at a time.

A stage is one JobVertex (an operator chain, by the engine's own chaining rules). Everything a
stage needs on a Spark executor is in its `StageSpec`, built here on the driver: its operators as
nodes detached from the rest of the graph (so that shipping a stage does not ship the whole
program), how their outputs are wired inside the chain, and which *routes* (edges to other stages)
leave it. A `StageInput` says how a route's records are partitioned into the stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strom.graph.job_graph import JobEdge, JobGraph, JobVertex, create_job_graph
from strom.graph.stream_graph import StreamGraph, StreamNode
from strom.graph.transformations import OperatorDescriptor, Transformation

# In BATCH mode a rolling reduction emits each key's final value only (Flink's batch semantics).
FINAL_VALUE_KINDS = {"reduce": "batch_reduce", "aggregation": "batch_aggregation"}
_BROADCAST_FIRST = ("broadcast_process", "keyed_broadcast_process")


@dataclass(frozen=True, slots=True)
class Wire:
    """One output edge of a node in a stage: to a node of the same chain, or out through a route."""

    target_node: int | None
    tag_id: str | None
    route: int | None


@dataclass(frozen=True, slots=True)
class StageInput:
    """A route feeding a stage: how its records find the stage's partitions."""

    route: int
    input_index: int  # 1, or 2 for the second input of a two-input operator
    partitioner: str  # forward | rebalance | rescale | shuffle | broadcast | global | hash | custom
    producer_parallelism: int
    key_selector: Any = None
    custom_partitioner: Any = None


@dataclass(eq=False)
class StageSpec:
    vertex_id: str
    name: str
    parallelism: int
    max_parallelism: int
    nodes: list[StreamNode]
    wires: dict[int, list[Wire]]
    inputs: list[StageInput]
    config: Any
    # keyed heads see their input sorted by timestamp, as Flink's batch mode sorts keyed input
    sort_by_time: bool = False
    # broadcast state is built from the whole broadcast side before the other input (Flink's batch rule)
    broadcast_first: bool = False
    producer_stages: list[str] = field(default_factory=list)

    @property
    def is_source(self) -> bool:
        return self.nodes[0].kind == "source"

    @property
    def two_inputs(self) -> bool:
        return self.nodes[0].kind == "two_input"

    @property
    def prints(self) -> bool:
        """Whether the stage has a print() sink (to stdout; print_to_err writes on the executor)."""
        return any(is_stdout_print(n) for n in self.nodes)


def is_stdout_print(node: StreamNode) -> bool:
    op = node.transformation.operator
    return op is not None and op.kind == "print" and not op.params.get("stderr")


@dataclass(eq=False)
class BatchPlan:
    job_name: str
    stages: list[StageSpec]  # topological order
    consumers: dict[str, int]  # vertex id -> number of stages reading its routes

    def sink_stages(self) -> list[StageSpec]:
        return [s for s in self.stages if self.consumers.get(s.vertex_id, 0) == 0]

    def result_stages(self) -> list[StageSpec]:
        """The stages the driver's action reads: the sink stages, and stages that print to stdout
        (their printed text comes back to the driver, whose stdout is the user's)."""
        return [s for s in self.stages if self.consumers.get(s.vertex_id, 0) == 0 or s.prints]


def detach(node: StreamNode) -> StreamNode:
    """A copy of `node` without edges or inputs: what an executor needs to build its operator."""
    t = node.transformation
    desc = t.operator
    if desc is not None and desc.kind in FINAL_VALUE_KINDS:
        desc = OperatorDescriptor(FINAL_VALUE_KINDS[desc.kind], desc.function, desc.params, desc.chaining_strategy)
    dt = Transformation(
        id=t.id,
        name=t.name,
        kind=t.kind,
        operator=desc,
        parallelism=node.parallelism,
        max_parallelism=node.max_parallelism,
        uid=t.uid,
        output_type=t.output_type,
        key_selectors=t.key_selectors,
        bounded=t.bounded,
    )
    return StreamNode(
        id=node.id,
        name=node.name,
        transformation=dt,
        parallelism=node.parallelism,
        max_parallelism=node.max_parallelism,
        slot_sharing_group=node.slot_sharing_group,
        uid=node.uid,
    )


def build_plan(graph: StreamGraph) -> BatchPlan:
    job_graph: JobGraph = create_job_graph(graph)
    routes: dict[int, int] = {}  # id(stream edge) -> route number

    def route_of(edge: JobEdge) -> int:
        return routes.setdefault(id(edge.stream_edge), len(routes))

    consumers: dict[str, int] = {}
    stages = []
    for v in job_graph.vertices:
        for e in v.inputs:
            consumers[e.source_vertex.id] = consumers.get(e.source_vertex.id, 0) + 1
        stages.append(_stage(v, route_of, graph.config))
    for stage in stages:
        if stage.prints and consumers.get(stage.vertex_id, 0) > 0:
            consumers[stage.vertex_id] += 1  # the driver reads its printed text too: persisted, run once
    return BatchPlan(job_name=graph.job_name, stages=stages, consumers=consumers)


def _stage(v: JobVertex, route_of: Any, config: Any) -> StageSpec:
    in_chain = {n.id for n in v.nodes}
    leaving = {id(e.stream_edge): e for e in v.outputs}
    wires: dict[int, list[Wire]] = {}
    for node in v.nodes:
        ws = []
        for edge in node.out_edges:
            tag = edge.output_tag.tag_id if edge.output_tag is not None else None
            if edge.target_id in in_chain:
                ws.append(Wire(edge.target_id, tag, None))
            else:
                ws.append(Wire(None, tag, route_of(leaving[id(edge)])))
        wires[node.id] = ws
    inputs = []
    for e in v.inputs:
        part = e.stream_edge.partitioner
        inputs.append(
            StageInput(
                route=route_of(e),
                input_index=2 if e.stream_edge.type_number == 2 else 1,
                partitioner=part.kind,
                producer_parallelism=e.source_vertex.parallelism,
                key_selector=part.key_selector,
                custom_partitioner=part.custom_partitioner,
            )
        )
    head = v.head
    head_kind = head.operator.kind if head.operator is not None else ""
    return StageSpec(
        vertex_id=v.id,
        name=v.name,
        parallelism=v.parallelism,
        max_parallelism=v.max_parallelism,
        nodes=[detach(n) for n in v.nodes],
        wires=wires,
        inputs=inputs,
        config=config,
        sort_by_time=bool(head.transformation.key_selectors) and head.kind != "source",
        broadcast_first=head_kind in _BROADCAST_FIRST,
        producer_stages=[e.source_vertex.id for e in v.inputs],
    )
