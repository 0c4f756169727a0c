"""StreamGraph: operators as nodes, partitioners as edges (Flink's StreamGraphGenerator).

Virtual transformations (partitioning, union, side outputs) disappear here: they
become properties of the edges between real operators. `to_execution_plan()` gives
Flink's `getExecutionPlan()` JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from strom.common.ids import OperatorUid
from strom.common.key_groups import compute_default_max_parallelism
from strom.graph.job_sources import register_job_sources
from strom.graph.transformations import (
    DEFAULT_SLOT_SHARING_GROUP,
    FORWARD,
    REBALANCE,
    OperatorDescriptor,
    PartitionerSpec,
    Transformation,
)

if TYPE_CHECKING:  # annotations only: the graph module stays as light to import as before
    from strom.common.configuration import Configuration
    from strom.common.python_dependencies import PythonDependencies


class GraphBuildError(ValueError):
    """The program cannot run as written; the message names the operator."""


@dataclass(eq=False)
class StreamEdge:
    source_id: int
    target_id: int
    partitioner: PartitionerSpec
    type_number: int = 0  # 0 for one-input operators, 1 or 2 for two-input operators
    output_tag: Any = None


@dataclass(eq=False)
class StreamNode:
    id: int
    name: str
    transformation: Transformation
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    uid: OperatorUid
    in_edges: list[StreamEdge] = field(default_factory=list)
    out_edges: list[StreamEdge] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.transformation.kind

    @property
    def operator(self) -> OperatorDescriptor | None:
        return self.transformation.operator

    @property
    def pact(self) -> str:
        return {"source": "Data Source", "sink": "Data Sink"}.get(self.kind, "Operator")


@dataclass(eq=False)
class StreamGraph:
    job_name: str
    nodes: dict[int, StreamNode]
    edges: list[StreamEdge]
    chaining_enabled: bool
    max_parallelism: int
    config: Configuration | None = None  # the job's own settings (the cluster's are layered under them at submit)
    # the job file's text by co_filename, for source lines in tracebacks on TaskManagers (job_sources.py)
    job_sources: dict[str, str] = field(default_factory=dict)
    # the job's python.* files, archives and requirements (strom.common.python_dependencies), or None
    python_dependencies: PythonDependencies | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The dependencies first: unpickling them puts the job's files on sys.path (python_environment),
        # which must happen before the nodes' user functions, whose modules may be among those files.
        state = dict(self.__dict__)
        return {"python_dependencies": state.pop("python_dependencies", None), **state}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled in a JobManager or slot process: the job's functions run here, so their files'
        # source lines go into linecache for the tracebacks they may raise (job_sources.py).
        self.__dict__.update(state)
        register_job_sources(state.get("job_sources", {}))

    def sources(self) -> list[StreamNode]:
        return [n for n in self.nodes.values() if n.kind == "source"]

    def topological_order(self) -> list[StreamNode]:
        order: list[StreamNode] = []
        indeg = {nid: len(n.in_edges) for nid, n in self.nodes.items()}
        ready = sorted(nid for nid, d in indeg.items() if d == 0)
        while ready:
            nid = ready.pop(0)
            order.append(self.nodes[nid])
            for e in self.nodes[nid].out_edges:
                indeg[e.target_id] -= 1
                if indeg[e.target_id] == 0:
                    ready.append(e.target_id)
                    ready.sort()
        if len(order) != len(self.nodes):
            raise GraphBuildError("the program has a cycle; iterations are not supported")
        return order

    def to_execution_plan(self) -> str:
        out = []
        for node in self.topological_order():
            entry: dict[str, Any] = {
                "id": node.id,
                "type": node.name,
                "pact": node.pact,
                "contents": node.name,
                "parallelism": node.parallelism,
            }
            if node.in_edges:
                preds = []
                for e in node.in_edges:
                    p: dict[str, Any] = {
                        "id": e.source_id,
                        "ship_strategy": e.partitioner.ship_strategy,
                        "side": "second",
                    }
                    preds.append(p)
                entry["predecessors"] = preds
            out.append(entry)
        return json.dumps({"nodes": out}, indent=2)


def generate_stream_graph(
    transformations: list[Transformation],
    *,
    job_name: str,
    default_parallelism: int,
    max_parallelism: int,
    chaining_enabled: bool,
    parallelism_overrides: dict[str, str] | None = None,
    config: Configuration | None = None,
) -> StreamGraph:
    """Build the StreamGraph of every transformation registered with the environment."""
    nodes: dict[int, StreamNode] = {}
    edges: list[StreamEdge] = []
    uids: dict[str, int] = {}

    def parallelism_of(t: Transformation) -> int:
        p = t.parallelism if t.parallelism is not None else default_parallelism
        return p

    # Resolve a transformation to the (node id, partitioner, tag) tuples that feed from it.
    def resolve(t: Transformation) -> list[tuple[int, PartitionerSpec | None, Any]]:
        if t.kind == "partition":
            return [(nid, t.partitioner, tag) for nid, _, tag in resolve(t.inputs[0])]
        if t.kind == "side_output":
            return [(nid, part, t.output_tag) for nid, part, _ in resolve(t.inputs[0])]
        if t.kind == "union":
            out: list[tuple[int, PartitionerSpec | None, Any]] = []
            for i in t.inputs:
                out.extend(resolve(i))
            return out
        add(t)
        return [(t.id, None, None)]

    def add(t: Transformation) -> None:
        if t.id in nodes:
            return
        job_max = max_parallelism
        p = parallelism_of(t)
        mp = t.max_parallelism if t.max_parallelism is not None else job_max
        uid = OperatorUid(t.uid or f"{t.name}#{t.id}")
        if t.uid is not None:
            if t.uid in uids:
                raise GraphBuildError(
                    f"operator {t.name!r}: uid {t.uid!r} is already used by another operator; uids must be unique"
                )
            uids[t.uid] = t.id
        if p > mp:
            raise GraphBuildError(f"operator {t.name!r}: parallelism {p} is greater than its max parallelism {mp}")
        resolved = [(type_number, r) for type_number, inp in enumerate(t.inputs, start=1) for r in resolve(inp)]
        # Flink's rule: an operator without a slot sharing group inherits its inputs' group
        # when they all agree, else "default".
        input_groups = {nodes[src_id].slot_sharing_group for _, (src_id, _, _) in resolved}
        group = t.slot_sharing_group or (input_groups.pop() if len(input_groups) == 1 else DEFAULT_SLOT_SHARING_GROUP)
        node = StreamNode(
            id=t.id,
            name=t.name,
            transformation=t,
            parallelism=p,
            max_parallelism=mp,
            slot_sharing_group=group,
            uid=uid,
        )
        nodes[t.id] = node
        for type_number, (src_id, part, tag) in resolved:
            src = nodes[src_id]
            if part is None:
                part = FORWARD if src.parallelism == node.parallelism else REBALANCE
            elif part.kind == "forward" and src.parallelism != node.parallelism:
                raise GraphBuildError(
                    f"operator {t.name!r}: forward partitioning needs equal parallelism, but "
                    f"{src.name!r} has {src.parallelism} and {t.name!r} has {node.parallelism}"
                )
            edge = StreamEdge(
                source_id=src_id,
                target_id=t.id,
                partitioner=part,
                type_number=type_number if t.kind == "two_input" else 0,
                output_tag=tag,
            )
            edges.append(edge)
            src.out_edges.append(edge)
            node.in_edges.append(edge)

    # Overrides come before building so that default partitioners see the final parallelism.
    if parallelism_overrides:
        for t in transformations:
            if t.uid in parallelism_overrides:
                t.parallelism = int(parallelism_overrides[t.uid])
    for t in sorted(transformations, key=lambda t: t.id):
        if not t.is_virtual:
            add(t)
    return StreamGraph(
        job_name=job_name,
        nodes=dict(sorted(nodes.items())),
        edges=edges,
        chaining_enabled=chaining_enabled,
        max_parallelism=max_parallelism,
        config=config,
    )


def effective_max_parallelism(configured: int, transformations: list[Transformation], default_parallelism: int) -> int:
    if configured and configured > 0:
        return configured
    highest = max([default_parallelism] + [t.parallelism or 0 for t in transformations])
    return compute_default_max_parallelism(highest)
