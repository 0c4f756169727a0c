"""The job's vertices and edges as the autoscaler sees them, read from the JobManager REST API.

`/jobs/:jobid` lists the job vertices (id, name, parallelism, maxParallelism) and `/jobs/:jobid/plan`
the edges (each node's `inputs[].id`). Target rates flow from the sources along these edges, so the
vertices are kept in topological order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NewType

VertexId = NewType("VertexId", str)


@dataclass(frozen=True, slots=True)
class VertexInfo:
    id: VertexId
    name: str
    parallelism: int
    max_parallelism: int
    inputs: tuple[VertexId, ...] = ()

    @property
    def is_source(self) -> bool:
        return not self.inputs


@dataclass(frozen=True, slots=True)
class JobTopology:
    """Vertices in topological order (every vertex after its inputs)."""

    vertices: tuple[VertexInfo, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for v in self.vertices:
            missing = [i for i in v.inputs if i not in seen]
            if missing:
                raise ValueError(f"vertex {v.id} reads from {missing[0]}, which is not before it in the topology")
            seen.add(v.id)

    @classmethod
    def of(cls, vertices: list[VertexInfo] | tuple[VertexInfo, ...]) -> JobTopology:
        """Order vertices topologically (Kahn's algorithm, ties kept in the given order)."""
        by_id = {v.id: v for v in vertices}
        for v in vertices:
            unknown = [i for i in v.inputs if i not in by_id]
            if unknown:
                raise ValueError(f"vertex {v.id} reads from unknown vertex {unknown[0]}")
        ordered: list[VertexInfo] = []
        placed: set[str] = set()
        remaining = list(vertices)
        while remaining:
            ready = [v for v in remaining if all(i in placed for i in v.inputs)]
            if not ready:
                raise ValueError(f"the job graph has a cycle through {', '.join(v.id for v in remaining)}")
            for v in ready:
                ordered.append(v)
                placed.add(v.id)
            remaining = [v for v in remaining if v.id not in placed]
        return cls(tuple(ordered))

    def vertex(self, vid: VertexId) -> VertexInfo:
        for v in self.vertices:
            if v.id == vid:
                return v
        raise KeyError(vid)

    def outputs(self, vid: VertexId) -> tuple[VertexId, ...]:
        return tuple(v.id for v in self.vertices if vid in v.inputs)

    @property
    def parallelism(self) -> dict[VertexId, int]:
        return {v.id: v.parallelism for v in self.vertices}


def topology_from_rest(job: Mapping[str, Any], plan: Mapping[str, Any] | None = None) -> JobTopology:
    """The topology from the JSON of `/jobs/:jobid` and `/jobs/:jobid/plan` (the job details carry
    the plan too, so `plan` may be left out). Edges come from the plan's `nodes[].inputs[].id`."""
    plan_body = plan if plan is not None else job.get("plan") or {}
    nodes = plan_body.get("plan", plan_body).get("nodes") or []
    inputs = {str(n["id"]): tuple(VertexId(str(i["id"])) for i in n.get("inputs") or ()) for n in nodes}
    vertices = [
        VertexInfo(
            id=VertexId(str(v["id"])),
            name=str(v.get("name", v["id"])),
            parallelism=int(v["parallelism"]),
            max_parallelism=_max_parallelism(v, job),
            inputs=inputs.get(str(v["id"]), ()),
        )
        for v in job.get("vertices") or ()
    ]
    return JobTopology.of(vertices)


def _max_parallelism(vertex: Mapping[str, Any], job: Mapping[str, Any]) -> int:
    # Flink reports -1 where a vertex has no max parallelism of its own; the job's then applies.
    for value in (vertex.get("maxParallelism"), job.get("maxParallelism")):
        if isinstance(value, int) and value > 0:
            return value
    return int(vertex["parallelism"])
