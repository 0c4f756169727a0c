"""Operator base classes and what the task gives every operator.

An operator receives record batches `(values, timestamps, keys)` and watermarks from
its input (the task or the previous operator of its chain) and emits through its
`Output`. Keyed operators own a keyed state backend and a timer service; event-time
timers fire before the watermark is forwarded.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strom.common import config_options as opts
from strom.common.key_groups import KeyGroupRange, describe_key_selector, freeze_key
from strom.common.row import detached
from strom.common.time import MIN_WATERMARK
from strom.datastream.functions import Function, RuntimeContext
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.declared_state import with_declared_types
from strom.runtime.state.api import KeyedStateBackend, StateAccessError
from strom.runtime.state.backends import create_keyed_state_backend, watch_memory
from strom.runtime.state.operator_state import DefaultOperatorStateStore
from strom.runtime.state.timers import InternalTimer, InternalTimerService


@dataclass(eq=False)
class OperatorContext:
    """Identity and services of one operator in one subtask."""

    task_name: str
    operator_name: str
    operator_uid: str
    subtask_index: int
    parallelism: int
    max_parallelism: int
    attempt: int
    config: Any
    processing_time_service: Any
    metrics: MetricGroup
    job_parameters: dict[str, str] = field(default_factory=dict)
    # runs an action in the task thread and wakes the task (StreamTask.submit); set once the task exists.
    # Operators completing work on other threads (async I/O) hand their results back through it.
    mailbox: Callable[[Callable[[], None]], None] | None = None

    @property
    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange.for_subtask(self.max_parallelism, self.parallelism, self.subtask_index)


class Output:
    """Where an operator's results go: chained operators and/or record writers."""

    def collect(self, values: list[Any], timestamps: list[Any] | None) -> None:
        raise TypeError(f"{type(self).__name__} cannot emit records")

    def collect_side(self, tag: Any, values: list[Any], timestamps: list[Any] | None) -> None:
        raise TypeError(f"{type(self).__name__} cannot emit side outputs")

    def emit_watermark(self, timestamp: int) -> None:
        raise TypeError(f"{type(self).__name__} cannot emit watermarks")

    def emit_status(self, idle: bool) -> None:
        """Idle/active stream status; only meaningful between tasks."""


