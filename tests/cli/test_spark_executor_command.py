"""`strom spark-executor`: the command a batch FlinkJob's executor pods run (Spark-on-Kubernetes).

Expected command lines are written out by hand from Spark's executor entrypoint (its
`entrypoint.sh executor` case): java, the SPARK_JAVA_OPT_n options in numeric order, -Xms/-Xmx,
the classpath, KubernetesExecutorBackend and its options from the pod's SPARK_* environment.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from strom.batch import executor_launcher

EXECUTOR_ENV = {"SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@count-driver.jobs.svc:7078",
                "SPARK_EXECUTOR_ID": "3", "SPARK_EXECUTOR_CORES": "2", "SPARK_APPLICATION_ID": "spark-app-1",
                "SPARK_EXECUTOR_POD_IP": "10.0.0.7", "SPARK_EXECUTOR_POD_NAME": "count-driver-1-exec-3",
                "SPARK_EXECUTOR_MEMORY": "2g", "SPARK_HOME": "/spark", "JAVA_HOME": "/jdk",
                "SPARK_JAVA_OPT_10": "-Dlast", "SPARK_JAVA_OPT_2": "-Dsecond", "SPARK_JAVA_OPT_0": "-Dfirst"}
BACKEND_ARGS = ["org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
                "--driver-url", "spark://CoarseGrainedScheduler@count-driver.jobs.svc:7078", "--executor-id", "3",
                "--cores", "2", "--app-id", "spark-app-1", "--hostname", "10.0.0.7", "--resourceProfileId", "0",
                "--podName", "count-driver-1-exec-3"]


def _strom(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strom.cli", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_executor_command_is_spark_executor_backend_from_the_pods_environment():
    assert executor_launcher.executor_command(EXECUTOR_ENV) == [
        "/jdk/bin/java", "-Dfirst", "-Dsecond", "-Dlast", "-Xms2g", "-Xmx2g",
        "-cp", os.pathsep.join(["/spark/conf", "/spark/jars/*"]), *BACKEND_ARGS]


def test_executor_command_names_missing_settings():
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != "SPARK_DRIVER_URL"}
    with pytest.raises(executor_launcher.LaunchError, match="SPARK_DRIVER_URL"):
        executor_launcher.executor_command(env)


def test_executor_command_finds_pyspark_when_spark_home_is_unset():
    pyspark = pytest.importorskip("pyspark")
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != "SPARK_HOME"}
    command = executor_launcher.executor_command(env)
    jars = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars")
    assert os.path.join(jars, "*") in command[command.index("-cp") + 1].split(os.pathsep)
    assert any(name.startswith("spark-kubernetes") for name in os.listdir(jars))  # the backend's jar is there


def test_strom_spark_executor_replaces_itself_with_the_executor_jvm(tmp_path: Path):
    """A stand-in `java` under JAVA_HOME prints the arguments it was exec'd with, as the real JVM gets them."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    env = dict(EXECUTOR_ENV, JAVA_HOME=str(tmp_path / "jdk"), PATH=os.environ.get("PATH", ""))
    proc = _strom("spark-executor", "executor", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["-Dfirst", "-Dsecond", "-Dlast", "-Xms2g", "-Xmx2g", "-cp",
                                        os.pathsep.join(["/spark/conf", "/spark/jars/*"]), *BACKEND_ARGS]


def test_strom_spark_executor_refuses_a_start_without_sparks_settings():
    proc = _strom("spark-executor", "executor", env={"PATH": os.environ.get("PATH", "")})
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("strom: error: spark-executor: not started by Spark? missing environment: "
                                   "SPARK_DRIVER_URL, SPARK_EXECUTOR_ID, SPARK_EXECUTOR_CORES, SPARK_APPLICATION_ID, "
                                   "SPARK_EXECUTOR_POD_IP, SPARK_EXECUTOR_POD_NAME")


def test_strom_spark_executor_refuses_other_arguments_as_a_usage_error():
    proc = _strom("spark-executor", "driver", env=dict(EXECUTOR_ENV, PATH=os.environ.get("PATH", "")))
    assert proc.returncode == 2 and "unexpected arguments ['driver']" in proc.stderr


def test_strom_help_lists_spark_executor_and_it_has_its_own_help():
    env = {"PATH": os.environ.get("PATH", "")}
    assert "spark-executor" in _strom("--help", env=env).stdout
    own = _strom("spark-executor", "--help", env=env)
    assert own.returncode == 0 and own.stdout.startswith("usage: strom spark-executor")
