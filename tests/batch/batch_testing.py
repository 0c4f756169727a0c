"""Running one program in STREAMING mode (the engine, in-process) and in BATCH mode (local Spark).

A program is a function `build(env) -> DataStream`; its results come back with execute_and_collect.
Comparisons are order-insensitive (multisets): the order across parallel subtasks is undefined in
both modes.
"""

from collections import Counter

from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment


def run_in(mode, build, *, parallelism=2):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    with build(env).execute_and_collect() as results:
        return list(results)


def run_batch(build, *, parallelism=2):
    return run_in(RuntimeExecutionMode.BATCH, build, parallelism=parallelism)


def run_streaming(build, *, parallelism=2):
    return run_in(RuntimeExecutionMode.STREAMING, build, parallelism=parallelism)


def multiset(values):
    return Counter(repr(v) for v in values)


def final_per_key(values, key):
    """The last value emitted per key: what a rolling reduction's STREAMING output ends with."""
    last = {}
    for v in values:
        last[key(v)] = v
    return list(last.values())
