"""One local Spark session for every batch-SQL test (starting Spark takes seconds, a query far less), and a
check that a test's SQL really ran on Spark SQL: the runner logs each fallback to the streaming runtime."""

from __future__ import annotations

import logging
import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="batch SQL on Spark needs pyspark (pip install -e '.[test]')")
    import os

    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.skip("batch SQL on Spark needs Java 17+")
    from strom.batch.spark_session import spark_session
    from strom.common.configuration import Configuration

    conf = Configuration({
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.default.parallelism": "2",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": "1g",
        "spark.python.worker.reuse": "true",
    })
    session = spark_session(conf, "strom-batch-sql-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    try:
        session.stop()
    except Exception:  # noqa: BLE001 - a JVM already gone (e.g. after a timeout) has nothing to stop
        pass


class FallbackLog(logging.Handler):
    """The reasons the runner gave for running plans on the streaming runtime instead of Spark."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.reasons.append(record.getMessage())


@pytest.fixture
def fallbacks(spark):
    """Reasons logged during the test; a test that expects Spark asserts the list stays empty."""
    logger = logging.getLogger("strom.batch.sql.runner")
    handler = FallbackLog()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield handler.reasons
    logger.removeHandler(handler)
    logger.setLevel(level)


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/batch_sql/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.timeout(300))
