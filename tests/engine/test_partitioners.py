"""Every partitioner routes records as Flink's does (checked against the formulas)."""

from collections import Counter

from strom.common.key_groups import assign_to_key_group
from strom.datastream import MapFunction, StreamExecutionEnvironment
from strom.testing import collect


class TagSubtask(MapFunction):
    def open(self, ctx):
        self.idx = ctx.get_index_of_this_subtask()

    def map(self, v):
        return (self.idx, v)


def route(partition, n_records=40, parallelism=4, source_parallelism=1):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    if source_parallelism == 1:
        src = env.from_collection(list(range(n_records)))
    else:
        src = env.from_sequence(0, n_records - 1).set_parallelism(source_parallelism)
    return collect(partition(src).map(TagSubtask()))


def test_hash_partitioning_follows_key_groups():
    out = route(lambda s: s.key_by(lambda v: v % 7))
    assert sorted(v for _, v in out) == list(range(40))
    for idx, v in out:
        assert idx == assign_to_key_group(v % 7, 128) * 4 // 128


def test_rebalance_is_round_robin():
    out = route(lambda s: s.rebalance())
    per = Counter(idx for idx, _ in out)
    assert per == Counter({0: 10, 1: 10, 2: 10, 3: 10})
    # round robin: consecutive records go to consecutive subtasks
    by_value = dict((v, idx) for idx, v in out)
    start = by_value[0]
    assert all(by_value[v] == (start + v) % 4 for v in range(40))


def test_broadcast_sends_every_record_to_every_subtask():
    out = route(lambda s: s.broadcast())
    assert Counter(out) == Counter((i, v) for i in range(4) for v in range(40))


def test_global_sends_everything_to_subtask_zero():
    out = route(lambda s: s.global_())
    assert {i for i, _ in out} == {0} and sorted(v for _, v in out) == list(range(40))


def test_shuffle_delivers_each_record_exactly_once():
    out = route(lambda s: s.shuffle(), n_records=400)
    assert sorted(v for _, v in out) == list(range(400))
    assert len({i for i, _ in out}) == 4


def test_rescale_only_reaches_local_subset():
    out = route(lambda s: s.rescale(), parallelism=4, source_parallelism=2)
    # producer 0 feeds consumers {0, 1}; producer 1 feeds {2, 3}; producer i reads half of the range
    for idx, v in out:
        producer = 0 if v < 20 else 1
        assert idx in ({0, 1} if producer == 0 else {2, 3})
    assert sorted(v for _, v in out) == list(range(40))


def test_partition_custom_uses_user_partitioner():
    out = route(lambda s: s.partition_custom(lambda key, n: key % n, lambda v: v * 3))
    assert all(idx == (v * 3) % 4 for idx, v in out)


def test_forward_keeps_subtask():
    out = route(lambda s: s.map(lambda v: v).forward(), parallelism=1)
    assert {i for i, _ in out} == {0}


def test_results_do_not_depend_on_python_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    job = tmp_path / "job.py"
    job.write_text(
        "from strom.datastream import StreamExecutionEnvironment, MapFunction\n"
        "from strom.testing import collect\n"
        "class T(MapFunction):\n"
        "    def open(self, c): self.i = c.get_index_of_this_subtask()\n"
        "    def map(self, v): return (self.i, v)\n"
        "env = StreamExecutionEnvironment.get_execution_environment(); env.set_parallelism(3)\n"
        "print(sorted(collect(env.from_collection(['k%d' % i for i in range(50)]).key_by(lambda v: v).map(T()))))\n"
    )
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join(sys.path))
        outs.add(subprocess.check_output([sys.executable, str(job)], env=env, text=True))
    assert len(outs) == 1
