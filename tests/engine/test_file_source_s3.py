"""FileSource over S3 (`s3://`, `s3a://`) against a real S3 server (SeaweedFS on loopback).

Objects are uploaded with a plain boto3 client; every expected value is computed by plain Python
from what was uploaded (hidden names filtered by hand), never from an earlier run of the engine.
"""

from __future__ import annotations

import bz2
import gzip
import secrets
import threading
import time
from collections import Counter
from typing import Any

import pytest
from strom.common import Configuration, Types, WatermarkStrategy
from strom.common.s3_client import S3Settings, create_s3_client
from strom.connectors.base import SourceReaderContext
from strom.connectors.s3_files import S3Files, S3ObjectStream, S3SourceError, files_under
from strom.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from strom.datastream.connectors.file_system import FileSource, StreamFormat
from strom.datastream.functions import CheckpointListener, MapFunction
from strom.datastream.state import ValueStateDescriptor
from strom.runtime.local_executor import LocalJob
from strom.testing import collect

from tests.engine.s3_server import (
    S3Server,
    free_ports,
    s3_server_fixture,  # noqa: F401  (registers `s3_server`)
)

from .connector_testing import wait_until


def upload(s3: S3Server, objects: dict[str, bytes]) -> None:
    # the engine's client: it drops `Expect: 100-continue` from empty PUTs (a folder marker), which
    # would make SeaweedFS stall the next request on the connection for the whole read timeout
    client = create_s3_client(S3Settings.from_config(s3.config()))
    for key, body in objects.items():
        client.put_object(Bucket=s3.bucket, Key=key, Body=body)


def lines(n: int, tag: str) -> bytes:
    return "".join(f"{tag}-{i}\n" for i in range(n)).encode()


def decoded_lines(key: str, body: bytes) -> list[str]:
    """The reference reading of one uploaded object: decompress by suffix, split lines."""
    if key.endswith(".gz"):
        body = gzip.decompress(body)
    elif key.endswith(".bz2"):
        body = bz2.decompress(body)
    return body.decode().splitlines()


def text_source(*paths: str, monitor_ms: int | None = None) -> FileSource:
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)
    if monitor_ms is not None:
        builder = builder.monitor_continuously(monitor_ms)
    return builder.build()


@pytest.fixture
def tree(s3_server: S3Server) -> tuple[str, dict[str, bytes], dict[str, bytes]]:
    """A prefix with a nested tree, compressed objects, hidden names and a directory marker, plus
    siblings that share the prefix's leading characters. Returns (prefix, all objects, readable ones)."""
    prefix = f"in-{secrets.token_hex(4)}"
    readable = {
        f"{prefix}/a.txt": b"one\ntwo\r\nthree",  # CRLF and no final newline
        f"{prefix}/sub/b.txt": lines(1500, "b"),
        f"{prefix}/sub/deeper/c.txt.gz": gzip.compress(lines(700, "c")),
        f"{prefix}/sub/d.log.bz2": bz2.compress(lines(300, "d")),
        f"{prefix}/e.txt": b"four\n\nsix\n",  # an empty line is a record
    }
    hidden = {
        f"{prefix}/.hidden.txt": b"never\n",
        f"{prefix}/_SUCCESS": b"never\n",
        f"{prefix}/_tmp/f.txt": b"never\n",
        f"{prefix}/sub/.staging/g.txt": b"never\n",
        f"{prefix}/sub/": b"",  # a "folder" marker
        f"{prefix}-sibling/h.txt": b"never\n",
        f"{prefix}x.txt": b"never\n",
    }
    everything = {**readable, **hidden}
    upload(s3_server, everything)
    return prefix, everything, readable


def reference(readable: dict[str, bytes]) -> Counter[str]:
    return Counter(line for key, body in readable.items() for line in decoded_lines(key, body))


# -- listing ------------------------------------------------------------------------------------------


def test_files_under_skips_markers_hidden_names_and_siblings() -> None:
    keys = ["p/a", "p/.b", "p/_c/d", "p/e/", "p/e/f", "p/e/.g/h", "px/i", "p/e/_j"]
    assert files_under("p/", keys) == ["p/a", "p/e/f"]
    assert files_under("", ["a", "_b", "c/d", "c/.e"]) == ["a", "c/d"]


