"""Which programs can run in BATCH mode, decided when the graph is built.

A feature whose result would silently differ on bounded input run as a batch (unbounded sources,
processing-time windows and triggers) is refused here with the operator's name and the reason.
Processing-time timers registered by user functions are only known at run time; the stage runner
refuses them then, the same way.
"""

from __future__ import annotations

from typing import Any

from strom.graph.stream_graph import GraphBuildError, StreamGraph, StreamNode

_PROCESSING_TIME_ASSIGNERS = (
    "TumblingProcessingTimeWindows",
    "SlidingProcessingTimeWindows",
    "ProcessingTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
)
_PROCESSING_TIME_TRIGGERS = ("ProcessingTimeTrigger", "ContinuousProcessingTimeTrigger")


class BatchModeError(GraphBuildError):
    """The program uses a feature that BATCH mode cannot run; the message names the operator."""


def _trigger_chain(trigger: Any) -> list[Any]:
    chain = []
    while trigger is not None:
        chain.append(trigger)
        trigger = getattr(trigger, "nested_trigger", None)
    return chain


def batch_incompatibility(node: StreamNode) -> str | None:
    """Why `node` cannot run in BATCH mode, or None when it can."""
    t = node.transformation
    if t.kind == "source" and not t.bounded:
        return (
            "its source is unbounded; BATCH mode needs bounded sources "
            "(run it in STREAMING mode, or make the source bounded)"
        )
    desc = t.operator
    if desc is None or desc.kind != "window":
        return None
    assigner = desc.params.get("assigner")
    if type(assigner).__name__ in _PROCESSING_TIME_ASSIGNERS:
        return (
            f"{type(assigner).__name__} are processing-time windows, which have no meaning on bounded input "
            "read as fast as possible; use event-time windows"
        )
    for trig in _trigger_chain(desc.params.get("trigger")):
        if type(trig).__name__ in _PROCESSING_TIME_TRIGGERS:
            return f"the window trigger {type(trig).__name__} fires on processing time, which BATCH mode does not have"
    return None


def validate_batch_graph(graph: StreamGraph) -> None:
    """Raise BatchModeError for the first operator (in topological order) BATCH mode cannot run."""
    for node in graph.topological_order():
        reason = batch_incompatibility(node)
        if reason is not None:
            raise BatchModeError(f"operator {node.name!r} cannot run in BATCH mode: {reason}")
