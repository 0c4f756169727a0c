"""User function interfaces (`pyflink.datastream.functions`).

Every interface may be replaced by a plain callable where PyFlink allows one; the
API wraps callables into these classes once, when the graph is built, so the
runtime calls one bound method per record.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from strom.datastream.output_tag import OutputTag
    from strom.datastream.state import (
        AggregatingState,
        AggregatingStateDescriptor,
        BroadcastState,
        ListState,
        ListStateDescriptor,
        MapState,
        MapStateDescriptor,
        ReadOnlyBroadcastState,
        ReducingState,
        ReducingStateDescriptor,
        ValueState,
        ValueStateDescriptor,
    )

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
ACC = TypeVar("ACC")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
W = TypeVar("W")  # the window type
W2 = TypeVar("W2")  # the window type of a Context (PyFlink declares Contexts generic on their own)


class TimeDomain:
    EVENT_TIME = 0
    PROCESSING_TIME = 1


class RuntimeContext(ABC):
    """What a function sees of the task running it: identity, parallelism, keyed state, metrics."""

    @abstractmethod
    def get_task_name(self) -> str:
        """The task's name."""

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int:
        """The operator's parallelism."""

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int:
        """The operator's max parallelism (number of key groups)."""

    @abstractmethod
    def get_index_of_this_subtask(self) -> int:
        """0-based index of this parallel subtask."""

    @abstractmethod
    def get_attempt_number(self) -> int:
        """How many times this subtask has been restarted."""

    @abstractmethod
    def get_task_name_with_subtasks(self) -> str:
        """'name (i/n)'."""

    @abstractmethod
    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        """A job parameter from the configuration."""

    @abstractmethod
    def get_metrics_group(self) -> Any:
        """The operator's metric group."""

    @abstractmethod
    def get_state(self, state_descriptor: ValueStateDescriptor) -> ValueState:
        """Keyed value state."""

    @abstractmethod
    def get_list_state(self, state_descriptor: ListStateDescriptor) -> ListState:
        """Keyed list state."""

    @abstractmethod
    def get_map_state(self, state_descriptor: MapStateDescriptor) -> MapState:
        """Keyed map state."""

    @abstractmethod
    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        """Keyed reducing state."""

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: AggregatingStateDescriptor) -> AggregatingState:
        """Keyed aggregating state."""


