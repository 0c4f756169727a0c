"""Broadcast state pattern: a rules stream broadcast to a (keyed) stream; results equal a
plain-Python application of the rules, whatever the interleaving of the two inputs."""

from collections import Counter

import pytest
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    StreamExecutionEnvironment,
    TimeDomain,
)
from strom.datastream.state import ListStateDescriptor, MapStateDescriptor

PARALLELISMS = [1, 2, 3]
END_OF_TIME = 10**12  # beyond every event timestamp: such timers fire only at the end of input
RULES = MapStateDescriptor("rules")
PENDING = ListStateDescriptor("pending")

EVENTS = [(f"k{i % 7}", i, 1000 + i) for i in range(120)]  # (key, value, timestamp)
FACTORS = [("k0", 2), ("k1", 3), ("k3", 5), ("k4", 7), ("k6", 11)]  # k2 and k5 have no rule


def run(stream):
    with stream.execute_and_collect() as results:
        return list(results)


def env_with(parallelism):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def reference(events, factors):
    rules = dict(factors)
    return [
        ("scaled", k, v * rules[k]) if k in rules else ("unmatched", k, v)
        for k, v, _ in events
    ]


class ScaleByRule(KeyedBroadcastProcessFunction):
    """Scales each event by its key's factor. An event that arrives before its rule waits in keyed
    state; the rule, when it arrives, releases the waiting events of its key (apply_to_keyed_state).
    Events whose key never gets a rule are reported by an event-time timer at the end of input."""

    def open(self, runtime_context):
        self.pending = runtime_context.get_list_state(PENDING)

    def process_element(self, value, ctx):
        key, v, ts = value
        assert ctx.get_current_key() == key and ctx.timestamp() == ts
        factor = ctx.get_broadcast_state(RULES).get(key)
        if factor is not None:
            yield ("scaled", key, v * factor)
        else:
            self.pending.add(v)
            ctx.timer_service().register_event_time_timer(END_OF_TIME)

    def process_broadcast_element(self, value, ctx):
        rule_key, factor = value
        ctx.get_broadcast_state(RULES).put(rule_key, factor)
        released = []

        def release(key, state):
            if key == rule_key:
                released.extend(("scaled", key, v * factor) for v in state.get())
                state.clear()

        ctx.apply_to_keyed_state(PENDING, release)
        yield from released

    def on_timer(self, timestamp, ctx):
        assert ctx.time_domain() == TimeDomain.EVENT_TIME and timestamp == END_OF_TIME
        key = ctx.get_current_key()
        pending = self.pending.get()
        if ctx.get_broadcast_state(RULES).get(key) is not None:
            # the timer of an event that waited for its rule: the rule released it already
            assert pending == [], "a rule releases every event of its key that waited for it"
            return
        for v in pending:
            yield ("unmatched", key, v)
        self.pending.clear()


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_rules_broadcast_to_a_keyed_stream_apply_to_every_event(parallelism):
    env = env_with(parallelism)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _ts: e[2])
    events = env.from_collection(EVENTS).assign_timestamps_and_watermarks(strategy).key_by(lambda e: e[0])
    rules = env.from_collection(FACTORS).broadcast(RULES)
    out = run(events.connect(rules).process(ScaleByRule()))
    assert Counter(out) == Counter(reference(EVENTS, FACTORS))


class ScaleByRuleUnkeyed(BroadcastProcessFunction):
    """The non-keyed variant: each subtask holds its waiting events itself."""

    def open(self, runtime_context):
        self.waiting = []

    def process_element(self, value, ctx):
        key, v, _ = value
        factor = ctx.get_broadcast_state(RULES).get(key)
        if factor is None:
            self.waiting.append(value)
        else:
            yield ("scaled", key, v * factor)

    def process_broadcast_element(self, value, ctx):
        rule_key, factor = value
        ctx.get_broadcast_state(RULES).put(rule_key, factor)
        still_waiting = []
        for key, v, ts in self.waiting:
            if key == rule_key:
                yield ("scaled", key, v * factor)
            else:
                still_waiting.append((key, v, ts))
        self.waiting = still_waiting


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_every_subtask_of_a_non_keyed_stream_sees_every_rule(parallelism):
    env = env_with(parallelism)
    matched = [e for e in EVENTS if e[0] in dict(FACTORS)]
    events = env.from_collection(matched).rebalance()
    rules = env.from_collection(FACTORS).broadcast(RULES)
    out = run(events.connect(rules).process(ScaleByRuleUnkeyed()))
    assert Counter(out) == Counter(reference(matched, FACTORS))


# -- misuse ---------------------------------------------------------------------------------------
class WritesFromProcessElement(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[0], 1)
        yield value

    def process_broadcast_element(self, value, ctx):
        return None


def test_writing_broadcast_state_from_process_element_fails():
    env = env_with(1)
    events = env.from_collection(EVENTS[:3]).key_by(lambda e: e[0])
    rules = env.from_collection(FACTORS).broadcast(RULES)
    with pytest.raises(Exception, match="broadcast state 'rules' is read-only in process_element"):
        run(events.connect(rules).process(WritesFromProcessElement()))


class AsksForUndeclaredState(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(MapStateDescriptor("thresholds")).put(*value)
        return None


def test_broadcast_state_not_passed_to_broadcast_is_an_error_naming_the_declared_ones():
    env = env_with(1)
    rules = env.from_collection(FACTORS).broadcast(RULES)
    stream = env.from_collection(EVENTS[:3]).connect(rules).process(AsksForUndeclaredState())
    with pytest.raises(Exception, match=r"broadcast state 'thresholds' was not declared.*\(declared: 'rules'\)"):
        run(stream)


class TimerFromBroadcastSide(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield value

    def process_broadcast_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(5)
        return None


def test_timers_cannot_be_registered_from_the_broadcast_side():
    env = env_with(1)
    events = env.from_collection(EVENTS[:3]).key_by(lambda e: e[0])
    rules = env.from_collection(FACTORS).broadcast(RULES)
    with pytest.raises(Exception, match="timers cannot be registered in process_broadcast_element"):
        run(events.connect(rules).process(TimerFromBroadcastSide()))


def test_keyed_broadcast_function_needs_a_keyed_stream():
    env = env_with(1)
    rules = env.from_collection(FACTORS).broadcast(RULES)
    with pytest.raises(TypeError, match="KeyedBroadcastProcessFunction needs a keyed non-broadcast stream"):
        env.from_collection(EVENTS[:3]).connect(rules).process(ScaleByRule())
