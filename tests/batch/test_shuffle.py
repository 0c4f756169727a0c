"""The chunked shuffle (shuffle_write -> chunks in any order -> shuffle_read), without Spark, against a
plain-Python reference of the order a consumer must read in: the broadcast side first where broadcast
state is built, then by timestamp (records without one first) for keyed consumers, ties and every
other consumer in (input, producer, arrival) order."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strom.batch.chunk_store import ChunkStore
from strom.batch.plan import StageInput, StageSpec
from strom.batch.routing import EVERY_PARTITION, BatchRouter
from strom.batch.shuffle_read import read_shuffle
from strom.batch.shuffle_write import ShuffleWriter
from strom.common.key_groups import stable_hash

MIN_TIME = -(2**63)


def consumer(*, parallelism=3, sort_by_time=False, broadcast_first=False):
    return StageSpec(
        vertex_id="v",
        name="consumer",
        parallelism=parallelism,
        max_parallelism=128,
        nodes=[],
        wires={},
        inputs=[],
        config=None,
        sort_by_time=sort_by_time,
        broadcast_first=broadcast_first,
    )


def shuffle(spec, sent, *, chunk_bytes=64, run_bytes=512, batch=7, seed=0, memory_bytes=1 << 30):
    """`sent[(input, producer, route)]` = [(target, value, timestamp)] in sending order -> each
    partition's batches, with the chunks delivered in a random order (as Spark fetches them)."""
    rng = random.Random(seed)
    wire = []
    for (input_index, producer, route), records in sent.items():
        w = ShuffleWriter(
            partitions=spec.parallelism,
            input_index=input_index,
            producer=producer,
            route=route,
            sort_by_time=spec.sort_by_time,
            chunk_bytes=chunk_bytes,
            run_bytes=run_bytes,
        )
        i = 0
        while i < len(records):
            part = records[i : i + rng.randint(1, 20)]
            i += len(part)
            targets = [t for t, _, _ in part]
            same = all(t == targets[0] for t in targets)
            stamps = [ts for _, _, ts in part]
            wire += w.add(
                targets[0] if same else targets,
                [v for _, v, _ in part],
                None if all(s is None for s in stamps) else stamps,
            )
        wire += w.finish()
    rng.shuffle(wire)
    out = {}
    for p in range(spec.parallelism):
        mine = [(t, c) for t, c in wire if t == p]
        out[p] = list(read_shuffle(spec, mine, batch_records=batch, memory_bytes=memory_bytes))
    return out


def flatten(batches):
    return [(inp, v, None if ts is None else ts[i]) for inp, vs, ts in batches for i, v in enumerate(vs)]


def reference(spec, sent):
    """What each partition must read, from the sort key the order is defined by."""
    keyed = {p: [] for p in range(spec.parallelism)}
    for (input_index, producer, route), records in sent.items():
        for seq, (target, value, ts) in enumerate(records):
            phase = 0 if spec.broadcast_first and input_index == 2 else 1
            time = (MIN_TIME if ts is None else ts) if spec.sort_by_time else 0
            for p in range(spec.parallelism) if target == EVERY_PARTITION else [target]:
                keyed[p].append(((phase, time, input_index, producer, route, seq), (input_index, value, ts)))
    return {p: [r for _, r in sorted(rows, key=lambda kr: kr[0])] for p, rows in keyed.items()}


def random_sent(
    rng, *, inputs=(1,), producers=3, n=200, parallelism=3, times=50, none_share=0.1, broadcast=(), routes=1
):
    """Records of each (input, producer, route); input i's routes are numbered 10 * i + 0, 1, ..."""
    sent = {}
    for i in inputs:
        for route in range(10 * i, 10 * i + routes):
            for p in range(producers):
                rows = []
                for _ in range(rng.randint(0, n)):
                    target = EVERY_PARTITION if i in broadcast else rng.randrange(parallelism)
                    ts = None if rng.random() < none_share else rng.randrange(times)
                    rows.append((target, (i, p, route, rng.random()), ts))
                sent[(i, p, route)] = rows
    return sent


