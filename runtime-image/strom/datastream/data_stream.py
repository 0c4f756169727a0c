"""DataStream, KeyedStream, ConnectedStreams and friends (`pyflink.datastream.data_stream`).

Each method records a transformation in the environment; nothing runs until
`env.execute()`. Misuse that Flink rejects (state on a non-keyed stream, window on a
non-keyed stream, forward with unequal parallelism) is rejected here or when the
graph is built, naming the operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from strom.common.row import Row
from strom.common.time import Duration, to_millis
from strom.common.typeinfo import TypeInformation, check_type_info
from strom.connectors.sink_base import Sink
from strom.datastream.functions import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FlatMapFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    MapFunction,
    ProcessFunction,
    ProcessJoinFunction,
    as_filter_function,
    as_flat_map_function,
    as_key_selector,
    as_map_function,
    as_reduce_function,
    as_sink_function,
)
from strom.datastream.output_tag import OutputTag
from strom.graph.transformations import (
    CHAIN_ALWAYS,
    CHAIN_HEAD,
    CHAIN_NEVER,
    OperatorDescriptor,
    PartitionerSpec,
    Transformation,
)

if TYPE_CHECKING:
    from strom.datastream.stream_execution_environment import StreamExecutionEnvironment
    from strom.datastream.window import AllWindowedStream, WindowedStream


class DataStream:
    """A stream of records of one type, as produced by one transformation."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._t = transformation

    # -- properties of the underlying operator ---------------------------------------------------
    def get_name(self) -> str:
        return self._t.name

    def name(self, name: str) -> DataStream:
        self._t.name = name
        return self

    def uid(self, uid: str) -> DataStream:
        self._t.uid = uid
        return self

    def get_type(self) -> TypeInformation | None:
        return self._t.output_type

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def set_parallelism(self, parallelism: int) -> DataStream:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"operator {self._t.name!r}: parallelism must be a positive integer, got {parallelism!r}")
        if self._t.parallelism_fixed and parallelism != 1:
            raise ValueError(f"operator {self._t.name!r} is non-parallel; its parallelism must be 1")
        self._t.parallelism = parallelism
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise ValueError(f"operator {self._t.name!r}: max parallelism must be in [1, 32768]")
        self._t.max_parallelism = max_parallelism
        return self

    def get_parallelism(self) -> int:
        return self._t.parallelism or self._env.get_parallelism()

    def slot_sharing_group(self, slot_sharing_group: str | Any) -> DataStream:
        self._t.slot_sharing_group = getattr(slot_sharing_group, "get_name", lambda: slot_sharing_group)()
        return self

    def start_new_chain(self) -> DataStream:
        self._t.chaining_strategy = CHAIN_HEAD
        return self

    def disable_chaining(self) -> DataStream:
        self._t.chaining_strategy = CHAIN_NEVER
        return self

    def force_non_parallel(self) -> DataStream:
        self._t.parallelism = 1
        self._t.max_parallelism = 1
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        return self

    def set_description(self, description: str) -> DataStream:
        return self

    # -- building blocks -------------------------------------------------------------------------
    def _one_input(
        self,
        name: str,
        operator: OperatorDescriptor,
        output_type: TypeInformation | None = None,
        *,
        key_selectors: tuple[Any, ...] = (),
        parallelism: int | None = None,
    ) -> Transformation:
        t = self._env._new_transformation(
            name=name,
            kind="one_input",
            inputs=[self._t],
            operator=operator,
            parallelism=parallelism,
            output_type=check_type_info(output_type, argument="output_type"),
            key_selectors=key_selectors,
        )
        return t

    def _partition(self, spec: PartitionerSpec) -> DataStream:
        t = self._env._new_transformation(name=spec.kind.upper(), kind="partition", inputs=[self._t], partitioner=spec)
        t.output_type = self._t.output_type
        return DataStream(self._env, t)

    # -- stateless transformations ---------------------------------------------------------------
    def map(self, func: MapFunction | Callable[[Any], Any], output_type: TypeInformation | None = None) -> DataStream:
        fn = as_map_function(func)
        return DataStream(self._env, self._one_input("Map", OperatorDescriptor("map", fn), output_type))

    def flat_map(
        self, func: FlatMapFunction | Callable[[Any], Any], output_type: TypeInformation | None = None
    ) -> DataStream:
        fn = as_flat_map_function(func)
        return DataStream(self._env, self._one_input("Flat Map", OperatorDescriptor("flat_map", fn), output_type))

    def filter(self, func: Any) -> DataStream:
        fn = as_filter_function(func)
        t = self._one_input("Filter", OperatorDescriptor("filter", fn), self._t.output_type)
        return DataStream(self._env, t)

    def process(self, func: ProcessFunction, output_type: TypeInformation | None = None) -> DataStream:
        if isinstance(func, KeyedProcessFunction):
            raise TypeError("process(): a KeyedProcessFunction needs a keyed stream; call key_by(...) before process()")
        if not isinstance(func, ProcessFunction):
            raise TypeError(f"process() expects a ProcessFunction, got {type(func).__name__}")
        return DataStream(self._env, self._one_input("Process", OperatorDescriptor("process", func), output_type))

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> DataStream:
        t = self._one_input(
            "Timestamps/Watermarks",
            OperatorDescriptor("timestamps_watermarks", params={"watermark_strategy": watermark_strategy}),
            self._t.output_type,
        )
        return DataStream(self._env, t)

    # -- partitioning ----------------------------------------------------------------------------
    def key_by(self, key_selector: Any, key_type: TypeInformation | None = None) -> KeyedStream:
        selector = as_key_selector(key_selector)
        spec = PartitionerSpec("hash", key_selector=selector)
        t = self._env._new_transformation(name="HASH", kind="partition", inputs=[self._t], partitioner=spec)
        t.output_type = self._t.output_type
        return KeyedStream(self._env, t, selector, key_type, origin=self)

    def forward(self) -> DataStream:
        return self._partition(PartitionerSpec("forward"))

    def rebalance(self) -> DataStream:
        return self._partition(PartitionerSpec("rebalance"))

    def rescale(self) -> DataStream:
        return self._partition(PartitionerSpec("rescale"))

    def shuffle(self) -> DataStream:
        return self._partition(PartitionerSpec("shuffle"))

    def global_(self) -> DataStream:
        return self._partition(PartitionerSpec("global"))

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        part = partitioner if hasattr(partitioner, "partition") else _CallablePartitioner(partitioner)
        spec = PartitionerSpec("custom", key_selector=as_key_selector(key_selector), custom_partitioner=part)
        return self._partition(spec)

    def broadcast(self, broadcast_state_descriptor: Any = None, *more: Any) -> Any:
        """Without arguments: broadcast partitioning. With MapStateDescriptors: a BroadcastStream."""
        stream = self._partition(PartitionerSpec("broadcast"))
        if broadcast_state_descriptor is None:
            return stream
        return BroadcastStream(stream, [broadcast_state_descriptor, *more])

    def project(self, *field_indexes: int) -> DataStream:
        """PyFlink: "Initiates a Project transformation on a Tuple DataStream"; only tuple streams."""
        from strom.datastream.projection import Projection, projected_type

        out_type = projected_type(self._t.output_type, tuple(field_indexes))
        op = OperatorDescriptor("map", Projection(tuple(field_indexes)))
        return DataStream(self._env, self._one_input("Projection", op, out_type))

    # -- combining streams -----------------------------------------------------------------------
    def union(self, *streams: DataStream) -> DataStream:
        t = self._env._new_transformation(name="Union", kind="union", inputs=[self._t] + [s._t for s in streams])
        t.output_type = self._t.output_type
        return DataStream(self._env, t)

    def connect(self, ds: DataStream | BroadcastStream) -> Any:
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds)
        return ConnectedStreams(self, ds)

    def join(self, other_stream: DataStream) -> Any:
        from strom.datastream.joins import JoinedStreams

        return JoinedStreams(self, other_stream)

    def co_group(self, other_stream: DataStream) -> Any:
        from strom.datastream.joins import CoGroupedStreams

        return CoGroupedStreams(self, other_stream)

    def window_all(self, window_assigner: Any) -> AllWindowedStream:
        from strom.datastream.window import AllWindowedStream

        return AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int | None = None) -> AllWindowedStream:
        from strom.datastream.window import AllWindowedStream, count_window_parts

        assigner, trigger, evictor = count_window_parts(size, slide)
        return AllWindowedStream(self, assigner).trigger(trigger).evictor(evictor)

    def window(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"window() needs a keyed stream: operator {self._t.name!r} is not keyed; "
            "call key_by(...) first, or use window_all(...)"
        )

    # -- side outputs ----------------------------------------------------------------------------
    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        if not isinstance(output_tag, OutputTag):
            raise TypeError("get_side_output expects an OutputTag")
        t = self._env._new_transformation(
            name=f"SideOutput({output_tag.tag_id})", kind="side_output", inputs=[self._t], output_tag=output_tag
        )
        t.output_type = output_tag.type_info
        return DataStream(self._env, t)

    # -- sinks -----------------------------------------------------------------------------------
    def _sink(self, name: str, operator: OperatorDescriptor) -> DataStreamSink:
        t = self._env._new_transformation(name=name, kind="sink", inputs=[self._t], operator=operator)
        return DataStreamSink(self._env, t)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        return self._sink(
            "Sink: Print to Std. Out",
            OperatorDescriptor(
                "print", params={"identifier": sink_identifier, "stderr": False, "type_info": self._t.output_type}
            ),
        )

    def print_to_err(self, sink_identifier: str | None = None) -> DataStreamSink:
        return self._sink(
            "Sink: Print to Std. Err",
            OperatorDescriptor(
                "print", params={"identifier": sink_identifier, "stderr": True, "type_info": self._t.output_type}
            ),
        )

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        if isinstance(sink_func, Sink):
            return self.sink_to(sink_func)  # PyFlink's JdbcSink.sink(...) goes to add_sink; here it is a Sink
        return self._sink("Sink: Unnamed", OperatorDescriptor("sink_function", as_sink_function(sink_func)))

    def sink_to(self, sink: Any) -> DataStreamSink:
        name = getattr(sink, "sink_name", type(sink).__name__)
        bind = getattr(sink, "bind_input_type", None)
        if callable(bind):
            bind(self._t.output_type)  # a sink that writes text writes it as PyFlink's Java side would
        return self._sink(f"Sink: {name}", OperatorDescriptor("sink_v2", params={"sink": sink}))

    def execute_and_collect(self, job_execution_name: str | None = None, limit: int | None = None) -> Any:
        """Run the job and return its records: an iterator (usable as a context manager), or a
        list of at most `limit` records when `limit` is given."""
        from strom.datastream.collect import collect_results

        return collect_results(self, job_execution_name, limit)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._t.name!r})"