class Function(ABC):
    """Base of all user functions: `open` before the first record, `close` after the last."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


RichFunction = Function


class MapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def map(self, value: IN) -> OUT:
        """One output per input."""


class FlatMapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def flat_map(self, value: IN) -> Iterable[OUT]:
        """Zero or more outputs per input (return an iterable or yield)."""


class FilterFunction(Function, Generic[IN]):
    @abstractmethod
    def filter(self, value: IN) -> bool:
        """Keep the value when true."""


class KeySelector(Function, Generic[IN, KEY]):
    @abstractmethod
    def get_key(self, value: IN) -> KEY:
        """The key of a value."""


class ReduceFunction(Function, Generic[IN]):
    @abstractmethod
    def reduce(self, value1: IN, value2: IN) -> IN:
        """Combine two values into one of the same type."""


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    @abstractmethod
    def create_accumulator(self) -> ACC:
        """A fresh accumulator."""

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC:
        """Add a value; return the accumulator."""

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT:
        """The result from an accumulator."""

    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC:
        raise TypeError(f"{type(self).__name__}.merge is required for merging (session) windows")


class Partitioner(Function, Generic[KEY]):
    @abstractmethod
    def partition(self, key: KEY, num_partitions: int) -> int:
        """Target channel of a key."""


class SinkFunction(Function, Generic[IN]):
    """A sink: `invoke` per record (Flink's SinkFunction)."""

    @abstractmethod
    def invoke(self, value: IN, context: Any) -> None:
        """Write one record."""

    def finish(self) -> None:
        """Called at the end of a bounded input, before close."""


class SourceFunction(Function, Generic[OUT]):
    """A legacy source: `run(ctx)` calls `ctx.collect(v)` until done or `cancel()` is called."""

    @abstractmethod
    def run(self, ctx: Any) -> None:
        """Emit records through ctx.collect / ctx.collect_with_timestamp."""

    def cancel(self) -> None:
        pass


class BaseContext(ABC):
    @abstractmethod
    def timestamp(self) -> int | None:
        """Timestamp of the current element, or None."""

    @abstractmethod
    def timer_service(self) -> TimerService:
        """The timer service."""


class TimerService(ABC):
    @abstractmethod
    def current_processing_time(self) -> int:
        """Wall-clock milliseconds."""

    @abstractmethod
    def current_watermark(self) -> int:
        """The operator's current event time."""

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Fire on_timer when processing time reaches timestamp."""

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Fire on_timer when the watermark reaches timestamp."""

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Remove a processing-time timer of the current key."""

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        """Remove an event-time timer of the current key."""


class ProcessFunction(Function, Generic[IN, OUT]):
    class Context(BaseContext):
        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit to a side output."""

    @abstractmethod
    def process_element(self, value: IN, ctx: ProcessFunction.Context) -> Iterable[OUT] | None:
        """Yield zero or more outputs."""

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[OUT] | None:
        return None


class KeyedProcessFunction(Function, Generic[KEY, IN, OUT]):
    class Context(BaseContext):
        @abstractmethod
        def get_current_key(self) -> Any:
            """Key of the current element."""

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit to a side output."""

    class OnTimerContext(Context):
        @abstractmethod
        def time_domain(self) -> int:
            """TimeDomain of the firing timer."""

    @abstractmethod
    def process_element(self, value: IN, ctx: KeyedProcessFunction.Context) -> Iterable[OUT] | None:
        """Yield zero or more outputs."""

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterable[OUT] | None:
        return None


class CoMapFunction(Function):
    @abstractmethod
    def map1(self, value: Any) -> Any:
        """Map an element of the first input."""

    @abstractmethod
    def map2(self, value: Any) -> Any:
        """Map an element of the second input."""


class CoFlatMapFunction(Function):
    @abstractmethod
    def flat_map1(self, value: Any) -> Iterable[Any]:
        """Flat-map an element of the first input."""

    @abstractmethod
    def flat_map2(self, value: Any) -> Iterable[Any]:
        """Flat-map an element of the second input."""


class CoProcessFunction(Function):
    Context = ProcessFunction.Context

    @abstractmethod
    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        """Element of the first input."""

    @abstractmethod
    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        """Element of the second input."""

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        return None


class KeyedCoProcessFunction(Function):
    Context = KeyedProcessFunction.Context
    OnTimerContext = KeyedProcessFunction.OnTimerContext

    @abstractmethod
    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        """Element of the first input."""

    @abstractmethod
    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        """Element of the second input."""

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        return None


class ProcessJoinFunction(Function):
    @abstractmethod
    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterable[Any] | None:
        """A joined pair; ctx has left_timestamp(), right_timestamp(), timestamp(), output()."""


class JoinFunction(Function):
    @abstractmethod
    def join(self, value1: Any, value2: Any) -> Any:
        """One output per pair of the same key and window."""


class FlatJoinFunction(Function):
    @abstractmethod
    def join(self, value1: Any, value2: Any) -> Iterable[Any]:
        """Zero or more outputs per pair."""


class CoGroupFunction(Function):
    @abstractmethod
    def co_group(self, first: Iterable[Any], second: Iterable[Any]) -> Iterable[Any]:
        """All elements of both inputs for a key and window."""


class BaseBroadcastProcessFunction(Function):
    """What both broadcast process functions share: their contexts."""

    class BaseContext(BaseContext):
        pass

    class ReadOnlyContext(BaseContext):
        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> ReadOnlyBroadcastState:
            """Read-only broadcast state."""

    class Context(BaseContext):
        @abstractmethod
        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
            """Writable broadcast state."""


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    @abstractmethod
    def process_element(self, value: IN1, ctx: Any) -> Iterable[OUT] | None:
        """Element of the non-broadcast input."""

    @abstractmethod
    def process_broadcast_element(self, value: IN2, ctx: Any) -> Iterable[OUT] | None:
        """Element of the broadcast input."""


class KeyedBroadcastProcessFunction(BroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        @abstractmethod
        def get_current_key(self) -> Any:
            """Key of the current element."""

    class OnTimerContext(ReadOnlyContext):
        @abstractmethod
        def time_domain(self) -> int:
            """TimeDomain of the firing timer."""

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext) -> Iterable[OUT] | None:
        return None


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    @abstractmethod
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """All elements of a key's window."""


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    @abstractmethod
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """All elements of a window."""


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    class Context(ABC, Generic[W2]):
        @abstractmethod
        def window(self) -> Any:
            """The window being evaluated."""

        @abstractmethod
        def current_processing_time(self) -> int:
            """Wall-clock milliseconds."""

        @abstractmethod
        def current_watermark(self) -> int:
            """Current event time."""

        @abstractmethod
        def window_state(self) -> Any:
            """Keyed state scoped to this key and window."""

        @abstractmethod
        def global_state(self) -> Any:
            """Keyed state across windows."""

        @abstractmethod
        def output(self, output_tag: OutputTag, value: Any) -> None:
            """Emit to a side output."""

    @abstractmethod
    def process(self, key: Any, context: ProcessWindowFunction.Context, elements: Iterable[Any]) -> Iterable[Any]:
        """All elements (or the pre-aggregated result) of a key's window."""

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        pass


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    Context = ProcessWindowFunction.Context

    @abstractmethod
    def process(self, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        """All elements of a window."""

    def clear(self, context: Any) -> None:
        pass


class CheckpointedFunction(ABC):
    """Operator (non-keyed) state: `initialize_state` on start/restore, `snapshot_state` per checkpoint."""

    @abstractmethod
    def snapshot_state(self, context: Any) -> None:
        """Write operator state for a checkpoint."""

    @abstractmethod
    def initialize_state(self, context: Any) -> None:
        """Get state handles via context.get_operator_state_store()."""


class CheckpointListener(ABC):
    @abstractmethod
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """A checkpoint completed."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        pass


# -- wrapping plain callables ------------------------------------------------------------------
def _wrap(base: type, method: str, fn: Callable[..., Any], kind: str) -> Any:
    if isinstance(fn, base):
        return fn
    if isinstance(fn, Function) and hasattr(fn, method):
        return fn
    if not callable(fn):
        raise TypeError(f"{kind} expects a {base.__name__} or a callable, got {type(fn).__name__}")
    wrapper = type(f"Lambda{base.__name__}", (base,), {method: staticmethod(fn)})
    obj = wrapper()
    obj.__dict__["_user_callable"] = fn
    return obj


def as_map_function(fn: Any) -> MapFunction:
    return _wrap(MapFunction, "map", fn, "map")


def as_flat_map_function(fn: Any) -> FlatMapFunction:
    return _wrap(FlatMapFunction, "flat_map", fn, "flat_map")


def as_filter_function(fn: Any) -> FilterFunction:
    return _wrap(FilterFunction, "filter", fn, "filter")


def as_key_selector(fn: Any) -> KeySelector:
    return _wrap(KeySelector, "get_key", fn, "key_by")


def as_reduce_function(fn: Any) -> ReduceFunction:
    return _wrap(ReduceFunction, "reduce", fn, "reduce")


def as_sink_function(fn: Any) -> SinkFunction:
    if isinstance(fn, SinkFunction):
        return fn
    if not callable(fn):
        raise TypeError(f"add_sink expects a SinkFunction or a callable, got {type(fn).__name__}")
    return _wrap(SinkFunction, "invoke", lambda value, context: fn(value), "add_sink")



_ASYNC_NAMES = frozenset({"AsyncFunction", "AsyncRetryPredicate", "AsyncRetryStrategy"})


def __getattr__(name: str) -> Any:
    """PyFlink 2.x has AsyncFunction and the retry contracts in this module; they live in async_functions,
    which subclasses Function from here (so they are looked up lazily, not imported at the top)."""
    if name in _ASYNC_NAMES:
        from strom.datastream import async_functions

        return getattr(async_functions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
