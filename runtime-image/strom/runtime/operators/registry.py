"""Operator kinds -> runtime classes. The user API names a kind; the runtime builds it here."""

from __future__ import annotations

import copy
import importlib
from typing import Any

from strom.graph.stream_graph import StreamNode
from strom.graph.transformations import OperatorDescriptor

_KINDS: dict[str, str] = {
    "source": "strom.runtime.operators.sources:SourceOperator",
    "map": "strom.runtime.operators.basic:MapOperator",
    "flat_map": "strom.runtime.operators.basic:FlatMapOperator",
    "filter": "strom.runtime.operators.basic:FilterOperator",
    "process": "strom.runtime.operators.basic:ProcessOperator",
    "keyed_process": "strom.runtime.operators.basic:ProcessOperator",
    "reduce": "strom.runtime.operators.basic:ReduceOperator",
    "aggregation": "strom.runtime.operators.basic:AggregationOperator",
    "timestamps_watermarks": "strom.runtime.operators.basic:TimestampsAndWatermarksOperator",
    "print": "strom.runtime.operators.sinks:PrintSinkOperator",
    "sink_function": "strom.runtime.operators.sinks:SinkFunctionOperator",
    "collect": "strom.runtime.operators.sinks:CollectSinkOperator",
    "sink_v2": "strom.runtime.operators.sink_writer:SinkWriterOperator",
    "window": "strom.runtime.operators.window_operator:WindowOperator",
    "co_map": "strom.runtime.operators.co_operators:CoMapOperator",
    "co_flat_map": "strom.runtime.operators.co_operators:CoFlatMapOperator",
    "co_process": "strom.runtime.operators.co_operators:CoProcessOperator",
    "keyed_co_process": "strom.runtime.operators.co_operators:CoProcessOperator",
    "interval_join": "strom.runtime.operators.interval_join:IntervalJoinOperator",
    "broadcast_process": "strom.runtime.operators.broadcast:BroadcastProcessOperator",
    "keyed_broadcast_process": "strom.runtime.operators.broadcast:BroadcastProcessOperator",
    "async_wait": "strom.runtime.operators.async_wait:AsyncWaitOperator",
    "bundled_map": "strom.runtime.operators.bundled_map:BundledMapOperator",
}


def register_operator_kind(kind: str, target: str) -> None:
    _KINDS[kind] = target


def create_operator(node: StreamNode) -> Any:
    t = node.transformation
    desc = t.operator
    if desc is None:
        raise ValueError(f"node {node.name!r} has no operator")
    target = _KINDS.get(desc.kind)
    if target is None:
        raise ValueError(f"operator {node.name!r}: unknown operator kind {desc.kind!r}")
    module, _, cls_name = target.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    if "output_type" not in desc.params:
        desc.params["output_type"] = t.output_type
    return cls(_subtask_copy(desc, node.name), key_selectors=t.key_selectors)


def _subtask_copy(desc: OperatorDescriptor, operator_name: str) -> OperatorDescriptor:
    """Each subtask gets its own copy of the user's functions, as Flink deserializes one per
    subtask: a function keeps per-subtask fields (state handles set in open()) on `self`.

    Deep copy keeps module globals and closures shared (they are not copied), which is what
    in-process execution wants; sources are left alone (each subtask makes its own reader).
    """
    memo: dict[int, Any] = {}
    shared = {k: v for k, v in desc.params.items() if k in _NOT_COPIED}
    for v in shared.values():
        memo[id(v)] = v
    try:
        function = copy.deepcopy(desc.function, memo)
        params = {k: (v if k in shared else copy.deepcopy(v, memo)) for k, v in desc.params.items()}
    except Exception as e:  # noqa: BLE001 - reported with the operator's name
        raise TypeError(
            f"operator {operator_name!r}: its function cannot be copied for each parallel subtask "
            f"({type(e).__name__}: {e}); create resources such as connections or locks in open(), not in __init__"
        ) from e
    return OperatorDescriptor(desc.kind, function, params, desc.chaining_strategy)


_NOT_COPIED = frozenset({"source", "output_type", "collect_id", "sink"})
