"""Operator (non-keyed) state through CheckpointedFunction, and its redistribution modes."""

from strom.datastream import CheckpointedFunction, MapFunction, StreamExecutionEnvironment
from strom.datastream.state import ListStateDescriptor
from strom.runtime.state.operator_state import SPLIT_DISTRIBUTE, UNION, redistribute
from strom.testing import collect


class BufferingMap(MapFunction, CheckpointedFunction):
    def initialize_state(self, context):
        store = context.get_operator_state_store()
        self.seen = store.get_list_state(ListStateDescriptor("seen"))
        self.everyone = store.get_union_list_state(ListStateDescriptor("everyone"))
        self.restored = context.is_restored()

    def snapshot_state(self, context):
        pass

    def map(self, value):
        self.seen.add(value)
        return (value, len(self.seen.get()), self.restored)


def test_checkpointed_function_gets_operator_state_before_open():
    env = StreamExecutionEnvironment.get_execution_environment()
    out = collect(env.from_collection(["a", "b", "c"]).map(BufferingMap()))
    assert out == [("a", 1, False), ("b", 2, False), ("c", 3, False)]


def test_even_split_redistribution_divides_items():
    old = [{"s": (SPLIT_DISTRIBUTE, [1, 2, 3])}, {"s": (SPLIT_DISTRIBUTE, [4, 5])}]
    new = redistribute(old, 3)
    parts = [n["s"][1] for n in new]
    assert sorted(v for p in parts for v in p) == [1, 2, 3, 4, 5]
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1


def test_union_redistribution_gives_everything_to_everyone():
    old = [{"u": (UNION, [1])}, {"u": (UNION, [2, 3])}]
    new = redistribute(old, 2)
    assert [sorted(n["u"][1]) for n in new] == [[1, 2, 3], [1, 2, 3]]


def test_execute_async_returns_a_job_client():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).map(lambda v: v).print()
    client = env.execute_async("async")
    result = client.get_job_execution_result(timeout=30)
    assert result.get_job_id() == client.get_job_id()
    assert client.get_job_status().result() == "FINISHED"  # a future of JobStatus, as in PyFlink