def test_a_prefix_lists_like_a_directory_with_every_scheme(s3_server: S3Server, tree: Any) -> None:
    prefix, _, readable = tree
    files = S3Files.from_config(s3_server.config())
    for scheme in ("s3", "s3a", "s3p"):
        want = sorted(f"{scheme}://{s3_server.bucket}/{k}" for k in readable)
        assert files.list_files(f"{scheme}://{s3_server.bucket}/{prefix}/") == want
        assert files.list_files(f"{scheme}://{s3_server.bucket}/{prefix}") == want  # no trailing '/'


def test_an_object_named_explicitly_is_read_even_if_hidden(s3_server: S3Server, tree: Any) -> None:
    prefix, everything, _ = tree
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(s3_server.config()))
    src = text_source(f"s3a://{s3_server.bucket}/{prefix}/.hidden.txt", f"s3://{s3_server.bucket}/{prefix}/a.txt")
    got = collect(env.from_source(src, WatermarkStrategy.no_watermarks(), "explicit"))
    want = [line for key in (".hidden.txt", "a.txt") for line in decoded_lines(key, everything[f"{prefix}/{key}"])]
    assert Counter(got) == Counter(want)


# -- jobs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parallelism", [1, 2])
def test_job_reads_every_line_under_a_prefix(s3_server: S3Server, tree: Any, parallelism: int) -> None:
    prefix, _, readable = tree
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(s3_server.config()))
    env.set_parallelism(parallelism)
    src = text_source(f"s3://{s3_server.bucket}/{prefix}/")
    got = collect(env.from_source(src, WatermarkStrategy.no_watermarks(), "s3"))
    assert Counter(got) == reference(readable)


@pytest.mark.parametrize("old_p,new_p", [(2, 1), (2, 3)])
def test_readers_resume_mid_object_at_another_parallelism(
    s3_server: S3Server, tree: Any, old_p: int, new_p: int
) -> None:
    """Splits are (object URI, lines read): pooled from the old readers and dealt out to the new ones
    as the SourceOperator does, nothing is lost or read twice, compressed objects included."""
    prefix, _, readable = tree
    config = s3_server.config()
    source = text_source(f"s3://{s3_server.bucket}/{prefix}/")
    emitted, pooled = [], []
    for i in range(old_p):
        reader = source.create_reader(SourceReaderContext(i, old_p, config))
        emitted += reader.poll(400 + 333 * i) or []  # stops inside an object
        pooled += reader.snapshot_splits()
        reader.close()
    assert any(0 < offset for _, offset in pooled), "no reader stopped inside an object"
    rest = []
    for j in range(new_p):
        reader = source.create_reader(SourceReaderContext(j, new_p, config))
        reader.restore_splits(pooled[j::new_p])
        while (batch := reader.poll(256)) is not None:
            rest += batch
        reader.close()
    assert Counter(emitted + rest) == reference(readable)


def test_a_restored_reader_reads_its_splits_without_listing_the_prefix(s3_server: S3Server) -> None:
    """The splits say what is left; the prefix (here: gone, its objects moved elsewhere) is not listed."""
    key = f"moved-{secrets.token_hex(4)}/a.txt"
    upload(s3_server, {key: lines(10, "a")})
    source = text_source(f"s3://{s3_server.bucket}/gone-{secrets.token_hex(4)}/")
    reader = source.create_reader(SourceReaderContext(0, 1, s3_server.config()))
    reader.restore_splits([(f"s3://{s3_server.bucket}/{key}", 4)])
    got = []
    while (batch := reader.poll(100)) is not None:
        got += batch
    assert got == [f"a-{i}" for i in range(4, 10)]


def test_monitoring_picks_up_objects_uploaded_later_exactly_once(s3_server: S3Server) -> None:
    prefix = f"watch-{secrets.token_hex(4)}"
    upload(s3_server, {f"{prefix}/first.txt": lines(5, "first")})
    source = text_source(f"s3a://{s3_server.bucket}/{prefix}/", monitor_ms=20)
    readers = [source.create_reader(SourceReaderContext(i, 2, s3_server.config())) for i in range(2)]
    got: list[str] = []

    def drain_until(n: int) -> None:
        def step() -> bool:
            for r in readers:
                batch = r.poll(100)
                assert batch is not None, "a monitored source never ends"
                got.extend(batch)
            return len(got) >= n

        wait_until(step, what=f"{n} lines")

    drain_until(5)
    later = {f"{prefix}/later-{i}.txt": lines(3, f"l{i}") for i in range(5)}
    upload(s3_server, {**later, f"{prefix}/_in-progress": b"never\n"})
    drain_until(20)
    # more scans happen: nothing is read twice
    upload(s3_server, {f"{prefix}/last.txt.gz": gzip.compress(b"z\n")})
    drain_until(21)
    for r in readers:
        r.close()
    want = Counter(decoded_lines("x", lines(5, "first")))
    for key, body in later.items():
        want.update(decoded_lines(key, body))
    want["z"] += 1
    assert Counter(got) == want


