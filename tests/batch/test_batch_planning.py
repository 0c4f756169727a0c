"""BATCH mode decisions that need no Spark: runtime mode resolution, graph-build refusals, routing,
CLI flags and Spark settings."""

import pytest
from strom.batch.plan import build_plan
from strom.batch.routing import BatchRouter
from strom.batch.spark_executor import memory_bytes
from strom.batch.spark_session import ensure_java_home, spark_settings
from strom.batch.validation import BatchModeError
from strom.cli import build_configuration, parse_run_args
from strom.common import Configuration
from strom.common.key_groups import stable_hash
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from strom.datastream.connectors.datagen import DataGeneratorSource
from strom.datastream.executors import BATCH_EXECUTOR, DEFAULT_EXECUTOR, resolve_runtime_mode
from strom.datastream.window import TumblingProcessingTimeWindows


def env_in(mode):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    return env


def unbounded(env):
    return env.from_source(DataGeneratorSource(lambda i: i, None), WatermarkStrategy.no_watermarks(), "endless")


def test_automatic_mode_is_batch_iff_every_source_is_bounded():
    env = env_in(RuntimeExecutionMode.AUTOMATIC)
    env.from_sequence(1, 10).union(env.from_collection([1, 2])).print()
    assert resolve_runtime_mode(env.get_stream_graph()) == "BATCH"
    env2 = env_in(RuntimeExecutionMode.AUTOMATIC)
    env2.from_sequence(1, 10).union(unbounded(env2)).print()
    assert resolve_runtime_mode(env2.get_stream_graph()) == "STREAMING"
    assert BATCH_EXECUTOR != DEFAULT_EXECUTOR


def test_unbounded_source_in_batch_mode_fails_at_execute_naming_the_source():
    env = env_in(RuntimeExecutionMode.BATCH)
    unbounded(env).map(lambda x: x).print()
    refused = "operator 'Source: endless' cannot run in BATCH mode: its source is unbounded"
    with pytest.raises(BatchModeError, match=refused):
        env.execute("refused")


def test_processing_time_windows_fail_at_execute_naming_the_operator():
    env = env_in(RuntimeExecutionMode.BATCH)
    env.from_sequence(1, 10).key_by(lambda x: x % 2).window(TumblingProcessingTimeWindows.of(1000)).reduce(
        lambda a, b: a + b
    ).name("per-second sums").print()
    with pytest.raises(BatchModeError, match="'per-second sums'.*processing-time windows"):
        env.execute("refused")


def test_hash_routing_sends_keys_to_the_subtask_of_their_key_group():
    env = env_in(RuntimeExecutionMode.BATCH)
    env.set_parallelism(3)
    env.from_collection(list(range(50))).key_by(lambda x: f"k{x % 11}").map(lambda x: x).print()
    plan = build_plan(env.get_stream_graph())
    keyed = next(s for s in plan.stages if s.sort_by_time)
    targets = BatchRouter(keyed.inputs[0], keyed, 0).targets(list(range(50)))
    assert targets == [(stable_hash(f"k{value % 11}") % 128) * 3 // 128 for value in range(50)]


def test_cli_runtime_mode_and_spark_master_become_configuration():
    request = parse_run_args(
        ["job.py", "--runtime-mode", "batch", "--spark-master", "local[3]", "-D", "spark.eventLog.enabled=true"]
    )
    conf = build_configuration(request, {})
    assert conf.get("execution.runtime-mode") == "BATCH"
    settings = spark_settings(conf, "job")
    assert settings["spark.master"] == "local[3]"
    assert settings["spark.eventLog.enabled"] == "true"
    assert settings["spark.app.name"] == "job"


def test_spark_defaults_to_local_star_and_passes_the_import_path_to_workers():
    settings = spark_settings(Configuration(), "job")
    assert settings["spark.master"] == "local[*]"
    assert settings["spark.executorEnv.PYTHONPATH"]


def test_java_home_is_derived_from_java_on_path_when_unset(tmp_path, monkeypatch):
    jdk = tmp_path / "jdk-17"
    (jdk / "bin").mkdir(parents=True)
    java = jdk / "bin" / "java"
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    link_dir = tmp_path / "usr-bin"
    link_dir.mkdir()
    (link_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(link_dir))
    environ: dict[str, str] = {}
    assert ensure_java_home(environ) == str(jdk)
    assert environ["JAVA_HOME"] == str(jdk)


def test_python_worker_memory_sizes_parse_as_spark_writes_them():
    assert memory_bytes("512m") == 512 << 20
    assert memory_bytes("2g") == 2 << 30
    assert memory_bytes("1536k") == 1536 << 10
    assert memory_bytes("300") == 300 << 20  # a bare number is MiB
    with pytest.raises(ValueError, match="'spark.python.worker.memory'.*'512m'"):
        memory_bytes("lots")
