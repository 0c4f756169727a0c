"""Keyed state of every type, checked against a plain-Python reference per key."""

import pytest
from strom.common.key_groups import KeyGroupRange
from strom.common.typeinfo import Types
from strom.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from strom.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from strom.runtime.local_executor import JobExecutionError
from strom.runtime.state.heap.backend import HeapKeyedStateBackend
from strom.runtime.tasks.processing_time import ManualClock
from strom.testing import collect

EVENTS = [(f"k{i % 5}", (i * 37) % 11) for i in range(200)]


class AvgAgg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class AllStates(KeyedProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.last3 = ctx.get_list_state(ListStateDescriptor("last3", Types.LONG()))
        self.freq = ctx.get_map_state(MapStateDescriptor("freq", Types.LONG(), Types.LONG()))
        self.total = ctx.get_reducing_state(ReducingStateDescriptor("total", lambda a, b: a + b, Types.LONG()))
        self.avg = ctx.get_aggregating_state(AggregatingStateDescriptor("avg", AvgAgg(), Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        key, v = value
        assert ctx.get_current_key() == key
        self.count.update((self.count.value() or 0) + 1)
        items = list(self.last3.get()) + [v]
        self.last3.update(items[-3:])
        self.freq.put(v, (self.freq.get(v) or 0) + 1)
        self.total.add(v)
        self.avg.add(v)
        most = max(self.freq.items(), key=lambda kv: (kv[1], kv[0]))
        yield (key, self.count.value(), tuple(self.last3.get()), most, self.total.get(), self.avg.get())


def reference(events):
    state = {}
    out = []
    for key, v in events:
        s = state.setdefault(key, {"count": 0, "last": [], "freq": {}, "vals": []})
        s["count"] += 1
        s["last"] = (s["last"] + [v])[-3:]
        s["freq"][v] = s["freq"].get(v, 0) + 1
        s["vals"].append(v)
        most = max(s["freq"].items(), key=lambda kv: (kv[1], kv[0]))
        out.append((key, s["count"], tuple(s["last"]), most, sum(s["vals"]), sum(s["vals"]) / len(s["vals"])))
    return out


@pytest.mark.parametrize("parallelism", [1, 3])
def test_every_state_type_matches_reference(parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    out = collect(env.from_collection(EVENTS).key_by(lambda e: e[0]).process(AllStates()))
    expected = reference(EVENTS)
    assert sorted(out) == sorted(expected)
    # per key, records keep the collection's order
    for key in {k for k, _ in EVENTS}:
        assert [o for o in out if o[0] == key] == [e for e in expected if e[0] == key]


class UsesState(MapFunction):
    def open(self, ctx):
        self.s = ctx.get_state(ValueStateDescriptor("s", Types.LONG()))

    def map(self, v):
        return v


def test_state_on_non_keyed_stream_fails_naming_the_operator():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(UsesState()).name("stateful-map").print()
    with pytest.raises(JobExecutionError, match="stateful-map.*keyed"):
        env.execute()


def test_keyed_map_can_use_state():
    env = StreamExecutionEnvironment.get_execution_environment()

    class Running(MapFunction):
        def open(self, ctx):
            self.s = ctx.get_state(ValueStateDescriptor("s", Types.LONG()))

        def map(self, v):
            self.s.update((self.s.value() or 0) + v[1])
            return (v[0], self.s.value())

    out = collect(env.from_collection(EVENTS).key_by(lambda e: e[0]).map(Running()))
    running = {}
    expected = []
    for k, v in EVENTS:
        running[k] = running.get(k, 0) + v
        expected.append((k, running[k]))
    assert sorted(out) == sorted(expected)


# -- TTL on the backend, with a manual clock ------------------------------------------------------
def backend(clock):
    return HeapKeyedStateBackend(max_parallelism=128, key_group_range=KeyGroupRange(0, 127), clock=clock)


def ttl(ms, **kw):
    b = StateTtlConfig.new_builder(ms)
    if kw.get("on_read"):
        b = b.update_ttl_on_read_and_write()
    if kw.get("return_expired"):
        b = b.return_expired_if_not_cleaned_up()
    return b.build()


def test_value_state_expires_after_ttl():
    clock = ManualClock(1000)
    be = backend(clock)
    d = ValueStateDescriptor("v", Types.LONG())
    d.enable_time_to_live(ttl(100))
    s = be.get_state(d)
    be.set_current_key("a")
    s.update(1)
    clock.advance(99)
    assert s.value() == 1
    clock.advance(1)
    assert s.value() is None


def test_read_refreshes_ttl_with_on_read_and_write():
    clock = ManualClock(0)
    be = backend(clock)
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(100, on_read=True))
    s = be.get_state(d)
    be.set_current_key("a")
    s.update(1)
    for _ in range(5):
        clock.advance(60)
        assert s.value() == 1  # each read extends the lifetime
    clock.advance(100)
    assert s.value() is None


def test_return_expired_if_not_cleaned_up_returns_stale_value():
    clock = ManualClock(0)
    be = backend(clock)
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(ttl(10, return_expired=True))
    s = be.get_state(d)
    be.set_current_key("a")
    s.update(7)
    clock.advance(50)
    assert s.value() == 7


def test_list_and_map_state_expire_per_entry():
    clock = ManualClock(0)
    be = backend(clock)
    ld = ListStateDescriptor("l")
    ld.enable_time_to_live(ttl(100))
    md = MapStateDescriptor("m")
    md.enable_time_to_live(ttl(100))
    ls, ms = be.get_state(ld), be.get_state(md)
    be.set_current_key("a")
    ls.add(1)
    ms.put("x", 1)
    clock.advance(60)
    ls.add(2)
    ms.put("y", 2)
    clock.advance(60)
    assert ls.get() == [2]
    assert ms.items() == [("y", 2)]
    assert not ms.contains("x")
    clock.advance(100)
    assert ls.get() == [] and ms.is_empty()


def test_reducing_and_aggregating_state_expire():
    clock = ManualClock(0)
    be = backend(clock)
    rd = ReducingStateDescriptor("r", lambda a, b: a + b)
    rd.enable_time_to_live(ttl(100))
    ad = AggregatingStateDescriptor("a", AvgAgg())
    ad.enable_time_to_live(ttl(100))
    rs, as_ = be.get_state(rd), be.get_state(ad)
    be.set_current_key("k")
    rs.add(1)
    rs.add(2)
    as_.add(2)
    as_.add(4)
    assert rs.get() == 3 and as_.get() == 3
    clock.advance(100)
    assert rs.get() is None and as_.get() is None
    rs.add(5)
    assert rs.get() == 5


def test_state_is_listed_by_key_group():
    be = backend(ManualClock(0))
    s = be.get_state(ValueStateDescriptor("v"))
    from strom.common.key_groups import assign_to_key_group

    for k in ["a", "b", "c"]:
        be.set_current_key(k)
        s.update(k.upper())
    groups = be.entries_by_key_group()
    for k in ["a", "b", "c"]:
        assert (k, None, k.upper()) in groups[assign_to_key_group(k, 128)]["v"]


def test_redeclaring_state_with_another_kind_fails():
    be = backend(ManualClock(0))
    be.get_state(ValueStateDescriptor("s"))
    with pytest.raises(RuntimeError, match="already registered as value"):
        be.get_state(ListStateDescriptor("s"))


def test_incremental_cleanup_removes_expired_entries_that_are_never_read_again():
    clock = ManualClock(0)
    be = backend(clock)
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(StateTtlConfig.new_builder(100).cleanup_incrementally(10, False).build())
    s = be.get_state(d)
    for i in range(50):
        be.set_current_key(f"old-{i}")
        s.update(i)
    clock.advance(200)
    be.set_current_key("fresh")
    for _ in range(10):  # each access checks 10 entries
        s.update(1)
    assert be.keys("v") == ["fresh"]


def test_cleanup_disabled_keeps_expired_entries_until_read():
    clock = ManualClock(0)
    be = backend(clock)
    d = ValueStateDescriptor("v")
    d.enable_time_to_live(StateTtlConfig.new_builder(100).disable_cleanup_in_background().build())
    s = be.get_state(d)
    be.set_current_key("a")
    s.update(1)
    clock.advance(200)
    be.set_current_key("b")
    s.update(2)
    assert sorted(be.keys("v")) == ["a", "b"]
    be.set_current_key("a")
    assert s.value() is None
