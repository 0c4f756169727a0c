"""The Spark session BATCH jobs run on: found or started once per process.

An active session (a test fixture's, a notebook's) is used as it is. Otherwise one is started with
`spark.master` (default `local[*]`) and every `spark.*` key of the job's configuration passed
through (`-D spark.eventLog.enabled=true`, `-D spark.ui.enabled=false`, ...). Spark needs Java:
when JAVA_HOME is unset it is derived from the `java` on PATH, as the `java` launcher would.
Python workers get the driver's interpreter and import path, so a job's own modules import there.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from typing import Any

DEFAULT_MASTER = "local[*]"
# Defaults that differ from Spark's: a console progress bar would garble job output.
_DEFAULTS = {"spark.ui.showConsoleProgress": "false"}

# Spark's driver logs at WARN to stderr by default, with startup chatter ("Using Spark's default log4j
# profile", "Setting default log level", loopback-hostname and native-hadoop warnings) on every run. A
# batch job's terminal should show its output and its errors: the driver JVM gets this log4j2
# configuration (ERROR and above, to stderr) unless the job names its own through
# spark.driver.extraJavaOptions (-Dlog4j2.configurationFile=...). `-D spark.log.level=WARN` brings the
# warnings back once the context runs. The JVM's own "Using incubator modules" line stays.
QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# the loggers whose startup lines print "Setting default log level" when they are not configured
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
logger.context.name = org.apache.spark.SparkContext
logger.context.level = error
# a failed task's Python traceback reaches the driver, which fails the job with it: printed once, by the client
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = fatal
"""
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

_lock = threading.Lock()


class SparkUnavailableError(RuntimeError):
    """BATCH mode cannot start Spark: pyspark or Java is missing."""


def ensure_java_home(environ: dict[str, str] | Any = os.environ) -> str:
    """JAVA_HOME, set from `java` on PATH (symlinks resolved) when unset."""
    home = environ.get("JAVA_HOME")
    if home:
        return home
    java = shutil.which("java")
    if java is None:
        raise SparkUnavailableError(
            "BATCH mode runs on Spark, which needs Java 17 or newer: install a JDK or set JAVA_HOME"
        )
    home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    environ["JAVA_HOME"] = home
    return home


def spark_settings(config: Any, app_name: str) -> dict[str, str]:
    """The Spark configuration for a new session: our defaults < the job's `spark.*` keys."""
    settings = dict(_DEFAULTS)
    settings["spark.app.name"] = app_name
    settings["spark.master"] = DEFAULT_MASTER
    if config is not None:
        for key, value in config.to_dict().items():
            if key.startswith("spark."):
                settings[key] = str(value).lower() if isinstance(value, bool) else str(value)
    if "log4j2.configurationFile" not in settings.get(_JAVA_OPTIONS, ""):
        own = settings.get(_JAVA_OPTIONS, "")
        settings[_JAVA_OPTIONS] = f"-Dlog4j2.configurationFile=file:{_quiet_log4j2_file()} {own}".strip()
    path = [p for p in sys.path if p and os.path.isdir(p)]
    inherited = settings.get("spark.executorEnv.PYTHONPATH")
    settings["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(([inherited] if inherited else []) + path)
    return settings


def _quiet_log4j2_file() -> str:
    """QUIET_LOG4J2 in a file of this user's temporary directory (written once, read by the JVM)."""
    path = os.path.join(tempfile.gettempdir(), f"strom-spark-log4j2-{os.getuid()}.properties")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == QUIET_LOG4J2:
                return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".strom-log4j2-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(QUIET_LOG4J2)
    os.replace(tmp, path)  # atomic: a concurrent JVM reads the old file or the new one
    return path


def spark_session(config: Any = None, app_name: str = "Strom Batch Job") -> Any:
    """The active SparkSession, or a new one configured from `config`."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise SparkUnavailableError(
            "BATCH mode runs on Spark through PySpark, which is not installed: pip install 'strom[spark]'"
        ) from e
    with _lock:
        # the session of this thread, else the process's (getActiveSession is per thread)
        active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if active is not None and active.sparkContext._jsc is not None:
            return active
        ensure_java_home()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder
        for key, value in spark_settings(config, app_name).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
