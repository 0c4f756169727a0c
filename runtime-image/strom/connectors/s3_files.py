"""S3 objects as the file source's files: a prefix lists like a directory, an object streams like a file.

`s3://bucket/prefix/` (also Flink's `s3a://` and `s3p://`; all go through boto3, no Hadoop jars) names
every object under the prefix, recursively, with the local enumeration's rule: a name below the given
prefix that starts with '.' or '_' hides that object or "directory". `s3://bucket/key` without a trailing
'/' is a directory when objects exist under `key/`, else the object `key` itself (read even if hidden:
the user named it). A prefix with no object under it is a missing path, as a missing directory is.

Objects are streamed (GetObject's body), never downloaded whole. A connection that breaks mid-object
is resumed with a ranged GetObject from the byte reached, pinned to the object's ETag so that a
replaced object fails loudly instead of mixing two versions. The client is configured by the job's
`s3.*` options, the ones checkpoint storage reads (`strom.common.s3_client`). Failures name the URI.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import IO, Any

from strom.common.s3_client import (
    NOT_FOUND_CODES,
    S3Settings,
    create_s3_client,
    describe_s3_failure,
    error_code,
    split_s3_uri,
)
from strom.connectors.file_enumeration import is_hidden

# Bytes fetched per read from an object's body: large enough that per-read overhead vanishes next to
# the network, small enough that a reader holds little memory.
READ_BUFFER_BYTES = 256 * 1024


class S3SourceError(OSError):
    """Listing or reading S3 objects failed; the message names the URI, the endpoint and what to check."""


def files_under(prefix: str, keys: Iterable[str]) -> list[str]:
    """The keys below the directory `prefix` (ending in '/' or '') that a file source reads: no
    directory markers (keys ending in '/'), nothing whose path below `prefix` has a hidden part."""
    out = []
    for key in keys:
        if not key.startswith(prefix):
            continue
        rel = key[len(prefix) :]
        if not rel or rel.endswith("/"):
            continue
        if any(is_hidden(part) for part in rel.split("/")):
            continue
        out.append(key)
    return out


class S3Files:
    """Lists and opens objects for one reader; the boto3 client is built on first use."""

    def __init__(self, settings: S3Settings) -> None:
        self._settings = settings
        self._client: Any = None

    @classmethod
    def from_config(cls, config: Any) -> S3Files:
        return cls(S3Settings.from_config(config))

    def client(self) -> Any:
        if self._client is None:
            self._client = create_s3_client(self._settings)
        return self._client

    @property
    def endpoint(self) -> str:
        return str(self.client().meta.endpoint_url)

    # -- listing --------------------------------------------------------------------------------------
    def list_files(self, uri: str) -> list[str]:
        """The URIs of the objects a file source reads for `uri`, sorted by key."""
        scheme, bucket, key = split_s3_uri(uri)
        if key and not key.endswith("/"):
            under = self._list_keys(uri, bucket, key + "/")
            if under:
                return [f"{scheme}://{bucket}/{k}" for k in files_under(key + "/", under)]
            if self._object_exists(uri, bucket, key):
                return [f"{scheme}://{bucket}/{key}"]
            raise self._missing(uri, bucket)
        keys = self._list_keys(uri, bucket, key)
        if key and not keys:
            raise self._missing(uri, bucket)
        return [f"{scheme}://{bucket}/{k}" for k in files_under(key, keys)]

    def _list_keys(self, uri: str, bucket: str, prefix: str) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        keys: list[str] = []
        try:
            pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for page in pages:
                keys.extend(entry["Key"] for entry in page.get("Contents", ()))
        except (BotoCoreError, ClientError) as exc:
            raise self._failure(exc, "list", uri, bucket) from exc
        return sorted(keys)

    def _object_exists(self, uri: str, bucket: str, key: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client().head_object(Bucket=bucket, Key=key)
            return True
        except ClientError as exc:
            if error_code(exc) in NOT_FOUND_CODES:
                return False
            raise self._failure(exc, "list", uri, bucket) from exc
        except BotoCoreError as exc:
            raise self._failure(exc, "list", uri, bucket) from exc

    # -- reading --------------------------------------------------------------------------------------
    def open(self, uri: str) -> IO[bytes]:
        """A buffered binary stream of the object `uri`; raises `FileNotFoundError` if it is gone."""
        _, bucket, key = split_s3_uri(uri)
        raw = S3ObjectStream(self, uri, bucket, key, max_attempts=self._settings.max_attempts)
        return io.BufferedReader(raw, buffer_size=READ_BUFFER_BYTES)

    def get_object(self, uri: str, bucket: str, key: str, *, start: int = 0, etag: str | None = None) -> Any:
        """GetObject's response from byte `start` (of the version `etag` when given); None when `start`
        is the end of the object (S3 refuses a range that starts there)."""
        from botocore.exceptions import BotoCoreError, ClientError

        extra: dict[str, str] = {}
        if start:
            extra["Range"] = f"bytes={start}-"
        if etag:
            extra["IfMatch"] = etag
        try:
            return self.client().get_object(Bucket=bucket, Key=key, **extra)
        except ClientError as exc:
            code = error_code(exc)
            if code in NOT_FOUND_CODES:
                raise FileNotFoundError(f"file source: object {uri} does not exist (any more)") from exc
            if code == "InvalidRange" and start:
                return None
            if code in ("PreconditionFailed", "412"):
                raise S3SourceError(
                    f"file source: object {uri} was replaced while it was being read (its ETag changed); "
                    "a file source reads objects that are complete and no longer written"
                ) from exc
            raise self._failure(exc, "read", uri, bucket) from exc
        except BotoCoreError as exc:
            raise self._failure(exc, "read", uri, bucket) from exc

    # -- errors ---------------------------------------------------------------------------------------
    def _missing(self, uri: str, bucket: str) -> FileNotFoundError:
        return FileNotFoundError(
            f"file source: path {uri!r} does not exist (no object and no object under that prefix "
            f"at S3 endpoint {self.endpoint}, bucket {bucket!r})"
        )

    def _failure(self, exc: Exception, action: str, uri: str, bucket: str) -> S3SourceError:
        try:
            endpoint = self.endpoint
        except Exception:  # noqa: BLE001 - a client that cannot even be built: say what the settings said
            endpoint = self._settings.endpoint or "(AWS default)"
        where = f"file source path {uri!r}"
        return S3SourceError(describe_s3_failure(exc, action=action, where=where, endpoint=endpoint, bucket=bucket))


class S3ObjectStream(io.RawIOBase):
    """The bytes of one object, read from GetObject's body; resumes a broken connection where it broke."""

    def __init__(self, files: S3Files, uri: str, bucket: str, key: str, *, max_attempts: int) -> None:
        super().__init__()
        self._files = files
        self._uri, self._bucket, self._key = uri, bucket, key
        self._max_attempts = max_attempts
        self._position = 0  # bytes delivered so far: where a resumed request starts
        self._body: Any = None
        response = files.get_object(uri, bucket, key)
        self._etag: str | None = response.get("ETag")
        self._body = response["Body"]

    def readable(self) -> bool:
        return True

    # hot path: called per buffer fill (READ_BUFFER_BYTES), not per record
    def readinto(self, buffer: Any) -> int:
        """Attempts count per call: a connection that breaks after progress is resumed again, one that
        breaks `s3.attempts.maximum` times in a row without delivering a byte fails the read."""
        from botocore.exceptions import BotoCoreError

        attempt = 1
        while True:
            if self._body is None:
                return 0
            try:
                data = self._body.read(len(buffer))
                break
            except (BotoCoreError, OSError) as exc:
                if attempt >= self._max_attempts:
                    raise S3SourceError(
                        f"file source: reading {self._uri} broke off after {self._position} bytes "
                        f"({type(exc).__name__}: {exc}); gave up after {attempt} attempt(s) "
                        "('s3.attempts.maximum')"
                    ) from exc
                attempt += 1
                self._resume()
        n = len(data)
        buffer[:n] = data
        self._position += n
        return n

    def _resume(self) -> None:
        self._close_body()
        response = self._files.get_object(self._uri, self._bucket, self._key, start=self._position, etag=self._etag)
        self._body = None if response is None else response["Body"]

    def _close_body(self) -> None:
        if self._body is not None:
            try:
                self._body.close()
            finally:
                self._body = None

    def close(self) -> None:
        if not self.closed:
            self._close_body()
        super().close()
