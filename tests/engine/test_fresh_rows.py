"""A process operator copies each Row a function emits (the function may assign to it afterwards, as PyFlink
would have serialized it at emission), except for a function that declares `emits_fresh_rows = True` (the
SQL operators, which build every emitted Row for that emission): its Rows pass on as they are."""

from __future__ import annotations

from typing import Any

from strom.common import Configuration
from strom.common.row import Row
from strom.datastream.functions import ProcessFunction
from strom.graph.transformations import OperatorDescriptor
from strom.runtime.metrics import MetricGroup
from strom.runtime.operators.base import OperatorContext, Output
from strom.runtime.operators.basic import ProcessOperator
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService


class _Collected(Output):
    def __init__(self) -> None:
        self.values: list[Any] = []

    def collect(self, values, timestamps):
        self.values += values


class _ReusesItsRow(ProcessFunction):
    """Emits one Row object again and again, assigning the new value to it (an accumulator-like pattern)."""

    def __init__(self) -> None:
        self.row = Row(0)

    def process_element(self, value, ctx):
        self.row[0] = value
        yield self.row


class _BuildsFreshRows(ProcessFunction):
    emits_fresh_rows = True

    def __init__(self) -> None:
        self.emitted: list[Row] = []

    def process_element(self, value, ctx):
        row = Row(value)
        self.emitted.append(row)
        yield row


def _run(function: Any, values: list[int]) -> list[Any]:
    op = ProcessOperator(OperatorDescriptor("process", function))
    ctx = OperatorContext(task_name="t", operator_name="p", operator_uid="p", subtask_index=0, parallelism=1,
                          max_parallelism=128, attempt=0, config=Configuration({}),
                          processing_time_service=ProcessingTimeService(ManualClock(0)), metrics=MetricGroup())
    out = _Collected()
    op.setup(ctx, out)
    op.open()
    op.process_batch(values, None, None)
    op.close()
    return out.values


def test_a_row_the_function_assigns_to_after_emitting_is_emitted_as_it_was() -> None:
    assert [tuple(r) for r in _run(_ReusesItsRow(), [1, 2, 3])] == [(1,), (2,), (3,)]


def test_rows_of_a_function_that_emits_fresh_rows_pass_on_uncopied() -> None:
    function = _BuildsFreshRows()
    out = _run(function, [1, 2])
    assert len(out) == 2 and all(o is e for o, e in zip(out, function.emitted, strict=True))


def test_rows_of_other_functions_are_copies() -> None:
    function = _BuildsFreshRows()
    function.emits_fresh_rows = False  # type: ignore[misc]
    out = _run(function, [1, 2])
    assert [tuple(r) for r in out] == [(1,), (2,)]
    assert not any(o is e for o, e in zip(out, function.emitted, strict=True))
