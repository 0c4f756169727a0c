"""One local Spark session for every BATCH-mode test (starting Spark takes seconds, a job far less).

Every test here may be the one that starts Spark, which on a busy 2-core machine can take a minute:
the per-test timeout is raised for this folder."""

import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="BATCH mode needs pyspark (pip install -e '.[test]')")
    import os

    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.skip("BATCH mode needs Java 17+ for Spark")
    from strom.batch.spark_session import spark_session
    from strom.common.configuration import Configuration

    conf = Configuration(
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.default.parallelism": "2",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "1g",
            "spark.python.worker.reuse": "true",
        }
    )
    session = spark_session(conf, "strom-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    try:
        session.stop()
    except Exception:  # noqa: BLE001 - a JVM already gone (e.g. after a timeout) has nothing to stop
        pass


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/batch/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.timeout(300))
