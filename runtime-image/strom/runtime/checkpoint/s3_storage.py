"""`S3CheckpointStorage`: checkpoint objects in an S3 bucket (AWS or an S3-compatible store), via boto3.

A PUT is atomic in S3, so writes need no temporary object. Credentials come from `s3.access-key`
/ `s3.secret-key` or, when absent, boto3's standard chain; they live only inside the boto3 client
and never appear in repr(), logs or errors. Failures become `CheckpointStorageError`s naming the
endpoint, the bucket and the object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectionError as S3ConnectionError
from botocore.utils import determine_content_length

from strom.common.config_options import ConfigError
from strom.runtime.checkpoint import options
from strom.runtime.checkpoint.errors import CheckpointStorageError, StorageAccessError, StorageObjectNotFoundError
from strom.runtime.checkpoint.layout import normalize_path, normalize_prefix

_NOT_FOUND = ("404", "NoSuchKey", "NotFound")
_DENIED = ("403", "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken")
_DELETE_BATCH = 1000  # DeleteObjects accepts at most 1000 keys per request


@dataclass(frozen=True, slots=True)
class S3Settings:
    """How to reach S3. The keys are excluded from repr() so that no log line can carry them."""

    endpoint: str = ""
    region: str = ""
    path_style_access: bool = False
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    connect_timeout_ms: int = options.S3_CONNECT_TIMEOUT.default
    socket_timeout_ms: int = options.S3_SOCKET_TIMEOUT.default
    max_attempts: int = options.S3_ATTEMPTS.default

    @classmethod
    def from_config(cls, config: Any) -> S3Settings:
        """The `s3.*` options of a `Configuration`, a mapping or None."""
        settings = cls(
            endpoint=options.read_option(config, options.S3_ENDPOINT).strip(),
            region=options.read_option(config, options.S3_REGION).strip(),
            path_style_access=options.read_option(config, options.S3_PATH_STYLE_ACCESS),
            access_key=options.read_option(config, options.S3_ACCESS_KEY),
            secret_key=options.read_option(config, options.S3_SECRET_KEY),
            connect_timeout_ms=options.read_option(config, options.S3_CONNECT_TIMEOUT),
            socket_timeout_ms=options.read_option(config, options.S3_SOCKET_TIMEOUT),
            max_attempts=options.read_option(config, options.S3_ATTEMPTS),
        )
        if bool(settings.access_key) != bool(settings.secret_key):
            given, missing = (
                (options.S3_ACCESS_KEY.key, options.S3_SECRET_KEY.key)
                if settings.access_key
                else (options.S3_SECRET_KEY.key, options.S3_ACCESS_KEY.key)
            )
            raise ConfigError(f"{given!r} is set but {missing!r} is not: set both, or neither to use the AWS chain")
        return settings


def parse_s3_uri(uri: str) -> tuple[str, str, str]:
    """(scheme, bucket, key prefix ending in '/' or '') of `s3://bucket/prefix`."""
    scheme, sep, rest = uri.partition("://")
    bucket, _, prefix = rest.partition("/")
    if not sep or scheme.lower() not in ("s3", "s3a", "s3p") or not bucket:
        raise ConfigError(f"invalid S3 URI {uri!r}: expected s3://bucket/prefix")
    try:
        key_prefix = normalize_prefix(prefix)
    except ValueError:
        raise ConfigError(f"invalid S3 URI {uri!r}: the prefix must be a plain path such as s3://bucket/a/b") from None
    return scheme.lower(), bucket, key_prefix


class S3CheckpointStorage:
    """Checkpoint objects under `s3://bucket/prefix`."""

    def __init__(self, uri: str, settings: S3Settings | None = None) -> None:
        self._scheme, self._bucket, self._prefix = parse_s3_uri(uri)
        self._settings = settings or S3Settings()
        s = self._settings
        # a session of our own: boto3's default session is shared process-wide and not thread-safe
        session = boto3.session.Session(
            aws_access_key_id=s.access_key or None,
            aws_secret_access_key=s.secret_key or None,
            region_name=s.region or None,
        )
        self._client = session.client(
            "s3",
            endpoint_url=s.endpoint or None,
            config=BotoConfig(
                connect_timeout=s.connect_timeout_ms / 1000.0,
                read_timeout=s.socket_timeout_ms / 1000.0,
                retries={"max_attempts": s.max_attempts, "mode": "standard"},
                s3={"addressing_style": "path" if s.path_style_access else "auto"},
                signature_version="s3v4",
            ),
        )
        # after botocore's own handler of the same event, which adds the header
        self._client.meta.events.register_last("before-call.s3", _no_expect_header_for_empty_body)

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
            return response["Body"].read()
        except (BotoCoreError, ClientError) as exc:
            raise self._error(exc, "read", key) from exc

    def exists(self, path: str) -> bool:
        key = self._key(path)
        try:
            self._client.head_object(Bucket=self._bucket, Key=key)
            return True
        except ClientError as exc:
            if _code(exc) in _NOT_FOUND:
                return False
            raise self._error(exc, "check", key) from exc
        except BotoCoreError as exc:
            raise self._error(exc, "check", key) from exc

    def list(self, prefix: str = "") -> list[str]:
        key_prefix = self._prefix + normalize_prefix(prefix)
        return sorted(k[len(self._prefix) :] for k in self._list_keys(key_prefix))

    def _list_keys(self, key_prefix: str) -> list[str]:
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
        at = f"S3 endpoint {self.endpoint} (bucket {self._bucket!r})"
        if isinstance(exc, ClientError):
            code = _code(exc)
            if code in _NOT_FOUND:
                return StorageObjectNotFoundError(f"no such checkpoint object: {where}")
            if code == "NoSuchBucket":
                return StorageAccessError(f"cannot {action} {where}: bucket {self._bucket!r} does not exist at {at}")
            if code in _DENIED:
                return StorageAccessError(
                    f"cannot {action} {where}: {at} denied access ({code}); check 's3.access-key' and "
                    "'s3.secret-key' (or the AWS credential chain) and the bucket's permissions"
                )
            message = exc.response.get("Error", {}).get("Message", "")
            return StorageAccessError(f"cannot {action} {where}: {at} answered {code} {message}".rstrip())
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return StorageAccessError(
                f"cannot {action} {where}: no S3 credentials for {at}; set 's3.access-key' and 's3.secret-key' "
                "or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or an AWS profile)"
            )
        if isinstance(exc, S3ConnectionError | HTTPClientError):
            return StorageAccessError(
                f"cannot {action} {where}: cannot reach {at} ({type(exc).__name__}); check 's3.endpoint' "
                "and that the store is running"
            )
        return StorageAccessError(f"cannot {action} {where} at {at}: {type(exc).__name__}: {exc}")


def _no_expect_header_for_empty_body(params: dict[str, Any], **_: Any) -> None:
    """Drop `Expect: 100-continue` from requests without a body. Go servers (SeaweedFS) answer such a
    request and then send a late '100 Continue', which the next request on the kept-alive connection
    reads as its response: it stalls for the whole read timeout. An empty state file is legitimate."""
    if "Expect" in params.get("headers", {}) and determine_content_length(params.get("body")) == 0:
        del params["headers"]["Expect"]


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
