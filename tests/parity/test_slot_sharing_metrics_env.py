"""SlotSharingGroup, strom.metrics, ExecutionConfig and the environment's remaining PyFlink calls (issue 18).

PyFlink documents `DataStream.slot_sharing_group(slot_sharing_group)`: "Sets the slot sharing group
of this operation. Parallel instances of operations that are in the same slot sharing group will be
co-located in the same TaskManager slot, if possible. Operations inherit the slot sharing group of
input operations if all input operations are in the same slot sharing group and no slot sharing
group was explicitly specified." and `SlotSharingGroup.builder(name)` with CPU cores and memory;
`RuntimeContext.get_metrics_group()` "Gets the metric group." (pyflink.metrics.MetricGroup with
counter, gauge, meter, distribution).
"""

from __future__ import annotations

from typing import Any

import pytest
from strom.common import ExecutionConfig, ExecutionMode, Types
from strom.datastream import StreamExecutionEnvironment, TimeCharacteristic
from strom.datastream.functions import MapFunction, RuntimeContext
from strom.datastream.slot_sharing_group import MemorySize, SlotSharingGroup
from strom.graph.job_graph import create_job_graph
from strom.metrics import Counter, Distribution, Gauge, Meter, MetricGroup


def test_slot_sharing_groups_are_scheduled_by_name() -> None:
    """Two groups at parallelism 2: the job needs 2 + 2 slots, and operators of different groups are not chained."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    heavy = SlotSharingGroup.builder("heavy").set_cpu_cores(1.0).set_task_heap_memory_mb(100).build()
    env.register_slot_sharing_group(heavy)
    src = env.from_sequence(1, 100)
    doubled = src.map(lambda v: v * 2).slot_sharing_group(heavy)
    doubled.map(lambda v: v + 1).print()
    graph = env.get_stream_graph()
    groups = {n.name: n.slot_sharing_group for n in graph.nodes.values()}
    assert set(groups.values()) == {"default", "heavy"}
    job_graph = create_job_graph(graph)
    assert job_graph.required_slots() == 4
    assert all(len({graph.nodes[i].slot_sharing_group for i in v.node_ids()}) == 1 for v in job_graph.vertices)


def test_a_job_with_two_slot_sharing_groups_computes_what_plain_python_does() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    out = env.from_collection(list(range(50)), Types.INT()).map(lambda v: v * 2, Types.INT())
    out = out.slot_sharing_group(SlotSharingGroup.builder("g").build()).map(lambda v: v + 1, Types.INT())
    assert sorted(out.execute_and_collect()) == [v * 2 + 1 for v in range(50)]


def test_slot_sharing_group_builder_follows_flinks_rules() -> None:
    ssg = (
        SlotSharingGroup.builder("ssg")
        .set_cpu_cores(2.5)
        .set_task_heap_memory(MemorySize.of_mebi_bytes(256))
        .set_managed_memory_mb(64)
        .set_external_resource("gpu", 1)
        .build()
    )
    assert (ssg.get_name(), ssg.get_cpu_cores(), ssg.get_task_heap_memory().get_mebi_bytes()) == ("ssg", 2.5, 256)
    assert ssg.get_managed_memory() == MemorySize(64 << 20) and ssg.get_external_resources() == {"gpu": 1.0}
    with pytest.raises(ValueError, match="both cpu cores and task heap memory"):
        SlotSharingGroup.builder("x").set_cpu_cores(1).build()
    with pytest.raises(Exception, match="slot sharing group for KeyedStream"):  # noqa: PT011
        keyed = StreamExecutionEnvironment.get_execution_environment().from_sequence(1, 2).key_by(lambda v: v)
        keyed.slot_sharing_group(ssg)


class Measured(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        group = runtime_context.get_metrics_group()
        assert isinstance(group, MetricGroup)
        self.seen = group.add_group("parity").counter("seen")
        self.rate = group.meter("rate", 60)
        self.sizes = group.distribution("sizes")
        self.last = 0
        self.gauge = group.gauge("last", lambda: self.last)

    def map(self, value: Any) -> Any:
        self.seen.inc()
        self.rate.mark_event()
        self.sizes.update(value)
        self.last = value
        assert isinstance(self.seen, Counter) and isinstance(self.rate, Meter)
        assert isinstance(self.sizes, Distribution) and isinstance(self.gauge, Gauge)
        return self.seen.get_count(), self.gauge.get_value()


def test_user_metrics_are_pyflinks_metric_types() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    out = env.from_collection([5, 7, 9], Types.INT()).map(Measured())
    assert sorted(out.execute_and_collect()) == [(1, 5), (2, 7), (3, 9)]


def test_environment_calls_pyflink_has() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_stream_time_characteristic(TimeCharacteristic.ProcessingTime)
    assert env.get_stream_time_characteristic() is TimeCharacteristic.ProcessingTime
    assert env.is_changelog_state_backend_enabled() is None
    env.enable_changelog_state_backend(True)
    assert env.is_changelog_state_backend_enabled() is True
    env.set_default_local_parallelism(3)
    try:
        assert StreamExecutionEnvironment.get_execution_environment().get_parallelism() == 3
    finally:
        import strom.datastream.stream_execution_environment as see

        see._default_local_parallelism = None
    with pytest.raises(ValueError, match="positive integer"):
        env.set_default_local_parallelism(0)


def test_execution_config_getters_and_setters() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    cfg = env.get_config()
    assert isinstance(cfg, ExecutionConfig)
    cfg.set_auto_watermark_interval(500).set_parallelism(4).set_max_parallelism(64).enable_object_reuse()
    assert (cfg.get_auto_watermark_interval(), env.get_parallelism(), env.get_max_parallelism()) == (500, 4, 64)
    assert cfg.is_object_reuse_enabled()
    cfg.disable_closure_cleaner().set_latency_tracking_interval(100).disable_generic_types().enable_force_kryo()
    cfg.set_execution_mode(ExecutionMode.BATCH).register_kryo_type("java.lang.String")
    assert not cfg.is_closure_cleaner_enabled() and cfg.get_latency_tracking_interval() == 100
    assert cfg.has_generic_types_disabled() and cfg.is_force_kryo_enabled()
    assert cfg.get_execution_mode() is ExecutionMode.BATCH and cfg.get_registered_kryo_types() == ["java.lang.String"]
    cfg.set_global_job_parameters({"a": 1})
    assert cfg.get_global_job_parameters() == {"a": "1"}


class ReadsAParameter(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.factor = int(runtime_context.get_job_parameter("factor", "1"))
        self.missing = runtime_context.get_job_parameter("absent", "fallback")

    def map(self, value: Any) -> Any:
        return value * self.factor, self.missing


def test_global_job_parameters_reach_every_function() -> None:
    """PyFlink: RuntimeContext.get_job_parameter "Gets the global job parameter value associated with the given
    key as a string." (set with ExecutionConfig.set_global_job_parameters)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.get_config().set_global_job_parameters({"factor": 3})
    out = env.from_collection([1, 2, 3], Types.INT()).rebalance().map(ReadsAParameter())
    assert sorted(out.execute_and_collect()) == [(3, "fallback"), (6, "fallback"), (9, "fallback")]
    assert env.get_configuration().get("pipeline.global-job-parameters") == {"factor": "3"}
