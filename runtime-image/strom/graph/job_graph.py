"""JobGraph: chains of operators as vertices (Flink's StreamingJobGraphGenerator).

Two operators chain only if all hold: equal parallelism; forward partitioning; the
downstream operator has one input; same slot sharing group; downstream chaining
strategy ALWAYS and upstream ALWAYS or HEAD; chaining enabled. Inside a chain records
are handed over by direct call; between vertices they travel through channels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mmh3

from strom.common.config_options import VERTEX_PARALLELISM_OVERRIDES
from strom.common.ids import VertexId
from strom.graph.stream_graph import GraphBuildError, StreamEdge, StreamGraph, StreamNode
from strom.graph.transformations import CHAIN_ALWAYS, CHAIN_HEAD, REBALANCE


@dataclass(eq=False)
class JobEdge:
    """A non-chained StreamEdge, seen between the vertices that contain its ends."""

    stream_edge: StreamEdge
    source_vertex: JobVertex
    target_vertex: JobVertex


@dataclass(eq=False)
class JobVertex:
    id: VertexId  # 32 hex digits like Flink's JobVertexID, derived from the head operator's uid
    name: str
    nodes: list[StreamNode]  # head first, in topological order
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    inputs: list[JobEdge] = field(default_factory=list)
    outputs: list[JobEdge] = field(default_factory=list)

    @property
    def head(self) -> StreamNode:
        return self.nodes[0]

    @property
    def is_source(self) -> bool:
        return self.head.kind == "source"

    def node_ids(self) -> list[int]:
        return [n.id for n in self.nodes]


@dataclass(eq=False)
class JobGraph:
    job_name: str
    vertices: list[JobVertex]  # topological order
    stream_graph: StreamGraph

    def vertex_of_node(self, node_id: int) -> JobVertex:
        for v in self.vertices:
            if any(n.id == node_id for n in v.nodes):
                return v
        raise KeyError(node_id)

    def total_subtasks(self) -> int:
        return sum(v.parallelism for v in self.vertices)

    def required_slots(self) -> int:
        """Slot sharing: one slot per parallel index per slot sharing group."""
        groups: dict[str, int] = {}
        for v in self.vertices:
            groups[v.slot_sharing_group] = max(groups.get(v.slot_sharing_group, 0), v.parallelism)
        return sum(groups.values())


def is_chainable(edge: StreamEdge, graph: StreamGraph) -> bool:
    up = graph.nodes[edge.source_id]
    down = graph.nodes[edge.target_id]
    return (
        graph.chaining_enabled
        and len(down.in_edges) == 1
        and up.parallelism == down.parallelism
        and edge.partitioner.kind == "forward"
        and up.slot_sharing_group == down.slot_sharing_group
        and down.transformation.effective_chaining_strategy() == CHAIN_ALWAYS
        and up.transformation.effective_chaining_strategy() in (CHAIN_ALWAYS, CHAIN_HEAD)
        and down.kind != "source"
    )


def vertex_id_for(uid: str) -> VertexId:
    """The job vertex id of a chain whose head has operator uid `uid`: stable, so a savepoint's vertex ids and the
    autoscaler's per-vertex overrides stay valid across resubmissions."""
    return VertexId(mmh3.hash_bytes(uid.encode("utf-8"), 0x5EED).hex())


def _apply_parallelism_overrides(graph: StreamGraph, vertices: list[JobVertex]) -> None:
    """`pipeline.jobvertex-parallelism-overrides` keyed by job vertex id (Flink's; what the
    autoscaler sets): the whole chain takes the new parallelism. Keys that are operator uids were
    applied when the StreamGraph was built; a key matching neither is left alone (the job changed)."""
    overrides = graph.config.get(VERTEX_PARALLELISM_OVERRIDES) if graph.config is not None else None
    if not overrides:
        return
    for v in vertices:
        if v.id not in overrides:
            continue
        try:
            p = int(overrides[v.id])
        except (TypeError, ValueError):
            raise GraphBuildError(
                f"{VERTEX_PARALLELISM_OVERRIDES.key}: parallelism of vertex {v.id} ({v.name!r}) must be an integer, "
                f"got {overrides[v.id]!r}"
            ) from None
        if not 1 <= p <= v.max_parallelism:
            raise GraphBuildError(
                f"{VERTEX_PARALLELISM_OVERRIDES.key}: parallelism {p} of vertex {v.id} ({v.name!r}) must be in "
                f"[1, {v.max_parallelism}] (its max parallelism)"
            )
        v.parallelism = p
        for node in v.nodes:
            node.parallelism = p


def create_job_graph(graph: StreamGraph) -> JobGraph:
    order = graph.topological_order()
    chain_of: dict[int, JobVertex] = {}
    vertices: list[JobVertex] = []
    for node in order:
        if len(node.in_edges) == 1 and is_chainable(node.in_edges[0], graph):
            vertex = chain_of[node.in_edges[0].source_id]
            vertex.nodes.append(node)
            chain_of[node.id] = vertex
            continue
        vertex = JobVertex(
            id=vertex_id_for(node.uid),
            name="",
            nodes=[node],
            parallelism=node.parallelism,
            max_parallelism=node.max_parallelism,
            slot_sharing_group=node.slot_sharing_group,
        )
        vertices.append(vertex)
        chain_of[node.id] = vertex
    for v in vertices:
        v.name = " -> ".join(n.name for n in v.nodes)
    _apply_parallelism_overrides(graph, vertices)
    for edge in graph.edges:
        src_v, dst_v = chain_of[edge.source_id], chain_of[edge.target_id]
        if src_v is dst_v:
            continue
        if edge.partitioner.kind == "forward" and src_v.parallelism != dst_v.parallelism:
            # an override changed one side: as for any default edge between unequal parallelisms
            edge.partitioner = REBALANCE
        je = JobEdge(stream_edge=edge, source_vertex=src_v, target_vertex=dst_v)
        src_v.outputs.append(je)
        dst_v.inputs.append(je)
    return JobGraph(job_name=graph.job_name, vertices=vertices, stream_graph=graph)