# -- a failure restores the source mid-object from a checkpoint ---------------------------------------

_lock = threading.Lock()
LATEST: dict[int, int] = {}
KEYS = 7


class FailAfterACheckpoint(MapFunction, CheckpointListener):
    """In attempt 0: slows the source down until a checkpoint completed, then fails on the next record.
    The failure thus always follows a completed checkpoint taken while objects were half read."""

    def open(self, runtime_context: Any) -> None:
        self.attempt = runtime_context.get_attempt_number()
        self.checkpointed = threading.Event()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.checkpointed.set()

    def map(self, value: str) -> int:
        if self.attempt == 0:
            if self.checkpointed.is_set():
                raise RuntimeError("injected failure after a completed checkpoint")
            time.sleep(0.001)  # throttles the source so that a checkpoint lands mid-object
        return int(value)


class SumPerKey(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.sum = runtime_context.get_state(ValueStateDescriptor("sum", Types.LONG()))

    def process_element(self, value: int, ctx: Any) -> Any:
        total = (self.sum.value() or 0) + value
        self.sum.update(total)
        with _lock:
            LATEST[ctx.get_current_key()] = total  # the latest sum per key wins: replays do not matter
        yield total


def test_failover_restores_readers_mid_object_and_sums_are_exact(s3_server: S3Server) -> None:
    prefix = f"sums-{secrets.token_hex(4)}"
    objects = {f"{prefix}/part-{k}.txt": "".join(f"{k * 10_000 + i}\n" for i in range(1200)).encode() for k in range(4)}
    objects[f"{prefix}/part-4.txt.gz"] = gzip.compress("".join(f"{40_000 + i}\n" for i in range(1200)).encode())
    upload(s3_server, objects)
    LATEST.clear()
    env = StreamExecutionEnvironment.get_execution_environment(Configuration(s3_server.config()))
    env.set_parallelism(2)
    env.enable_checkpointing(50)
    (
        env.from_source(text_source(f"s3://{s3_server.bucket}/{prefix}"), WatermarkStrategy.no_watermarks(), "s3")
        .map(FailAfterACheckpoint(), output_type=Types.LONG())
        .key_by(lambda v: v % KEYS, key_type=Types.INT())
        .process(SumPerKey(), output_type=Types.LONG())
    )
    graph = env.get_stream_graph("s3 sums", clear_transformations=True)
    graph.config.set("restart-strategy.type", "fixed-delay")
    graph.config.set("restart-strategy.fixed-delay.attempts", 2)
    graph.config.set("restart-strategy.fixed-delay.delay", "50 ms")
    job = LocalJob(graph)
    job.start()
    job.wait(60)
    assert job.restarts == 1
    assert job.restored_checkpoint_id is not None, "the restart did not restore a checkpoint"
    values = [int(v) for key, body in objects.items() for v in decoded_lines(key, body)]
    assert LATEST == {k: sum(v for v in values if v % KEYS == k) for k in range(KEYS)}


# -- a broken connection is resumed where it broke ----------------------------------------------------


class _BreakingBody:
    """A GetObject body that raises after `fail_after` bytes (a connection reset mid-object)."""

    def __init__(self, data: bytes, fail_after: int | None) -> None:
        self._data, self._pos, self._fail_after = data, 0, fail_after

    def read(self, n: int) -> bytes:
        if self._fail_after is not None and self._pos >= self._fail_after:
            raise ConnectionResetError("connection reset by peer")
        end = self._pos + n if self._fail_after is None else min(self._pos + n, self._fail_after)
        chunk = self._data[self._pos : end]
        self._pos += len(chunk)
        return chunk

    def close(self) -> None:
        pass


class _FlakyObjects:
    """Serves one object; the i-th request's body breaks off after `break_after[i]` bytes (None: never).
    Records each request's (start byte, ETag condition)."""

    def __init__(self, data: bytes, break_after: list[int | None]) -> None:
        self.data, self.break_after, self.requests = data, break_after, []

    def get_object(self, uri: str, bucket: str, key: str, *, start: int = 0, etag: str | None = None) -> Any:
        self.requests.append((start, etag))
        fail_after = self.break_after[len(self.requests) - 1]
        return {"ETag": '"v1"', "Body": _BreakingBody(self.data[start:], fail_after)}


def test_a_broken_connection_resumes_with_a_ranged_request_of_the_same_version() -> None:
    data = gzip.compress(lines(3000, "x"))
    flaky = _FlakyObjects(data, [1000, 1000, None])
    stream = S3ObjectStream(flaky, "s3://b/k.gz", "b", "k.gz", max_attempts=2)  # type: ignore[arg-type]
    assert gzip.decompress(stream.read()) == lines(3000, "x")
    assert flaky.requests == [(0, None), (1000, '"v1"'), (2000, '"v1"')]


def test_a_connection_that_breaks_without_progress_fails_naming_the_object_and_the_option() -> None:
    flaky = _FlakyObjects(lines(3000, "x"), [1000, 0, 0])
    stream = S3ObjectStream(flaky, "s3://b/k.txt", "b", "k.txt", max_attempts=2)  # type: ignore[arg-type]
    with pytest.raises(S3SourceError, match=r"reading s3://b/k.txt broke off after 1000 bytes.*s3.attempts.maximum"):
        stream.read()


# -- errors name the URI ------------------------------------------------------------------------------


def _read_all(uri: str, config: dict[str, Any]) -> list[str]:
    reader = text_source(uri).create_reader(SourceReaderContext(0, 1, config))
    out: list[str] = []
    while (batch := reader.poll(100)) is not None:
        out += batch
    return out


def test_a_missing_prefix_is_a_missing_path(s3_server: S3Server) -> None:
    uri = f"s3://{s3_server.bucket}/nothing-{secrets.token_hex(4)}/"
    with pytest.raises(FileNotFoundError, match=f"path '{uri}' does not exist"):
        _read_all(uri, s3_server.config())


def test_a_missing_bucket_is_named_with_the_uri(s3_server: S3Server) -> None:
    with pytest.raises(S3SourceError, match=r"'s3a://no-such-bucket-here/x/'.*bucket 'no-such-bucket-here' does not"):
        _read_all("s3a://no-such-bucket-here/x/", s3_server.config())


def test_wrong_credentials_name_the_uri_and_the_keys_but_not_the_secret(s3_server: S3Server) -> None:
    wrong = "wrong-" + secrets.token_hex(12)
    uri = f"s3://{s3_server.bucket}/x/"
    with pytest.raises(S3SourceError) as err:
        _read_all(uri, s3_server.config(**{"s3.secret-key": wrong}))
    text = str(err.value)
    assert uri in text and "'s3.secret-key'" in text and wrong not in text and s3_server.secret_key not in text


def test_no_credentials_is_a_clear_error(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata probe off loopback
    config = {k: v for k, v in s3_server.config().items() if k not in ("s3.access-key", "s3.secret-key")}
    uri = f"s3://{s3_server.bucket}/x/"
    with pytest.raises(S3SourceError, match=rf"'{uri}': no S3 credentials.*'s3.access-key'"):
        _read_all(uri, config)


def test_an_unreachable_endpoint_fails_naming_the_uri_and_the_endpoint() -> None:
    (port,) = free_ports(1)  # nothing listens there
    config = {"s3.endpoint": f"http://127.0.0.1:{port}", "s3.access-key": "k", "s3.secret-key": "s",
              "s3.path.style.access": "true", "s3.connection.establish.timeout": "500 ms",
              "s3.attempts.maximum": 1}
    with pytest.raises(S3SourceError, match=rf"'s3://b/p/': cannot reach S3 endpoint http://127.0.0.1:{port}"):
        _read_all("s3://b/p/", config)


def test_an_endpoint_without_a_scheme_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"invalid value 'minio:9000' for 's3.endpoint': expected a URL"):
        _read_all("s3://b/p/", {"s3.endpoint": "minio:9000"})


def test_a_malformed_uri_fails_when_the_source_is_built() -> None:
    with pytest.raises(ValueError, match="invalid S3 URI 's3:///no-bucket'"):
        text_source("s3:///no-bucket")