@pytest.mark.parametrize("sort_by_time", [False, True])
def test_several_producers_and_inputs_read_in_the_reference_order(sort_by_time):
    rng = random.Random(1)
    spec = consumer(sort_by_time=sort_by_time)
    sent = random_sent(rng, inputs=(1, 2), producers=4, n=300)
    got = shuffle(spec, sent)
    assert {p: flatten(b) for p, b in got.items()} == reference(spec, sent)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    sort_by_time=st.booleans(),
    broadcast_first=st.booleans(),
    two_inputs=st.booleans(),
    routes=st.integers(1, 2),
    times=st.sampled_from([1, 3, 1000]),
    chunk_bytes=st.sampled_from([1, 40, 300, 1 << 20]),
    run_bytes=st.sampled_from([1, 200, 5000, 1 << 25]),
    memory_bytes=st.sampled_from([0, 2000, 1 << 30]),
)
def test_random_shuffles_match_the_reference(
    seed, sort_by_time, broadcast_first, two_inputs, routes, times, chunk_bytes, run_bytes, memory_bytes
):
    rng = random.Random(seed)
    spec = consumer(parallelism=rng.randint(1, 4), sort_by_time=sort_by_time, broadcast_first=broadcast_first)
    inputs = (1, 2) if two_inputs else (1,)
    sent = random_sent(
        rng,
        inputs=inputs,
        producers=rng.randint(1, 3),
        n=60,
        parallelism=spec.parallelism,
        times=times,
        broadcast=(2,) if broadcast_first else (),
        routes=routes,
    )
    got = shuffle(spec, sent, chunk_bytes=chunk_bytes, run_bytes=run_bytes, seed=seed, memory_bytes=memory_bytes)
    assert {p: flatten(b) for p, b in got.items()} == reference(spec, sent)


@pytest.mark.parametrize("sort_by_time", [False, True])
def test_broadcast_side_is_read_whole_before_the_other_input(sort_by_time):
    rng = random.Random(2)
    spec = consumer(sort_by_time=sort_by_time, broadcast_first=True)
    sent = random_sent(rng, inputs=(1, 2), producers=2, n=100, broadcast=(2,))
    got = shuffle(spec, sent)
    for p in range(spec.parallelism):
        inputs = [inp for inp, _, _ in flatten(got[p])]
        assert inputs == sorted(inputs, reverse=True)  # every 2 before any 1
        assert inputs.count(2) == len(sent[(2, 0, 20)]) + len(sent[(2, 1, 20)])  # each broadcast record reached p
    assert {p: flatten(b) for p, b in got.items()} == reference(spec, sent)


@pytest.mark.parametrize("sort_by_time", [False, True])
def test_streams_united_into_one_input_are_runs_of_their_own(sort_by_time):
    """Two routes feed input 1 (a union): each route's runs stay apart, so each stays sorted."""
    rng = random.Random(5)
    spec = consumer(parallelism=2, sort_by_time=sort_by_time)
    sent = random_sent(rng, inputs=(1,), producers=2, n=400, parallelism=2, times=10_000, routes=2)
    got = shuffle(spec, sent, chunk_bytes=50, run_bytes=2_000)
    assert {p: flatten(b) for p, b in got.items()} == reference(spec, sent)


def test_equal_timestamps_keep_producer_then_arrival_order():
    """Hand-worked: all at t=5 except one earlier record; producer 0's records precede producer 1's."""
    spec = consumer(parallelism=1, sort_by_time=True)
    sent = {(1, 1, 0): [(0, "b1", 5), (0, "b2", 5), (0, "early", 1)], (1, 0, 0): [(0, "a1", 5), (0, "a2", 5)]}
    got = flatten(shuffle(spec, sent, chunk_bytes=1, run_bytes=1)[0])
    assert [v for _, v, _ in got] == ["early", "a1", "a2", "b1", "b2"]


