"""Every query by name: a function from the Nexmark event stream to the query's output stream."""

from __future__ import annotations

from collections.abc import Callable

from strom.datastream import DataStream

from benchmarks.nexmark import aggregations, joins, projections, windows

Query = Callable[[DataStream], DataStream]

QUERIES: dict[str, Query] = {
    "q0": projections.q0,
    "q1": projections.q1,
    "q2": projections.q2,
    "q3": joins.q3,
    "q4": joins.q4,
    "q5": windows.q5,
    "q7": windows.q7,
    "q8": joins.q8,
    "q9": joins.q9,
    "q11": windows.q11,
    "q12": windows.q12,
    "q14": projections.q14,
    "q15": aggregations.q15,
    "q16": aggregations.q16,
    "q17": aggregations.q17,
    "q18": aggregations.q18,
    "q19": aggregations.q19,
    "q20": joins.q20,
    "q21": projections.q21,
    "q22": projections.q22,
}
