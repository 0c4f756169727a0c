"""Operator chains: the operators of one JobVertex in one subtask, wired by direct calls.

Each operator's Output fans out to the next operators of the chain (a method call) and
to record writers (non-chained edges), separately for the main output and each side
output tag. Watermarks and stream status go to every target once.
"""

from __future__ import annotations

from typing import Any

from strom.graph.job_graph import JobVertex
from strom.runtime.network.events import ACTIVE, IDLE, WatermarkEvent
from strom.runtime.operators.base import Output
from strom.runtime.operators.registry import create_operator


class ChainOutput(Output):
    def __init__(self) -> None:
        self.main_ops: list[Any] = []
        self.main_writers: list[Any] = []
        self.side_ops: dict[str, list[Any]] = {}
        self.side_writers: dict[str, list[Any]] = {}
        self.all_ops: list[Any] = []
        self.all_writers: list[Any] = []
        self.records_out = 0

    def finalize(self) -> None:
        seen_ops: list[Any] = []
        for op in self.main_ops + [o for ops in self.side_ops.values() for o in ops]:
            if op not in seen_ops:
                seen_ops.append(op)
        self.all_ops = seen_ops
        seen_w: list[Any] = []
        for w in self.main_writers + [w for ws in self.side_writers.values() for w in ws]:
            if w not in seen_w:
                seen_w.append(w)
        self.all_writers = seen_w
        targets = [op.process_batch for op in self.main_ops] + [w.emit for w in self.main_writers]
        if len(targets) == 1 and self.main_ops:
            only = self.main_ops[0].process_batch

            def collect_one_op(values: list[Any], timestamps: list[Any] | None) -> None:
                self.records_out += len(values)
                only(values, timestamps, None)

            self.collect = collect_one_op  # type: ignore[method-assign]
        elif len(targets) == 1:
            only_w = self.main_writers[0].emit

            def collect_one_writer(values: list[Any], timestamps: list[Any] | None) -> None:
                self.records_out += len(values)
                only_w(values, timestamps)

            self.collect = collect_one_writer  # type: ignore[method-assign]

    # hot path: called per batch
    def collect(self, values: list[Any], timestamps: list[Any] | None) -> None:
        if not values:
            return
        self.records_out += len(values)
        for op in self.main_ops:
            op.process_batch(values, timestamps, None)
        for w in self.main_writers:
            w.emit(values, timestamps)

    def collect_side(self, tag: Any, values: list[Any], timestamps: list[Any] | None) -> None:
        tid = tag.tag_id
        for op in self.side_ops.get(tid, ()):
            op.process_batch(values, timestamps, None)
        for w in self.side_writers.get(tid, ()):
            w.emit(values, timestamps)

    def emit_watermark(self, timestamp: int) -> None:
        for op in self.all_ops:
            op.process_watermark(timestamp)
        if self.all_writers:
            event = WatermarkEvent(timestamp)
            for w in self.all_writers:
                w.broadcast_event(event)

    def emit_status(self, idle: bool) -> None:
        for op in self.all_ops:
            op.process_status(idle)
        for w in self.all_writers:
            w.broadcast_event(IDLE if idle else ACTIVE)


def build_chain(
    vertex: JobVertex, writers_by_edge: dict[int, Any], make_context: Any
) -> tuple[list[Any], list[ChainOutput]]:
    """Operators of the chain in order (head first) and their outputs.

    `writers_by_edge` maps id(stream edge) -> RecordWriter for edges leaving the vertex;
    `make_context(node)` gives the OperatorContext of a node.
    """
    in_chain = {n.id for n in vertex.nodes}
    ops: dict[int, Any] = {n.id: create_operator(n) for n in vertex.nodes}
    outputs: list[ChainOutput] = []
    for node in vertex.nodes:
        out = ChainOutput()
        for edge in node.out_edges:
            tid = edge.output_tag.tag_id if edge.output_tag is not None else None
            if edge.target_id in in_chain:
                (out.side_ops.setdefault(tid, []) if tid else out.main_ops).append(ops[edge.target_id])
            else:
                w = writers_by_edge[id(edge)]
                (out.side_writers.setdefault(tid, []) if tid else out.main_writers).append(w)
        out.finalize()
        outputs.append(out)
    for node, out in zip(vertex.nodes, outputs, strict=True):
        ops[node.id].setup(make_context(node), out)
    return [ops[n.id] for n in vertex.nodes], outputs
