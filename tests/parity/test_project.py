"""DataStream.project (issue 18).

PyFlink documents: "Initiates a Project transformation on a Tuple DataStream. Note that only Tuple
DataStreams can be projected. The transformation projects each Tuple of the DataSet onto a
(sub)set of fields." and its implementation refuses other streams with
"Only Tuple DataStreams can be projected.". A KeyedStream projects its values.
"""

from __future__ import annotations

import pytest
from strom.common import Types
from strom.datastream import StreamExecutionEnvironment

ROWS = [(1, "a", 2.5, True), (2, "b", 3.5, False), (3, "c", 4.5, True)]
TYPE = Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE(), Types.BOOLEAN()])


def test_project_keeps_the_given_fields_in_the_given_order() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    projected = env.from_collection(ROWS, TYPE).project(3, 0)
    assert [repr(t) for t in projected.get_type().get_field_types()] == [repr(Types.BOOLEAN()), repr(Types.INT())]
    assert sorted(projected.execute_and_collect()) == sorted((r[3], r[0]) for r in ROWS)


def test_project_on_a_keyed_stream_projects_its_values() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    got = env.from_collection(ROWS, TYPE).key_by(lambda r: r[0]).project(1)
    assert sorted(got.execute_and_collect()) == sorted((r[1],) for r in ROWS)


def test_project_refuses_a_stream_that_is_not_of_a_tuple_type() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(Exception, match="Only Tuple DataStreams can be projected"):  # noqa: PT011
        env.from_collection([1, 2, 3], Types.INT()).project(0)


def test_project_refuses_an_index_outside_the_tuple() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(Exception, match="field index 4 is out of range"):  # noqa: PT011
        env.from_collection(ROWS, TYPE).project(4)
