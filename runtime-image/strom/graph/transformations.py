"""Transformations: what the DataStream API records while the user builds a program.

A transformation is a node of the user's program as written: an operator with its
inputs, or a virtual step (partitioning, union, side output) that only shapes the
edges of the StreamGraph. The user API builds these and nothing else; the runtime
turns operator descriptors into operators later, by kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# `Any` below is the user's side of the boundary: PyFlink accepts a plain callable or a function object
# (KeySelector, MapFunction, Partitioner, ...) and any TypeInformation or OutputTag; the graphs only carry
# them to the runtime, which calls them.

CHAIN_ALWAYS = "ALWAYS"
CHAIN_HEAD = "HEAD"
CHAIN_NEVER = "NEVER"
DEFAULT_SLOT_SHARING_GROUP = "default"


@dataclass(frozen=True, slots=True)
class PartitionerSpec:
    """How records of an edge are distributed over the consumer's subtasks."""

    kind: str  # forward | rebalance | rescale | shuffle | broadcast | global | hash | custom
    key_selector: Any = None
    custom_partitioner: Any = None

    @property
    def ship_strategy(self) -> str:
        return self.kind.upper()

    def __repr__(self) -> str:
        return self.kind.upper()


FORWARD = PartitionerSpec("forward")
REBALANCE = PartitionerSpec("rebalance")


@dataclass(eq=False)
class OperatorDescriptor:
    """Which runtime operator to build (by registered kind) and with what."""

    kind: str
    function: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    chaining_strategy: str = CHAIN_ALWAYS


@dataclass(eq=False)
class Transformation:
    id: int
    name: str
    kind: str  # source | one_input | two_input | sink | partition | union | side_output
    inputs: list[Transformation] = field(default_factory=list)
    operator: OperatorDescriptor | None = None
    parallelism: int | None = None
    max_parallelism: int | None = None
    uid: str | None = None
    slot_sharing_group: str | None = None
    chaining_strategy: str | None = None
    output_type: Any = None
    # keyed operators: the selector(s) that set the current key for state and timers
    key_selectors: tuple[Any, ...] = ()
    # partition transformations
    partitioner: PartitionerSpec | None = None
    # side output transformations
    output_tag: Any = None
    # sources
    bounded: bool = True
    # marks a parallelism the user set on this very transformation (sources like
    # from_collection force 1 and refuse more)
    parallelism_fixed: bool = False

    @property
    def is_virtual(self) -> bool:
        return self.kind in ("partition", "union", "side_output")

    def effective_chaining_strategy(self) -> str:
        if self.chaining_strategy is not None:
            return self.chaining_strategy
        if self.operator is not None:
            return self.operator.chaining_strategy
        return CHAIN_ALWAYS
