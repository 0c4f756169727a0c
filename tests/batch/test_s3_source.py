"""BATCH mode on local Spark reads `s3a://` through the engine's FileSource (boto3 in the executors,
no Hadoop S3 jars), configured by the job's `s3.*` options; checked against plain-Python counts."""

import gzip
import secrets
from collections import Counter

import pytest
from strom.common import Configuration, WatermarkStrategy
from strom.common.s3_client import S3Settings, create_s3_client
from strom.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from strom.datastream.connectors.file_system import FileSource, StreamFormat

from tests.engine.s3_server import s3_server_fixture  # noqa: F401  (registers `s3_server`)

pytestmark = pytest.mark.usefixtures("spark")


def test_batch_word_count_over_an_s3a_prefix(s3_server):
    prefix = f"batch-{secrets.token_hex(4)}"
    words = ["to", "be", "or", "not", "to", "be", "that", "is"]
    readable = {
        f"{prefix}/part-0.txt": " ".join(words * 40).replace(" ", "\n").encode(),
        f"{prefix}/nested/part-1.txt.gz": gzip.compress("\n".join(words[::-1] * 25).encode()),
        f"{prefix}/nested/deeper/part-2.txt": "\n".join(words[2:] * 30).encode(),
    }
    hidden = {f"{prefix}/_SUCCESS": b"", f"{prefix}/.part-3.txt.inprogress": b"never\n"}
    client = create_s3_client(S3Settings.from_config(s3_server.config()))
    for key, body in {**readable, **hidden}.items():
        client.put_object(Bucket=s3_server.bucket, Key=key, Body=body)

    env = StreamExecutionEnvironment.get_execution_environment(Configuration(s3_server.config()))
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), f"s3a://{s3_server.bucket}/{prefix}/"
    ).build()
    counts = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "s3a lines")
        .map(lambda w: (w, 1))
        .key_by(lambda t: t[0])
        .sum(1)
    )
    with counts.execute_and_collect() as results:
        got = list(results)

    expected = Counter()
    for key, body in readable.items():
        expected.update((gzip.decompress(body) if key.endswith(".gz") else body).decode().splitlines())
    # BATCH semantics: a rolling sum emits each key's final value only, once
    assert sorted(got) == sorted(expected.items())