def test_empty_partitions_and_producers_read_nothing():
    spec = consumer(parallelism=4, sort_by_time=True)
    sent = {(1, 0, 0): [(2, "x", 1), (2, "y", 0)], (1, 1, 0): []}
    got = shuffle(spec, sent)
    assert got[0] == got[1] == got[3] == []
    assert flatten(got[2]) == [(1, "y", 0), (1, "x", 1)]
    assert shuffle(consumer(), {}) == {0: [], 1: [], 2: []}


@pytest.mark.parametrize("sort_by_time", [False, True])
def test_records_larger_than_a_chunk_travel_whole(sort_by_time):
    rng = random.Random(3)
    spec = consumer(parallelism=2, sort_by_time=sort_by_time)
    big = ["x" * rng.randint(1, 50_000) + str(i) for i in range(30)]
    sent = {(1, 0, 0): [(i % 2, v, rng.randrange(10)) for i, v in enumerate(big)]}
    got = shuffle(spec, sent, chunk_bytes=1000, run_bytes=20_000)
    assert {p: flatten(b) for p, b in got.items()} == reference(spec, sent)


def test_batches_hold_one_input_and_at_most_the_batch_size():
    rng = random.Random(4)
    spec = consumer(parallelism=2, sort_by_time=True)
    sent = random_sent(rng, inputs=(1, 2), producers=2, n=200, parallelism=2, times=20)
    for batches in shuffle(spec, sent, batch=5).values():
        for inp, values, stamps in batches:
            assert inp in (1, 2) and 1 <= len(values) <= 5
            assert stamps is None or (len(stamps) == len(values) and any(s is not None for s in stamps))


def test_hash_router_sends_keys_to_the_subtask_of_their_key_group():
    class Key:
        @staticmethod
        def get_key(value):
            return f"k{value % 11}"

    inp = StageInput(route=0, input_index=1, partitioner="hash", producer_parallelism=2, key_selector=Key)
    targets = BatchRouter(inp, consumer(parallelism=3), 0).targets(list(range(50)))
    assert targets == [(stable_hash(f"k{v % 11}") % 128) * 3 // 128 for v in range(50)]


@pytest.mark.parametrize(
    ("kind", "producer", "producers", "expected"),
    [
        ("rebalance", 1, 2, [1, 2, 0, 1, 2, 0, 1]),  # round robin from the producer's index
        ("forward", 1, 3, 1),  # pointwise, one target: the whole batch
        ("rescale", 0, 1, [0, 1, 2, 0, 1, 2, 0]),  # one producer feeding three consumers in turn
        ("global", 1, 2, 0),
        ("broadcast", 0, 2, EVERY_PARTITION),
    ],
)
def test_router_targets_follow_the_engines_partitioners(kind, producer, producers, expected):
    inp = StageInput(route=0, input_index=1, partitioner=kind, producer_parallelism=producers)
    router = BatchRouter(inp, consumer(parallelism=3), producer)
    got = router.targets(list(range(4)))
    if isinstance(expected, list):
        got = got + router.targets(list(range(3)))  # the rotation continues across batches
    assert got == expected


def test_chunks_past_the_memory_budget_wait_on_disk_and_read_back_unchanged(tmp_path):
    store = ChunkStore(memory_bytes=10, directory=str(tmp_path))
    chunks = [b"0123456789", b"abc", bytes(range(256)) * 100, b"z"]
    refs = [store.put(c) for c in chunks]
    assert refs[0] == chunks[0]  # within the budget: kept as it is
    assert all(isinstance(r, tuple) for r in refs[1:])  # the budget was used up: the rest spilled
    assert (store.in_memory, store.spilled) == (10, sum(map(len, chunks[1:])))
    assert [store.get(r) for r in reversed(refs)] == chunks[::-1]
    store.close()


@pytest.mark.parametrize("sort_by_time", [False, True])
def test_a_partition_whose_chunks_all_spilled_reads_the_reference_order(sort_by_time):
    rng = random.Random(6)
    spec = consumer(sort_by_time=sort_by_time)
    sent = random_sent(rng, inputs=(1, 2), producers=3, n=300)
    got = shuffle(spec, sent, memory_bytes=0)
    assert {p: flatten(b) for p, b in got.items()} == reference(spec, sent)
