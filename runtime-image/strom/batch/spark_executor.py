"""The BATCH executor: runs a bounded program's StreamGraph as one Spark job.

Loaded by name (`strom.datastream.executors.BATCH_EXECUTOR`) when the runtime mode resolves to
BATCH. It refuses what BATCH mode cannot run before touching Spark (`validation`), cuts the graph
into stages (`plan`), and builds one RDD per stage: sources are `parallelize(range(p))` partitions
each reading its subtask's share; a stage fed by a single forward edge runs on its producer's
partitions (`mapPartitions`, no shuffle); any other input is a chunked shuffle: each producer
partition routes its records as the engine's partitioners do, puts them in the consumer's order and
sends a few large chunks per target (`shuffle_write`); Spark moves only the chunks (`partitionBy`);
the consumer merges them back into its order (`shuffle_read`). Sinks write from the executors;
one action over the union of the sink stages runs the job. A stage read by several others is
persisted so that its user functions run once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from functools import partial
from typing import Any

from strom.batch.plan import BatchPlan, StageInput, StageSpec, build_plan
from strom.batch.shuffle_read import read_shuffle
from strom.batch.shuffle_write import write_shuffle
from strom.batch.spark_session import spark_session
from strom.batch.stage_runner import BATCH_RECORDS, PRINTED_ROUTE, run_stage
from strom.batch.validation import validate_batch_graph
from strom.common.python_dependencies import PythonDependencies
from strom.common.python_environment import dependencies_of, enter_working_directory
from strom.common.unsupported import UnsupportedFeatureError
from strom.datastream.stream_execution_environment import JobExecutionResult
from strom.graph.stream_graph import StreamGraph
from strom.runtime.local_executor import JobExecutionError

_FORWARD = ("forward", "rescale")


# -- what runs on the executors (module functions: they pickle by reference) ----------------------------
def _run_source(spec: StageSpec, index: int, _ignored: Any) -> Any:
    return run_stage(spec, index, ())


def _run_forward(spec: StageSpec, route: int, index: int, batches: Any) -> Any:
    return run_stage(spec, index, ((1, vs, ts) for r, vs, ts in batches if r == route))


def _run_shuffled(spec: StageSpec, memory_bytes: int, index: int, chunks: Any) -> Any:
    return run_stage(spec, index, read_shuffle(spec, chunks, batch_records=BATCH_RECORDS, memory_bytes=memory_bytes))


def _write_shuffle(inp: StageInput, consumer: StageSpec, producer: int, batches: Any) -> Any:
    return write_shuffle(inp, consumer, producer, batches)


def _run_in_job_environment(dependencies: PythonDependencies | None, fn: Any, *args: Any) -> Any:
    enter_working_directory(dependencies)  # archives are read relative to it, as on a TaskManager
    return fn(*args)


def _in_job(dependencies: PythonDependencies | None, fn: Any, *args: Any) -> Any:
    """`fn` bound to `args`, carrying the job's python.* bundle *before* them: a partial pickles its
    arguments in order, so a Spark worker unpickling it activates the bundle (extracts the files onto
    sys.path, python_environment) before it unpickles the stage's user functions. This holds whether or
    not the Spark session existed before the job (unlike SparkContext.addPyFile, it needs no context setup)."""
    return partial(_run_in_job_environment, dependencies, fn, *args)


def _is_printed(batch: Any) -> bool:
    return batch[0] == PRINTED_ROUTE


def _printed_text(batch: Any) -> str:
    return "".join(batch[1])


def write_printed(texts: list[str], out: Any = None) -> None:
    """The print() sinks' text, in partition order, on the driver's stdout (`strom run job.py > out.txt`)."""
    stream = out if out is not None else sys.stdout
    try:
        for text in texts:
            stream.write(text)
        stream.flush()
    except BrokenPipeError:
        # the reader went away (`| head`): what it wanted it has; point the descriptor at /dev/null so
        # that the interpreter's final flush does not fail either (as the print sink does)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())


def _target_partition(target: int) -> int:
    """Spark's partition function: a chunk's key is its target partition."""
    return target


# -- the driver ---------------------------------------------------------------------------------------
def _is_forward(spec: StageSpec) -> bool:
    if len(spec.inputs) != 1 or spec.sort_by_time or spec.broadcast_first:
        return False
    inp = spec.inputs[0]
    return inp.partitioner in _FORWARD and inp.producer_parallelism == spec.parallelism


def memory_bytes(text: str) -> int:
    """A JVM-style memory size ('512m', '2g', '1024k', '300') in bytes; a bare number is MiB, as in
    `spark.python.worker.memory`."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().removesuffix("b")
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(float(t) * (1 << 20))
    except ValueError:
        raise ValueError(
            f"invalid value {text!r} for 'spark.python.worker.memory': expected a size such as '512m' or '2g'"
        ) from None


