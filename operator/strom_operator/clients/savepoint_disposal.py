"""Disposing of savepoints pruned from a FlinkJob's history: their files go, s3:// or file://.

A savepoint is a self-contained directory (`<dir>/savepoint-<job>-<random>/` with `_metadata`
and the state files), so disposing of it removes everything under that prefix. S3 through
boto3 with the FlinkJob's endpoint, path-style setting and region, and the credentials from its
`spec.s3.credentialsSecret` (read by the caller: the values never enter the status or a log).
Disposal is best effort for the caller: a failure is reported, the history is pruned anyway.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from strom_operator.crd.spec import FlinkJobSpec


class DisposalError(Exception):
    """A savepoint's files could not be removed; the message names the path and why."""


@dataclass(frozen=True, slots=True)
class S3Access:
    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, spec: FlinkJobSpec, credentials: dict[str, str] | None = None) -> S3Access:
        conf = spec.flink_configuration
        creds = credentials or {}
        return cls(
            endpoint=spec.s3.endpoint or conf.get("s3.endpoint") or None,
            region=conf.get("s3.region") or None,
            path_style=str(conf.get("s3.path.style.access", "false")).strip().lower() == "true",
            access_key=creds.get("AWS_ACCESS_KEY_ID"),
            secret_key=creds.get("AWS_SECRET_ACCESS_KEY"),
        )

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name=self.region or None,
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
            config=Config(s3={"addressing_style": "path" if self.path_style else "auto"},
                          retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5, read_timeout=30),
        )


def dispose_savepoint(path: str, s3: S3Access) -> int:
    """Remove the savepoint at `path` (its directory or its `_metadata` file's URI); the number of
    files removed. A savepoint already gone removes nothing and is no error."""
    root = path[: -len("/_metadata")] if path.endswith("/_metadata") else path
    return remove_directory(root, s3, what="savepoint")


def remove_directory(uri: str, s3: S3Access, *, what: str = "directory") -> int:
    """Remove everything under `uri` (s3:// (also Flink's s3a:// and s3p://) or file://); the number
    of files removed. A directory already gone removes nothing and is no error."""
    root = uri.rstrip("/")
    scheme = root.split("://", 1)[0].lower() if "://" in root else ""
    if scheme in ("s3", "s3a", "s3p"):
        return _remove_s3(root, s3, what)
    if scheme == "file":
        return _remove_file(unquote(urlparse(root).path), what)
    raise DisposalError(f"cannot remove {what} {uri!r}: expected an s3:// or file:// URI")


def _remove_file(directory: str, what: str) -> int:
    if not os.path.exists(directory):
        return 0
    if not os.path.isdir(directory):
        raise DisposalError(f"cannot remove {what} file://{directory}: not a directory")
    count = sum(len(files) for _, _, files in os.walk(directory))
    try:
        shutil.rmtree(directory)
    except OSError as e:
        raise DisposalError(f"cannot remove {what} file://{directory}: {e}") from None
    return count


def _remove_s3(uri: str, s3: S3Access, what: str) -> int:
    parsed = urlparse(uri)
    bucket, prefix = parsed.netloc, parsed.path.lstrip("/") + "/"
    if not bucket or prefix == "/":
        raise DisposalError(f"cannot remove {what} {uri}: expected s3://bucket/path")
    client = s3.client()
    removed = 0
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys = [{"Key": o["Key"]} for o in page.get("Contents") or ()]
            # delete_objects takes at most 1000 keys; a page holds at most 1000
            if keys:
                answer = client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                errors = answer.get("Errors") or []
                if errors:
                    first = errors[0]
                    raise DisposalError(f"cannot remove {what} {uri}: {first.get('Key')}: "
                                        f"{first.get('Code')} {first.get('Message')}")
                removed += len(keys)
    except DisposalError:
        raise
    except Exception as e:  # botocore's errors: endpoint, credentials, permissions
        raise DisposalError(f"cannot remove {what} {uri}: {type(e).__name__}: {e}") from None
    return removed
