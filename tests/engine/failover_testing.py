"""Failover helpers shared by the embedded-executor exactly-once tests (checkpoints, FileSink, JDBC):
a map that fails once in the first attempt, and running a job with a fixed-delay restart strategy."""

from __future__ import annotations

from typing import Any

from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import MapFunction
from strom.runtime.local_executor import LocalJob


class FailOnceAt(MapFunction):
    """Passes values through; raises when it sees `fail_at`, in the first attempt only."""

    def __init__(self, fail_at: int) -> None:
        self.fail_at = fail_at

    def open(self, runtime_context: Any) -> None:
        self.attempt = runtime_context.get_attempt_number()

    def map(self, value: Any) -> Any:
        if value == self.fail_at and self.attempt == 0:
            raise RuntimeError(f"injected failure at {value}")
        return value


def run_with_restarts(env: StreamExecutionEnvironment, name: str, **config: object) -> LocalJob:
    """Run the job in the embedded executor, restarting up to 3 times 50 ms apart, until it ends (120 s)."""
    graph = env.get_stream_graph(name, clear_transformations=True)
    graph.config.set("restart-strategy.type", "fixed-delay")
    graph.config.set("restart-strategy.fixed-delay.attempts", 3)
    graph.config.set("restart-strategy.fixed-delay.delay", "50 ms")
    for key, value in config.items():
        graph.config.set(key, value)
    job = LocalJob(graph)
    job.start()
    job.wait(120)
    return job