def shuffle_memory(sc: Any, config: Any = None) -> int:
    """Bytes of its shuffled input a consumer partition keeps in memory (the rest on local disk):
    `spark.python.worker.memory` from the job's configuration, else from the session's (512m)."""
    key = "spark.python.worker.memory"
    job_value = config.to_dict().get(key) if config is not None else None
    return memory_bytes(str(job_value) if job_value is not None else sc.getConf().get(key, "512m"))


def stage_rdds(
    sc: Any, plan: BatchPlan, config: Any = None, dependencies: PythonDependencies | None = None
) -> tuple[dict[str, Any], list[Any]]:
    """One RDD per stage (vertex id -> RDD of (route, values, timestamps) batches) and those persisted.
    `dependencies` (the job's python.* files) travel in every stage's function (see `_in_job`)."""
    from pyspark import StorageLevel

    in_memory = shuffle_memory(sc, config)
    rdds: dict[str, Any] = {}
    persisted = []
    for spec in plan.stages:
        if spec.is_source:
            rdd = sc.parallelize(range(spec.parallelism), spec.parallelism).mapPartitionsWithIndex(
                _in_job(dependencies, _run_source, spec)
            )
        elif _is_forward(spec):
            upstream = rdds[spec.producer_stages[0]]
            rdd = upstream.mapPartitionsWithIndex(_in_job(dependencies, _run_forward, spec, spec.inputs[0].route))
        else:
            parts = [
                rdds[producer].mapPartitionsWithIndex(_in_job(dependencies, _write_shuffle, inp, spec))
                for inp, producer in zip(spec.inputs, spec.producer_stages, strict=True)
            ]
            chunks = parts[0] if len(parts) == 1 else sc.union(parts)
            shuffled = chunks.partitionBy(spec.parallelism, _target_partition)
            rdd = shuffled.mapPartitionsWithIndex(_in_job(dependencies, _run_shuffled, spec, in_memory))
        rdd.setName(spec.name)
        if plan.consumers.get(spec.vertex_id, 0) > 1:
            rdd.persist(StorageLevel.MEMORY_AND_DISK)
            persisted.append(rdd)
        rdds[spec.vertex_id] = rdd
    return rdds, persisted


