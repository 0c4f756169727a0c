"""Checks of a job's connectors against its effective configuration, at submission.

A source or sink may define `check_job_configuration(config) -> str | None` (e.g. the Kafka sink
refuses a transaction timeout shorter than the checkpoint interval); the JobManager asks every one
when a job is submitted, with the configuration the job will run with, and refuses the job with the
first problem, so that a misconfiguration is an answer to `strom run`, not a task failing later.
"""

from __future__ import annotations

from typing import Any

from strom.graph.stream_graph import StreamGraph


def connector_problem(graph: StreamGraph, config: Any) -> str | None:
    for node in graph.nodes.values():
        descriptor = node.operator
        params = getattr(descriptor, "params", None) or {}
        for key in ("source", "sink"):
            check = getattr(params.get(key), "check_job_configuration", None)
            if callable(check):
                problem = check(config)
                if problem:
                    return f"operator {node.name!r}: {problem}"
    return None
