"""Broadcast state pattern: (Keyed)BroadcastProcessFunction over a stream connected to a
broadcast stream.

Input 1 is the (possibly keyed) non-broadcast stream, input 2 the broadcast stream,
already sent to every subtask by the graph's broadcast partitioning. Broadcast state
is operator state, one map per MapStateDescriptor given to `broadcast(...)`: writable
in `process_broadcast_element`, read-only in `process_element` and `on_timer`, so that
every subtask holds the same maps. The keyed variant adds timers, the current key, and
`apply_to_keyed_state` to visit every key's state from the broadcast side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from strom.common.key_groups import user_key
from strom.common.row import Row, copy_row
from strom.runtime.operators.basic import ProcessOperator
from strom.runtime.operators.contexts import ProcessContext
from strom.runtime.state.api import StateAccessError
from strom.runtime.state.operator_state import HeapBroadcastState, ReadOnlyView


class BroadcastSideContext(ProcessContext):
    """Context of `process_broadcast_element`: writable broadcast state, no key, no timers."""

    __slots__ = ()

    def get_current_key(self) -> Any:
        raise TypeError(
            f"operator {self._op.ctx.operator_name!r}: process_broadcast_element has no current key; "
            "use ctx.apply_to_keyed_state(descriptor, function) to visit the keyed state of all keys"
        )

    def timer_service(self) -> Any:
        raise TypeError(
            f"operator {self._op.ctx.operator_name!r}: timers cannot be registered in process_broadcast_element "
            "(a broadcast element has no key); register them in process_element"
        )

    def apply_to_keyed_state(self, state_descriptor: Any, function: Callable[[Any, Any], None]) -> None:
        """Call `function(key, state)` for every key that has `state_descriptor`'s state in this subtask."""
        self._op.apply_to_keyed_state(state_descriptor, function)


class BroadcastProcessOperator(ProcessOperator):
    """BroadcastProcessFunction (non-keyed input 1) and KeyedBroadcastProcessFunction (keyed input 1).

    Input 1 is ProcessOperator's `process_batch` (process_element with a read-only
    context); timers fire through ProcessOperator with the same read-only context.
    """

    num_inputs = 2

    def open(self) -> None:
        super().open()
        name = self.ctx.operator_name if self.ctx is not None else type(self).__name__
        self._name = name
        self._declared = {d.name: d for d in self.params.get("descriptors") or ()}
        # registered up front so that every subtask snapshots every declared map, even if empty
        self._writable: dict[str, HeapBroadcastState] = {
            n: self.operator_state.get_broadcast_state(d) for n, d in self._declared.items()
        }
        self._read_only: dict[str, ReadOnlyView] = {n: ReadOnlyView(s) for n, s in self._writable.items()}
        self._bctx = BroadcastSideContext(self, self._side)
        self._broadcast_fn = self.function.process_broadcast_element

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self._process_broadcast(values, timestamps)

    # hot path: called per batch of broadcast elements, one user call per record
    def _process_broadcast(self, values: list[Any], timestamps: list[Any] | None) -> None:
        fn, ctx = self._broadcast_fn, self._bctx
        out: list[Any] = []
        out_ts: list[Any] = []
        append, append_ts = out.append, out_ts.append
        for i, v in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp = ts
            r = fn(v, ctx)
            if r is not None:
                for o in r:
                    append(copy_row(o) if type(o) is Row else o)  # as emitted (PyFlink serializes it then)
                    append_ts(ts)
        self._emit(out, out_ts)

    def broadcast_state_for(self, descriptor: Any, ctx: Any) -> Any:
        """The broadcast state a context may see: writable on the broadcast side, read-only elsewhere."""
        name = getattr(descriptor, "name", None)
        states = self._writable if ctx is self._bctx else self._read_only
        state = states.get(name)  # type: ignore[arg-type]
        if state is None:
            declared = ", ".join(repr(n) for n in self._declared) or "none"
            raise StateAccessError(
                f"operator {self._name!r}: broadcast state {name!r} was not declared; pass its "
                f"MapStateDescriptor to broadcast(...) (declared: {declared})"
            )
        return state

    def apply_to_keyed_state(self, state_descriptor: Any, function: Callable[[Any, Any], None]) -> None:
        backend = self.backend
        if backend is None:
            raise TypeError(
                f"operator {self._name!r}: apply_to_keyed_state needs a keyed non-broadcast stream "
                "(key_by(...) before connect(broadcast_stream))"
            )
        state = backend.get_state(state_descriptor)
        previous = backend.current_key
        try:
            # keys() is a copy, so the function may clear the state it visits
            for key in backend.keys(state_descriptor.name):
                backend.current_key = key
                function(user_key(key), state)
        finally:
            backend.current_key = previous