class DataStreamSink:
    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._t = transformation

    def name(self, name: str) -> DataStreamSink:
        self._t.name = name
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._t.uid = uid
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"operator {self._t.name!r}: parallelism must be a positive integer")
        self._t.parallelism = parallelism
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStreamSink:
        self._t.max_parallelism = max_parallelism
        return self

    def slot_sharing_group(self, group: str | Any) -> DataStreamSink:
        self._t.slot_sharing_group = getattr(group, "get_name", lambda: group)()  # a name or a SlotSharingGroup
        return self

    def disable_chaining(self) -> DataStreamSink:
        self._t.chaining_strategy = CHAIN_NEVER
        return self

    def start_new_chain(self) -> DataStreamSink:
        self._t.chaining_strategy = CHAIN_HEAD
        return self

    def set_description(self, description: str) -> DataStreamSink:
        return self


class KeyedStreamError(Exception):
    """A call PyFlink refuses on a KeyedStream (PyFlink raises a plain Exception with the same words)."""


_NO_REPARTITION = (
    "Cannot override partitioning for KeyedStream. Apply an operator after key_by (e.g. map) and re-partition "
    "its output, or partition before key_by"
)


def _not_on_keyed(what: str, way_out: str) -> str:
    return f"{what} for KeyedStream is not supported. To do so, {way_out}."


