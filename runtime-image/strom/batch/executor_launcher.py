"""`strom spark-executor`: the entry point of a Spark executor pod of a batch FlinkJob.

Spark creates executor pods from the job's image with the argument `executor` and their settings
in SPARK_* environment variables; Spark's own images answer that with an entrypoint script. The
Strom runtime image's entry point is `strom`, so the executor pod template the operator builds
(strom_operator/batch/driver.py) runs `strom spark-executor` (Spark appends `executor`): it finds
Spark (SPARK_HOME, else the installed pyspark package) and Java (JAVA_HOME, else `java` on PATH)
and replaces itself with `java ... org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend`.
Standard library only, and pyspark is only located, not imported: the JVM does the work.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping

BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
# (backend option, environment variable Spark sets on the executor pod, default when unset)
BACKEND_OPTIONS = (
    ("--driver-url", "SPARK_DRIVER_URL", None),
    ("--executor-id", "SPARK_EXECUTOR_ID", None),
    ("--cores", "SPARK_EXECUTOR_CORES", None),
    ("--app-id", "SPARK_APPLICATION_ID", None),
    ("--hostname", "SPARK_EXECUTOR_POD_IP", None),
    ("--resourceProfileId", "SPARK_RESOURCE_PROFILE_ID", "0"),
    ("--podName", "SPARK_EXECUTOR_POD_NAME", None),
)
JAVA_OPT_PREFIX = "SPARK_JAVA_OPT_"


class LaunchError(RuntimeError):
    """The executor cannot start: a setting Spark should have given is missing."""


def spark_home(environ: Mapping[str, str]) -> str:
    home = environ.get("SPARK_HOME")
    if home:
        return home
    try:
        import pyspark
    except ImportError as e:
        raise LaunchError("neither SPARK_HOME nor the pyspark package: the image cannot run Spark executors") from e
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def java_binary(environ: Mapping[str, str]) -> str:
    home = environ.get("JAVA_HOME")
    if home:
        return os.path.join(home, "bin", "java")
    java = shutil.which("java", path=environ.get("PATH"))
    if java is None:
        raise LaunchError("no Java: set JAVA_HOME or put `java` on PATH (Spark executors run on the JVM)")
    return java


def java_options(environ: Mapping[str, str]) -> list[str]:
    """SPARK_JAVA_OPT_0, _1, ...: one JVM option each, in their numeric order (not string order)."""
    numbered = []
    for key, value in environ.items():
        suffix = key[len(JAVA_OPT_PREFIX):]
        if key.startswith(JAVA_OPT_PREFIX) and suffix.isdigit():
            numbered.append((int(suffix), value))
    return [value for _, value in sorted(numbered)]


def classpath(environ: Mapping[str, str], home: str) -> str:
    parts = [environ.get("SPARK_CLASSPATH", ""), os.path.join(home, "conf"), os.path.join(home, "jars", "*"),
             environ.get("SPARK_DIST_CLASSPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def executor_command(environ: Mapping[str, str]) -> list[str]:
    """The executor JVM's command line from the pod's environment."""
    missing = [var for _, var, default in BACKEND_OPTIONS if default is None and not environ.get(var)]
    if missing:
        raise LaunchError(f"not started by Spark? missing environment: {', '.join(missing)}")
    home = spark_home(environ)
    memory = environ.get("SPARK_EXECUTOR_MEMORY", "1g")
    command = [java_binary(environ), *java_options(environ), f"-Xms{memory}", f"-Xmx{memory}",
               "-cp", classpath(environ, home), BACKEND]
    for option, var, default in BACKEND_OPTIONS:
        command += [option, environ.get(var) or str(default)]
    return command


USAGE = """\
usage: strom spark-executor [executor]

Starts a Spark executor (KubernetesExecutorBackend) from the SPARK_* environment that
Spark-on-Kubernetes gives the executor pods of a batch FlinkJob; Spark runs it, not a user.
"""


def main(args: list[str]) -> int:
    """`strom spark-executor [executor]`: exec the executor JVM; 1 if Spark's settings are missing, 2 on usage."""
    if args in (["-h"], ["--help"]):
        print(USAGE, end="")
        return 0
    # Spark passes "executor" (its images' entrypoint mode); anything else is not for this command.
    if args not in ([], ["executor"]):
        print(f"strom: error: spark-executor: unexpected arguments {args!r}; Spark starts executors with "
              "'executor'", file=sys.stderr)
        return 2
    try:
        command = executor_command(os.environ)
    except LaunchError as e:
        print(f"strom: error: spark-executor: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execv(command[0], command)
    return 0  # not reached: exec replaced the process
