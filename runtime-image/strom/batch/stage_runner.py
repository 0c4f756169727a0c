"""Runs one stage's operator chain over one Spark partition, on the executor.

The chain is the engine's: operators built by the registry from the stage's detached nodes, wired
by `ChainOutput`, opened, fed record batches, and ended as a StreamTask ends them. What differs is
batch semantics: watermarks below the maximum are dropped (event time stands at -infinity while
input lasts, as in Flink's BATCH mode), the maximum watermark comes after the last record and fires
the event-time timers and windows, and processing-time timers are refused with the operator's name.
Records enter and leave a stage in batches: `(input, values, timestamps or None)` in,
`(route, values, timestamps or None)` out, so nothing in between touches a record on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import strom.batch.final_reduce  # noqa: F401 - registers the final-value reduce kinds on executors
from strom.batch.plan import StageSpec, is_stdout_print
from strom.common.time import MAX_WATERMARK
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext
from strom.runtime.operators.registry import create_operator
from strom.runtime.tasks.operator_chain import ChainOutput
from strom.runtime.tasks.processing_time import ProcessingTimeService

BATCH_RECORDS = 1024
# The route of text a print() sink wrote: it goes back to the driver, which writes it to its stdout
# (a Python worker's own stdout is piped into the Spark executor's stderr). Consumers never read it.
PRINTED_ROUTE = -1
Batch = tuple[int, list[Any], list[Any] | None]  # (input or route, values, timestamps or None)


class StageFailure(RuntimeError):
    """A user function or operator failed in a stage; names the stage and subtask."""


class PrintedText:
    """The stream of a print() sink in a stage: each write becomes a PRINTED_ROUTE item of the stage."""

    __slots__ = ("items",)

    def __init__(self, items: list[Batch]) -> None:
        self.items = items

    def write(self, text: str) -> None:
        if text:
            self.items.append((PRINTED_ROUTE, [text], None))

    def flush(self) -> None:
        pass


class BatchChainOutput(ChainOutput):
    """A chain output that lets only the final watermark through."""

    def emit_watermark(self, timestamp: int) -> None:
        if timestamp >= MAX_WATERMARK:
            super().emit_watermark(timestamp)

    def emit_status(self, idle: bool) -> None:
        """Idleness has no meaning in a batch."""


class RouteWriter:
    """Collects a route's batches into the stage's output list (a RecordWriter's place)."""

    __slots__ = ("route", "items", "channels")

    def __init__(self, route: int, items: list[Batch]) -> None:
        self.route = route
        self.items = items
        self.channels: list[Any] = []

    # hot path: called per batch
    def emit(self, values: list[Any], timestamps: list[Any] | None) -> None:
        if values:
            # copies: the lists are kept past this call, and an emitting operator may reuse its own
            self.items.append((self.route, list(values), None if timestamps is None else list(timestamps)))

    def broadcast_event(self, event: Any) -> None:
        """Watermarks and status do not cross stages: each stage ends with its own final watermark."""

    def flush(self) -> None:
        pass


def _refuse_processing_time_timers(operator_name: str) -> Any:
    def refuse(namespace: Any, timestamp: int) -> None:
        raise StageFailure(
            f"operator {operator_name!r} registered a processing-time timer, which BATCH mode does not support "
            "(there is no processing time to wait for on bounded input); use event-time timers or STREAMING mode"
        )

    return refuse


def build_stage_chain(spec: StageSpec, index: int, items: list[Batch]) -> list[Any]:
    """The stage's operators for subtask `index`, set up and wired, head first."""
    ops = {n.id: create_operator(n) for n in spec.nodes}
    writers: dict[int, RouteWriter] = {}
    pts = ProcessingTimeService()  # now() for TTL; its timers never run (no processing time in a batch)
    group = MetricGroup().add_group("task", spec.name).add_group("subtask", str(index))
    for node in spec.nodes:
        out = BatchChainOutput()
        for w in spec.wires[node.id]:
            if w.target_node is not None:
                target: Any = ops[w.target_node]
                (out.side_ops.setdefault(w.tag_id, []) if w.tag_id else out.main_ops).append(target)
            else:
                assert w.route is not None
                target = writers.setdefault(w.route, RouteWriter(w.route, items))
                (out.side_writers.setdefault(w.tag_id, []) if w.tag_id else out.main_writers).append(target)
        out.finalize()
        ctx = OperatorContext(
            task_name=spec.name,
            operator_name=node.name,
            operator_uid=node.uid,
            subtask_index=index,
            parallelism=spec.parallelism,
            max_parallelism=node.max_parallelism,
            attempt=0,
            config=spec.config,
            processing_time_service=pts,
            metrics=group.add_group("operator", node.name),
        )
        op = ops[node.id]
        op.setup(ctx, out)
        if op.timer_service is not None:
            op.timer_service.register_processing_time_timer = _refuse_processing_time_timers(node.name)
    return [ops[n.id] for n in spec.nodes]


def run_stage(spec: StageSpec, index: int, batches: Iterable[Batch]) -> Iterator[Batch]:
    """Run subtask `index` of the stage over its input `batches` ((input, values, timestamps), in
    order); yields the batches it sends to other stages as (route, values, timestamps)."""
    items: list[Batch] = []
    where = f"{spec.name} ({index + 1}/{spec.parallelism})"
    try:
        ops = build_stage_chain(spec, index, items)
        for op in reversed(ops):
            op.open()
        for node, op in zip(spec.nodes, ops, strict=True):
            if is_stdout_print(node):
                op.redirect(PrintedText(items))  # opened on sys.stdout; the driver prints instead
    except StageFailure:
        raise
    except Exception as e:
        raise StageFailure(f"{where} failed to start: {type(e).__name__}: {e}") from e
    try:
        head = ops[0]
        if spec.is_source:
            while head.emit_next() is not None:
                if items:
                    yield from items
                    items.clear()
            head.finish_input()
        else:
            two = spec.two_inputs
            feed = {1: head.process_batch1 if two else head.process_batch, 2: head.process_batch2}
            for inp, values, stamps in batches:
                feed[inp](values, stamps, None)
                if items:
                    yield from items
                    items.clear()
            if two:
                head.process_watermark1(MAX_WATERMARK)
                head.process_watermark2(MAX_WATERMARK)
                head.end_input(1)
                head.end_input(2)
            else:
                head.process_watermark(MAX_WATERMARK)
                head.end_input(1)
        for i, op in enumerate(ops):
            if i > 0 or spec.is_source:
                op.end_input(1)
            op.finish()
        yield from items
        items.clear()
        for op in ops:
            op.close()
    except StageFailure:
        _close_quietly(ops)
        raise
    except Exception as e:
        _close_quietly(ops)
        raise StageFailure(f"{where} failed: {type(e).__name__}: {e}") from e


def _close_quietly(ops: list[Any]) -> None:
    for op in ops:
        try:
            op.close()
        except Exception:  # noqa: BLE001, S110 - the first failure is the one reported
            pass
