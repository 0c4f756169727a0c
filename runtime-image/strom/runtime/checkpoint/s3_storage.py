"""`S3CheckpointStorage`: checkpoint objects in an S3 bucket (AWS or an S3-compatible store), via boto3.

A PUT is atomic in S3, so writes need no temporary object. Credentials come from `s3.access-key`
/ `s3.secret-key` or, when absent, boto3's standard chain; they live only inside the boto3 client
and never appear in repr(), logs or errors. Failures become `CheckpointStorageError`s naming the
endpoint, the bucket and the object.
"""

from __future__ import annotations

import builtins

from botocore.exceptions import BotoCoreError, ClientError

from strom.common.config_options import ConfigError
from strom.common.s3_client import (
    NOT_FOUND_CODES,
    S3Settings,
    create_s3_client,
    describe_s3_failure,
    error_code,
    split_s3_uri,
)
from strom.runtime.checkpoint.errors import CheckpointStorageError, StorageAccessError, StorageObjectNotFoundError
from strom.runtime.checkpoint.layout import normalize_path, normalize_prefix

__all__ = ["S3CheckpointStorage", "S3Settings", "parse_s3_uri"]

_DELETE_BATCH = 1000  # DeleteObjects accepts at most 1000 keys per request


def parse_s3_uri(uri: str) -> tuple[str, str, str]:
    """(scheme, bucket, key prefix ending in '/' or '') of `s3://bucket/prefix`."""
    scheme, bucket, prefix = split_s3_uri(uri)
    try:
        key_prefix = normalize_prefix(prefix)
    except ValueError:
        raise ConfigError(f"invalid S3 URI {uri!r}: the prefix must be a plain path such as s3://bucket/a/b") from None
    return scheme, bucket, key_prefix


class S3CheckpointStorage:
    """Checkpoint objects under `s3://bucket/prefix`."""

    def __init__(self, uri: str, settings: S3Settings | None = None) -> None:
        self._scheme, self._bucket, self._prefix = parse_s3_uri(uri)
        self._settings = settings or S3Settings()
        self._client = create_s3_client(self._settings)

    def __repr__(self) -> str:
        return f"S3CheckpointStorage({self.root_uri!r}, endpoint={self.endpoint!r})"

    @property
    def root_uri(self) -> str:
        return f"{self._scheme}://{self._bucket}/{self._prefix}".rstrip("/")

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def endpoint(self) -> str:
        """The endpoint URL in use (the configured one, else the AWS endpoint boto3 resolved)."""
        return str(self._client.meta.endpoint_url)

    def uri_of(self, path: str) -> str:
        return f"{self._scheme}://{self._bucket}/{self._key(path)}"

    def _key(self, path: str) -> str:
        return self._prefix + normalize_path(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        key = self._key(path)
        try:
            self._client.put_object(Bucket=self._bucket, Key=key, Body=bytes(data))
        except (BotoCoreError, ClientError) as exc:
            raise self._error(exc, "write", key) from exc

    def read_bytes(self, path: str) -> bytes:
        key = self._key(path)
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=key)
            data: bytes = response["Body"].read()  # boto3 ships no types: its responses are Any
            return data
        except (BotoCoreError, ClientError) as exc:
            raise self._error(exc, "read", key) from exc

    def exists(self, path: str) -> bool:
        key = self._key(path)
        try:
            self._client.head_object(Bucket=self._bucket, Key=key)
            return True
        except ClientError as exc:
            if error_code(exc) in NOT_FOUND_CODES:
                return False
            raise self._error(exc, "check", key) from exc
        except BotoCoreError as exc:
            raise self._error(exc, "check", key) from exc

    def list(self, prefix: str = "") -> list[str]:
        key_prefix = self._prefix + normalize_prefix(prefix)
        return sorted(k[len(self._prefix) :] for k in self._list_keys(key_prefix))

    def _list_keys(self, key_prefix: str) -> builtins.list[str]:  # builtins: `list` is a method of this class
        keys: list[str] = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=key_prefix)
            for page in pages:
                for entry in page.get("Contents", ()):
                    if not entry["Key"].endswith("/"):  # directory markers some stores create are not objects
                        keys.append(entry["Key"])
        except (BotoCoreError, ClientError) as exc:
            raise self._error(exc, "list", key_prefix) from exc
        return keys

    def delete(self, path: str) -> None:
        key = self._key(path)
        try:
            self._client.delete_object(Bucket=self._bucket, Key=key)
        except (BotoCoreError, ClientError) as exc:
            raise self._error(exc, "delete", key) from exc

    def delete_prefix(self, prefix: str) -> None:
        key_prefix = self._prefix + normalize_prefix(prefix)
        keys = self._list_keys(key_prefix)
        for i in range(0, len(keys), _DELETE_BATCH):
            batch = [{"Key": k} for k in keys[i : i + _DELETE_BATCH]]
            try:
                response = self._client.delete_objects(Bucket=self._bucket, Delete={"Objects": batch, "Quiet": True})
            except (BotoCoreError, ClientError) as exc:
                raise self._error(exc, "delete", key_prefix) from exc
            failed = response.get("Errors") or []
            if failed:
                first = failed[0]
                raise StorageAccessError(
                    f"cannot delete {len(failed)} object(s) under s3://{self._bucket}/{key_prefix} at endpoint "
                    f"{self.endpoint}, e.g. {first.get('Key')!r}: {first.get('Code')} {first.get('Message', '')}"
                )

    def _error(self, exc: Exception, action: str, key: str) -> CheckpointStorageError:
        """One clear line: what failed, which object, at which endpoint and bucket; never a credential."""
        where = f"s3://{self._bucket}/{key}"
        if isinstance(exc, ClientError) and error_code(exc) in NOT_FOUND_CODES:
            return StorageObjectNotFoundError(f"no such checkpoint object: {where}")
        return StorageAccessError(
            describe_s3_failure(exc, action=action, where=where, endpoint=self.endpoint, bucket=self._bucket)
        )