class StreamRuntimeContext(RuntimeContext):
    def __init__(self, ctx: OperatorContext, backend: KeyedStateBackend | None) -> None:
        self._ctx = ctx
        self._backend = backend

    def get_task_name(self) -> str:
        return self._ctx.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._ctx.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._ctx.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._ctx.subtask_index

    def get_attempt_number(self) -> int:
        return self._ctx.attempt

    def get_task_name_with_subtasks(self) -> str:
        return f"{self._ctx.task_name} ({self._ctx.subtask_index + 1}/{self._ctx.parallelism})"

    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        """ExecutionConfig.set_global_job_parameters travels in the job's configuration (Flink's key)."""
        params = self._ctx.job_parameters
        if not params and self._ctx.config is not None:
            params = self._ctx.config.get(opts.GLOBAL_JOB_PARAMETERS.key) or {}
        return params.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        return self._ctx.metrics

    def _keyed(self, what: str, descriptor: Any) -> Any:
        if self._backend is None:
            raise StateAccessError(
                f"operator {self._ctx.operator_name!r}: {what}({descriptor.name!r}) needs a keyed stream; "
                "keyed state is only available after key_by(...)"
            )
        # a declared FLOAT/SHORT/... type shapes what is written, as PyFlink's state coders do
        return with_declared_types(self._backend.get_state(descriptor), descriptor)

    def get_state(self, state_descriptor: Any) -> Any:
        return self._keyed("get_state", state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        return self._keyed("get_list_state", state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._keyed("get_map_state", state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._keyed("get_reducing_state", state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._keyed("get_aggregating_state", state_descriptor)


class StreamOperator:
    """Base of all operators. Subclasses override the `process_*` methods they need."""

    keyed = False
    num_inputs = 1

    def __init__(self, descriptor: Any, *, key_selectors: tuple[Any, ...] = ()) -> None:
        self.descriptor = descriptor
        self.function: Any = descriptor.function if descriptor is not None else None
        self.params: dict[str, Any] = descriptor.params if descriptor is not None else {}
        self.key_selectors = key_selectors
        self._key_types_checked: set[type] = set()
        self.output: Output = Output()
        self.ctx: OperatorContext | None = None
        self.backend: KeyedStateBackend | None = None
        self.timer_service: InternalTimerService | None = None
        self.operator_state = DefaultOperatorStateStore()
        self.current_watermark = MIN_WATERMARK
        self._input_watermarks = [MIN_WATERMARK, MIN_WATERMARK]

    # -- lifecycle ---------------------------------------------------------------------------------
    def setup(self, ctx: OperatorContext, output: Output) -> None:
        self.ctx = ctx
        self.output = output
        if self.key_selectors:
            # state.backend.type: the heap (default) or RocksDB
            self.backend = create_keyed_state_backend(
                ctx.config,
                max_parallelism=ctx.max_parallelism,
                key_group_range=ctx.key_group_range,
                clock=ctx.processing_time_service.now,
                operator_name=ctx.operator_name,
            )
            # a key that cannot be hashed the same in every process is refused naming the user's function
            selectors = " / ".join(describe_key_selector(s) for s in self.key_selectors if s is not None)
            self.backend.key_groups.owner = f"{selectors} of operator {ctx.operator_name!r}"
            watch_memory(ctx, self.backend)  # heap state fails the task before it outgrows the slot's memory
            self.timer_service = InternalTimerService(
                backend=self.backend,
                on_event_time=self.on_event_time,
                on_processing_time=self.on_processing_time,
                processing_time_service=ctx.processing_time_service,
            )

    def runtime_context(self) -> StreamRuntimeContext:
        assert self.ctx is not None
        return StreamRuntimeContext(self.ctx, self.backend)

    def open(self) -> None:
        fn = self.function
        if isinstance(fn, Function):
            self._initialize_operator_state(fn)
            fn.open(self.runtime_context())

    def _initialize_operator_state(self, fn: Any) -> None:
        init = getattr(fn, "initialize_state", None)
        if init is not None:
            init(_FunctionInitializationContext(self.operator_state, self.backend))

    def end_input(self, input_index: int = 1) -> None:
        """The input (1 or 2) has ended; the max watermark has already been processed."""

    def finish(self) -> None:
        """All inputs ended: emit what is still buffered."""

    # -- checkpoints (Flink's StreamOperator hooks; the function's CheckpointListener is told by the task)
    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """Before the barrier of `checkpoint_id` goes downstream: emit or prepare what belongs before it."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint `checkpoint_id` completed (every task's state of it is durable)."""

    def close(self) -> None:
        try:
            if isinstance(self.function, Function):
                self.function.close()
        finally:
            self.close_backend()

    def close_backend(self) -> None:
        """Release the keyed state backend (a RocksDB backend's files); subclasses' close() must call it."""
        if self.backend is not None:
            self.backend.close()

    # -- records -----------------------------------------------------------------------------------
    def process_batch(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        raise TypeError(f"{type(self).__name__} takes no input")

    def process_batch1(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        self.process_batch(values, timestamps, keys)

    def process_batch2(self, values: list[Any], timestamps: list[Any] | None, keys: list[Any] | None) -> None:
        raise TypeError(f"{type(self).__name__} has one input")

    # -- watermarks and timers ---------------------------------------------------------------------
    def process_watermark(self, timestamp: int) -> None:
        if timestamp <= self.current_watermark:
            return
        self.current_watermark = timestamp
        if self.timer_service is not None:
            self.timer_service.advance_watermark(timestamp)
        self.output.emit_watermark(timestamp)

    def process_watermark1(self, timestamp: int) -> None:
        self._input_watermarks[0] = timestamp
        self.process_watermark(min(self._input_watermarks))

    def process_watermark2(self, timestamp: int) -> None:
        self._input_watermarks[1] = timestamp
        self.process_watermark(min(self._input_watermarks))

    def process_status(self, idle: bool) -> None:
        self.output.emit_status(idle)

    def on_event_time(self, timer: InternalTimer) -> None:
        """An event-time timer fired; the timer's key is current."""

    def on_processing_time(self, timer: InternalTimer) -> None:
        """A processing-time timer fired; the timer's key is current."""

    def keys_for(self, values: list[Any], keys: list[Any] | None, input_index: int = 0) -> list[Any]:
        if keys is not None:
            return detached(keys)  # a Row key may be the record itself, which the function may assign to
        sel = self.key_selectors[input_index]
        if sel is None:
            return [None] * len(values)
        get_key = sel.get_key
        ks = detached([get_key(v) for v in values])
        try:
            deque(map(hash, ks), maxlen=0)  # C-level: every key hashable (the common case) costs no Python loop
        except TypeError:  # a list, dict or set key: keyed by value as a FrozenKey
            freeze = self.backend.key_groups.freeze if self.backend is not None else freeze_key
            ks = [freeze(k) for k in ks]
        if not self._key_types_checked.issuperset(map(type, ks)):
            self._check_new_key_types(ks)
        return ks

    def _check_new_key_types(self, keys: list[Any]) -> None:
        """Keys computed here (one consumer subtask: no sender hashed them) are hashed once per new type,
        so that a key with no stable hash (an identity object) fails the job naming its key selector
        instead of keying state by object identity."""
        checked = self._key_types_checked
        for k in keys:
            if type(k) not in checked:
                if self.backend is not None:
                    self.backend.key_groups.key_group(k)
                checked.add(type(k))


class _FunctionInitializationContext:
    def __init__(self, store: DefaultOperatorStateStore, backend: Any) -> None:
        self._store = store
        self._backend = backend

    def get_operator_state_store(self) -> DefaultOperatorStateStore:
        return self._store

    def get_keyed_state_store(self) -> Any:
        return self._backend

    def is_restored(self) -> bool:
        return self._store.is_restored


def results_of(result: Any) -> Any:
    """PyFlink functions return an iterable, a generator, or None."""
    return () if result is None else result