class _CallablePartitioner:
    def __init__(self, fn: Callable[[Any, int], int]) -> None:
        self.fn = fn

    def partition(self, key: Any, num_partitions: int) -> int:
        return self.fn(key, num_partitions)


class KeyedStream(DataStream):
    """A stream partitioned by key: keyed state, timers and windows become available."""

    def __init__(
        self,
        env: StreamExecutionEnvironment,
        transformation: Transformation,
        key_selector: Any,
        key_type: TypeInformation | None,
        *,
        origin: DataStream,
    ) -> None:
        super().__init__(env, transformation)
        self._key_selector = key_selector
        self._key_type = key_type
        self._origin = origin

    def get_key_selector(self) -> Any:
        return self._key_selector

    def execute_and_collect(self, job_execution_name: str | None = None, limit: int | None = None) -> Any:
        """PyFlink's KeyedStream carries `Row(key, value)` records (its key_by maps every value to one; its
        `_values()` strips the key again for the operators after it), and `execute_and_collect`, inherited
        from DataStream, yields those records as they are: `Row(f0=key, f1=value)`. So does Strom."""
        selector = self._key_selector
        pairs = self._origin.map(lambda value: Row(f0=selector.get_key(value), f1=value))
        return pairs.execute_and_collect(job_execution_name, limit)

    def _keyed(self, name: str, operator: OperatorDescriptor, output_type: TypeInformation | None) -> Transformation:
        return self._one_input(name, operator, output_type, key_selectors=(self._key_selector,))

    # A KeyedStream is a virtual partition, not an operator: PyFlink refuses to name or configure it
    # ("Set name for KeyedStream is not supported.") and to re-partition it ("Cannot override
    # partitioning for KeyedStream."); Strom refuses the same calls, with the way out in the message.
    def set_parallelism(self, parallelism: int) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set parallelism", "set it on the operator after key_by"))

    def set_max_parallelism(self, max_parallelism: int) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set max parallelism", "set it on the operator after key_by"))

    def name(self, name: str) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set name", "name the operator before or after key_by"))

    def get_name(self) -> str:
        raise KeyedStreamError("Get name of KeyedStream is not supported. To do so, ask the operator before key_by.")

    def uid(self, uid: str) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set uid", "set it on the operator before or after key_by"))

    def set_uid_hash(self, uid_hash: str) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set uid hash", "set it on the operator before or after key_by"))

    def force_non_parallel(self) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set force non-parallel", "call it on the operator after key_by"))

    def set_buffer_timeout(self, timeout_millis: int) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Set buffer timeout", "call it on the operator after key_by"))

    def start_new_chain(self) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Start new chain", "call it on the operator after key_by"))

    def disable_chaining(self) -> KeyedStream:
        raise KeyedStreamError(_not_on_keyed("Disable chaining", "call it on the operator after key_by"))

    def slot_sharing_group(self, slot_sharing_group: str | Any) -> KeyedStream:
        raise KeyedStreamError(
            "Setting slot sharing group for KeyedStream is not supported. To do so, set it on the operator after "
            "key_by."
        )

    def forward(self) -> DataStream:
        raise KeyedStreamError(_NO_REPARTITION)

    def rebalance(self) -> DataStream:
        raise KeyedStreamError(_NO_REPARTITION)

    def rescale(self) -> DataStream:
        raise KeyedStreamError(_NO_REPARTITION)

    def shuffle(self) -> DataStream:
        raise KeyedStreamError(_NO_REPARTITION)

    def global_(self) -> DataStream:
        raise KeyedStreamError(_NO_REPARTITION)

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        raise KeyedStreamError(_NO_REPARTITION)

    def broadcast(self, broadcast_state_descriptor: Any = None, *more: Any) -> Any:
        raise KeyedStreamError(_NO_REPARTITION)

    def map(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        return DataStream(self._env, self._keyed("Map", OperatorDescriptor("map", as_map_function(func)), output_type))

    def flat_map(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        op = OperatorDescriptor("flat_map", as_flat_map_function(func))
        return DataStream(self._env, self._keyed("Flat Map", op, output_type))

    def filter(self, func: Any) -> DataStream:
        op = OperatorDescriptor("filter", as_filter_function(func))
        return DataStream(self._env, self._keyed("Filter", op, self._t.output_type))

    def process(
        self, func: KeyedProcessFunction | ProcessFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, KeyedProcessFunction | ProcessFunction):
            raise TypeError(f"process() expects a KeyedProcessFunction, got {type(func).__name__}")
        return DataStream(
            self._env, self._keyed("KeyedProcess", OperatorDescriptor("keyed_process", func), output_type)
        )

    def reduce(self, func: Any) -> DataStream:
        op = OperatorDescriptor("reduce", as_reduce_function(func))
        return DataStream(self._env, self._keyed("Keyed Reduce", op, self._t.output_type))

    def _aggregation(self, name: str, kind: str, position: int | str) -> DataStream:
        op = OperatorDescriptor("aggregation", params={"agg": kind, "position": position})
        return DataStream(self._env, self._keyed(name, op, self._t.output_type))

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self._aggregation("Keyed Aggregation", "sum", position_to_sum)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self._aggregation("Keyed Aggregation", "min", position_to_min)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self._aggregation("Keyed Aggregation", "max", position_to_max)

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        return self._aggregation("Keyed Aggregation", "min_by", position_to_min_by)

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self._aggregation("Keyed Aggregation", "max_by", position_to_max_by)

    def window(self, window_assigner: Any) -> WindowedStream:
        from strom.datastream.window import WindowedStream

        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream:
        from strom.datastream.window import WindowedStream, count_window_parts

        assigner, trigger, evictor = count_window_parts(size, slide)
        return WindowedStream(self, assigner).trigger(trigger).evictor(evictor)

    def interval_join(self, other: KeyedStream) -> IntervalJoin:
        if not isinstance(other, KeyedStream):
            raise TypeError("interval_join() needs a KeyedStream on both sides")
        return IntervalJoin(self, other)


class IntervalJoin:
    def __init__(self, left: KeyedStream, right: KeyedStream) -> None:
        self._left = left
        self._right = right

    def between(self, lower_bound: Duration | int, upper_bound: Duration | int) -> IntervalJoined:
        lo = to_millis(lower_bound, what="lower bound")
        hi = to_millis(upper_bound, what="upper bound")
        if lo > hi:
            raise ValueError(f"interval_join: lower bound {lo} ms must not exceed upper bound {hi} ms")
        return IntervalJoined(self._left, self._right, lo, hi)


class IntervalJoined:
    def __init__(self, left: KeyedStream, right: KeyedStream, lower: int, upper: int) -> None:
        self._left, self._right = left, right
        self._lower, self._upper = lower, upper
        self._lower_inclusive = True
        self._upper_inclusive = True
        self._left_late: OutputTag | None = None
        self._right_late: OutputTag | None = None

    def lower_bound_exclusive(self) -> IntervalJoined:
        self._lower_inclusive = False
        return self

    def upper_bound_exclusive(self) -> IntervalJoined:
        self._upper_inclusive = False
        return self

    def side_output_left_late_data(self, output_tag: OutputTag) -> IntervalJoined:
        self._left_late = output_tag
        return self

    def side_output_right_late_data(self, output_tag: OutputTag) -> IntervalJoined:
        self._right_late = output_tag
        return self

    def process(self, process_join_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(process_join_function, ProcessJoinFunction):
            raise TypeError("interval_join(...).process() expects a ProcessJoinFunction")
        env = self._left._env
        op = OperatorDescriptor(
            "interval_join",
            process_join_function,
            params={
                "lower": self._lower if self._lower_inclusive else self._lower + 1,
                "upper": self._upper if self._upper_inclusive else self._upper - 1,
                "left_late": self._left_late,
                "right_late": self._right_late,
            },
        )
        t = env._new_transformation(
            name="IntervalJoin",
            kind="two_input",
            inputs=[self._left._t, self._right._t],
            operator=op,
            output_type=output_type,
            key_selectors=(self._left._key_selector, self._right._key_selector),
        )
        return DataStream(env, t)


class ConnectedStreams:
    """Two streams of possibly different types processed by one two-input operator."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2
        self._env = stream1._env

    def _is_keyed(self) -> bool:
        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: TypeInformation | None = None
    ) -> ConnectedStreams:
        return ConnectedStreams(
            self.stream1.key_by(key_selector1, key_type), self.stream2.key_by(key_selector2, key_type)
        )

    def _two_input(self, name: str, op: OperatorDescriptor, output_type: TypeInformation | None) -> DataStream:
        keys: tuple[Any, ...] = ()
        if self._is_keyed():
            keys = (self.stream1._key_selector, self.stream2._key_selector)  # type: ignore[attr-defined]
        t = self._env._new_transformation(
            name=name,
            kind="two_input",
            inputs=[self.stream1._t, self.stream2._t],
            operator=op,
            output_type=check_type_info(output_type, argument="output_type"),
            key_selectors=keys,
        )
        return DataStream(self._env, t)

    def map(self, func: CoMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, CoMapFunction):
            raise TypeError("ConnectedStreams.map() expects a CoMapFunction")
        return self._two_input("Co-Map", OperatorDescriptor("co_map", func), output_type)

    def flat_map(self, func: CoFlatMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, CoFlatMapFunction):
            raise TypeError("ConnectedStreams.flat_map() expects a CoFlatMapFunction")
        return self._two_input("Co-Flat Map", OperatorDescriptor("co_flat_map", func), output_type)

    def process(
        self, func: CoProcessFunction | KeyedCoProcessFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if isinstance(func, KeyedCoProcessFunction):
            if not self._is_keyed():
                raise TypeError("a KeyedCoProcessFunction needs both connected streams keyed: use key_by(k1, k2)")
            return self._two_input("KeyedCoProcess", OperatorDescriptor("keyed_co_process", func), output_type)
        if not isinstance(func, CoProcessFunction):
            raise TypeError("ConnectedStreams.process() expects a CoProcessFunction or KeyedCoProcessFunction")
        kind = "keyed_co_process" if self._is_keyed() else "co_process"
        return self._two_input("Co-Process", OperatorDescriptor(kind, func), output_type)


class BroadcastStream:
    def __init__(self, stream: DataStream, descriptors: list[Any]) -> None:
        self.stream = stream
        self.broadcast_state_descriptors = descriptors


class BroadcastConnectedStream:
    def __init__(self, non_broadcast: DataStream, broadcast: BroadcastStream) -> None:
        self.non_broadcast_stream = non_broadcast
        self.broadcast_stream = broadcast
        self._env = non_broadcast._env

    def process(self, func: BroadcastProcessFunction, output_type: TypeInformation | None = None) -> DataStream:
        keyed = isinstance(self.non_broadcast_stream, KeyedStream)
        if isinstance(func, KeyedBroadcastProcessFunction) and not keyed:
            raise TypeError("a KeyedBroadcastProcessFunction needs a keyed non-broadcast stream")
        if not isinstance(func, BroadcastProcessFunction):
            raise TypeError("BroadcastConnectedStream.process() expects a (Keyed)BroadcastProcessFunction")
        if keyed and not isinstance(func, KeyedBroadcastProcessFunction):
            raise TypeError("a keyed stream connected to a broadcast stream needs a KeyedBroadcastProcessFunction")
        kind = "keyed_broadcast_process" if keyed else "broadcast_process"
        op = OperatorDescriptor(kind, func, params={"descriptors": self.broadcast_stream.broadcast_state_descriptors})
        keys = (self.non_broadcast_stream._key_selector, None) if keyed else ()  # type: ignore[attr-defined]
        t = self._env._new_transformation(
            name="Co-Process-Broadcast" + ("-Keyed" if keyed else ""),
            kind="two_input",
            inputs=[self.non_broadcast_stream._t, self.broadcast_stream.stream._t],
            operator=op,
            output_type=check_type_info(output_type, argument="output_type"),
            key_selectors=keys,
        )
        return DataStream(self._env, t)


__all__ = [
    "BroadcastConnectedStream",
    "BroadcastStream",
    "CHAIN_ALWAYS",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "IntervalJoin",
    "KeyedStream",
]


def __getattr__(name: str) -> Any:
    """PyFlink's module path for the windowed streams (`pyflink.datastream.data_stream.WindowedStream`) and the
    iterator of execute_and_collect; they live in strom.datastream.window and .collect, which import this module,
    so they are looked up on first use."""
    if name in ("WindowedStream", "AllWindowedStream"):
        from strom.datastream import window

        return getattr(window, name)
    if name == "CloseableIterator":
        from strom.datastream.collect import CloseableIterator

        return CloseableIterator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
