"""StreamGraph -> JobGraph: Flink's execution plan JSON and Flink's chaining rules."""

import json

import pytest
from strom.common.time import Time
from strom.datastream import StreamExecutionEnvironment
from strom.graph.job_graph import create_job_graph
from strom.graph.stream_graph import GraphBuildError


def chains(env):
    jg = create_job_graph(env.get_stream_graph())
    return [[n.name for n in v.nodes] for v in jg.vertices], jg


def test_flink_chains_for_source_flatmap_keyby_window_sink():
    from strom.datastream.window import TumblingEventTimeWindows

    env = StreamExecutionEnvironment.get_execution_environment()
    src = env.from_collection(["a b", "c"])
    words = src.flat_map(lambda s: s.split()).set_parallelism(2)
    win = words.key_by(lambda w: w).window(TumblingEventTimeWindows.of(Time.seconds(1))).reduce(lambda a, b: a)
    win.set_parallelism(2)
    win.print().set_parallelism(2)
    names, jg = chains(env)
    assert len(names) == 3
    assert names[0] == ["Source: Collection Source"]
    assert names[1] == ["Flat Map"]
    assert len(names[2]) == 2 and names[2][0].startswith("Window") and names[2][1].startswith("Sink")
    assert jg.total_subtasks() == 5
    assert jg.required_slots() == 2


def test_execution_plan_has_flinks_json_shape():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    ds = env.from_collection([1, 2, 3]).map(lambda x: x).key_by(lambda x: x % 2).reduce(lambda a, b: a + b)
    ds.rebalance().print()
    plan = json.loads(env.get_execution_plan())
    nodes = {n["id"]: n for n in plan["nodes"]}
    for n in plan["nodes"]:
        assert {"id", "type", "pact", "contents", "parallelism"} <= set(n)
    src = next(n for n in plan["nodes"] if n["pact"] == "Data Source")
    assert src["parallelism"] == 1 and "predecessors" not in src
    map_node = next(n for n in plan["nodes"] if n["type"] == "Map")
    assert map_node["predecessors"] == [{"id": src["id"], "ship_strategy": "REBALANCE", "side": "second"}]
    red = next(n for n in plan["nodes"] if n["type"] == "Keyed Reduce")
    assert red["predecessors"][0]["ship_strategy"] == "HASH"
    sink = next(n for n in plan["nodes"] if n["pact"] == "Data Sink")
    assert nodes[sink["predecessors"][0]["id"]] is red
    assert sink["predecessors"][0]["ship_strategy"] == "REBALANCE"


def test_forward_edges_of_equal_parallelism_chain():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda x: x).filter(lambda x: True).print()
    names, _ = chains(env)
    assert names == [["Source: Collection Source", "Map", "Filter", "Sink: Print to Std. Out"]]


def test_start_new_chain_and_disable_chaining():
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = env.from_collection([1]).map(lambda x: x).name("m1")
    ds = ds.map(lambda x: x).name("m2").start_new_chain()
    ds = ds.map(lambda x: x).name("m3")
    ds = ds.map(lambda x: x).name("m4").disable_chaining()
    ds.print()
    names, _ = chains(env)
    assert names == [["Source: Collection Source", "m1"], ["m2", "m3"], ["m4"], ["Sink: Print to Std. Out"]]


def test_env_disable_operator_chaining():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.disable_operator_chaining()
    env.from_collection([1]).map(lambda x: x).print()
    names, _ = chains(env)
    assert len(names) == 3


def test_slot_sharing_group_breaks_chain():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda x: x).slot_sharing_group("other").print()
    names, jg = chains(env)
    assert names == [["Source: Collection Source"], ["Map", "Sink: Print to Std. Out"]]
    assert jg.required_slots() == 2


def test_union_input_does_not_chain():
    env = StreamExecutionEnvironment.get_execution_environment()
    a = env.from_collection([1])
    b = env.from_collection([2])
    a.union(b).map(lambda x: x).print()
    names, _ = chains(env)
    assert ["Map", "Sink: Print to Std. Out"] in names


def test_parallelism_above_max_parallelism_is_rejected_naming_the_operator():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda x: x).name("too-wide").set_parallelism(8).set_max_parallelism(4).print()
    with pytest.raises(GraphBuildError, match="too-wide.*8.*4"):
        env.get_stream_graph()


def test_collection_source_is_non_parallel():
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(ValueError, match="non-parallel"):
        env.from_collection([1]).set_parallelism(2)


def test_forward_with_unequal_parallelism_is_rejected():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).forward().map(lambda x: x).name("fw").set_parallelism(2).print()
    with pytest.raises(GraphBuildError, match="fw.*forward"):
        env.get_stream_graph()


def test_duplicate_uid_is_rejected():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda x: x).uid("u").map(lambda x: x).uid("u").print()
    with pytest.raises(GraphBuildError, match="uid 'u'"):
        env.get_stream_graph()


def _sums_pipeline(env: StreamExecutionEnvironment):
    from strom.common import WatermarkStrategy
    from strom.datastream.connectors.number_seq import NumberSequenceSource

    src = env.from_source(NumberSequenceSource(0, 999), WatermarkStrategy.no_watermarks(), "numbers").uid("numbers")
    return (
        src.map(lambda v: (v % 10, v))
        .uid("pairs")
        .key_by(lambda p: p[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .uid("sums")
    )


def test_vertex_parallelism_overrides_by_job_vertex_id_rescale_whole_chains():
    """pipeline.jobvertex-parallelism-overrides keyed by JobVertexID (what the autoscaler writes)."""
    from strom.testing import collect

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    _sums_pipeline(env)
    before = create_job_graph(env.get_stream_graph("probe", clear_transformations=True))
    source_vertex, sums_vertex = before.vertices[0], before.vertices[1]
    assert [n.uid for n in source_vertex.nodes] == ["numbers", "pairs"]  # source -> map is one chain

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    from strom.common import Configuration

    env.configure(Configuration({"pipeline.jobvertex-parallelism-overrides": {source_vertex.id: 3, sums_vertex.id: 4}}))
    sums = _sums_pipeline(env)
    graph = env.get_stream_graph("overridden")
    after = create_job_graph(graph)
    assert [(v.id, v.parallelism) for v in after.vertices] == [(source_vertex.id, 3), (sums_vertex.id, 4)]
    assert all(n.parallelism == 3 for n in after.vertices[0].nodes)
    # the job runs at those parallelisms and computes the same running sums as a plain loop
    finals: dict[int, int] = {}
    for k, total in collect(sums):
        finals[k] = max(finals.get(k, 0), total)
    assert finals == {k: sum(v for v in range(1000) if v % 10 == k) for k in range(10)}


def test_vertex_parallelism_override_beyond_max_parallelism_names_the_vertex():
    from strom.common import Configuration

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_max_parallelism(8)
    _sums_pipeline(env)
    vid = create_job_graph(env.get_stream_graph("probe", clear_transformations=True)).vertices[1].id
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_max_parallelism(8)
    env.configure(Configuration({"pipeline.jobvertex-parallelism-overrides": {vid: 9}}))
    _sums_pipeline(env)
    with pytest.raises(GraphBuildError, match=f"{vid}.*\\[1, 8\\]"):
        create_job_graph(env.get_stream_graph("too wide"))