class BatchJob:
    """One execution of a StreamGraph on Spark."""

    def __init__(self, graph: StreamGraph) -> None:
        validate_batch_graph(graph)  # before Spark starts: a refused program fails fast
        self.graph = graph
        self.plan = build_plan(graph)
        self.job_id = uuid.uuid4().hex
        self.status = "CREATED"
        self._sc: Any = None
        self._done = threading.Event()
        self._result: JobExecutionResult | None = None
        self._error: BaseException | None = None

    def run(self) -> JobExecutionResult:
        start = time.time()
        self.status = "RUNNING"
        try:
            session = spark_session(self.graph.config, self.graph.job_name)
            sc = self._sc = session.sparkContext
            sc.setJobGroup(self.job_id, f"Strom batch job {self.graph.job_name}", interruptOnCancel=True)
            rdds, persisted = stage_rdds(sc, self.plan, self.graph.config, dependencies_of(self.graph))
            results = [rdds[s.vertex_id] for s in self.plan.result_stages()]
            try:
                result = results[0] if len(results) == 1 else sc.union(results)
                # one action runs the job; what print() sinks wrote comes back and goes to our stdout
                write_printed(result.filter(_is_printed).map(_printed_text).collect())
            finally:
                for rdd in persisted:
                    rdd.unpersist()
        except BaseException as e:
            self.status = "CANCELED" if self.status == "CANCELLING" else "FAILED"
            self._error = self._job_error(e)
            raise self._error from e
        finally:
            self._done.set()
        self.status = "FINISHED"
        self._result = JobExecutionResult(self.job_id, int((time.time() - start) * 1000))
        return self._result

    def _job_error(self, e: BaseException) -> BaseException:
        if isinstance(e, KeyboardInterrupt | JobExecutionError):
            return e
        name = self.graph.job_name
        if self.status == "CANCELED":
            return JobExecutionError(f"Job '{name}' ({self.job_id}) was cancelled", job_id=self.job_id)
        text = str(e)
        first = text.strip().splitlines()[0] if text.strip() else ""
        reason = _stage_failure_line(text) or f"{type(e).__name__}: {first}"  # the whole text follows once
        return JobExecutionError(
            f"Job '{name}' ({self.job_id}) failed on Spark: {reason}\n{text}", job_id=self.job_id, trace=text
        )

    def start(self) -> None:
        threading.Thread(target=self._run_quietly, name=f"strom-batch-{self.job_id}", daemon=True).start()

    def _run_quietly(self) -> None:
        try:
            self.run()
        except BaseException:  # noqa: BLE001 - kept for wait()
            pass

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job_id} still running after {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def cancel(self) -> None:
        if self.status in ("FINISHED", "FAILED", "CANCELED"):
            return
        self.status = "CANCELLING"
        if self._sc is not None:
            self._sc.cancelJobGroup(self.job_id)


def _stage_failure_line(text: str) -> str | None:
    """The StageFailure message inside a Spark error (which wraps the worker's traceback)."""
    for line in reversed(text.splitlines()):
        if "StageFailure:" in line:
            return line.split("StageFailure:", 1)[1].strip()
    return None


class BatchJobClient:
    """PyFlink's JobClient for a BATCH job started with execute_async (or by execute_and_collect)."""

    def __init__(self, job: BatchJob) -> None:
        self._job = job

    def get_job_id(self) -> str:
        return self._job.job_id

    def get_job_status(self) -> str:
        return self._job.status

    def cancel(self) -> None:
        self._job.cancel()

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> str:
        raise UnsupportedFeatureError(
            f"trigger_savepoint: job {self._job.job_id} runs in BATCH mode on Spark, which takes no savepoints "
            "(a bounded job restarts from its input); run it in STREAMING mode to take one"
        )

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> str:
        raise UnsupportedFeatureError(
            f"stop_with_savepoint: job {self._job.job_id} runs in BATCH mode on Spark, which takes no savepoints; "
            "cancel it, or run it in STREAMING mode to stop it with a savepoint"
        )

    def get_job_execution_result(self, timeout: float | None = None) -> JobExecutionResult:
        return self._job.wait(timeout)

    wait = get_job_execution_result


class SparkExecutor:
    """Runs StreamGraphs in BATCH mode on Spark (`local[*]` unless `spark.master` says otherwise)."""

    def __call__(self, graph: StreamGraph) -> JobExecutionResult:
        job = BatchJob(graph)
        try:
            return job.run()
        except KeyboardInterrupt:
            job.cancel()
            raise

    def start_job(self, graph: StreamGraph) -> BatchJobClient:
        job = BatchJob(graph)
        job.start()
        return BatchJobClient(job)
