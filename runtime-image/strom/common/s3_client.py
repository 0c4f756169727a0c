"""How the engine reaches S3: the `s3.*` options, the boto3 client built from them, S3 URIs and errors.

Shared by checkpoint storage (`strom.runtime.checkpoint.s3_storage`) and the file source
(`strom.connectors.s3_files`), so both read a job's `s3.endpoint`, `s3.access-key`, ... the same way.
Credentials live only inside the boto3 client: `S3Settings` keeps them out of repr(), and error
messages never carry them. boto3 is imported when a client is built, not when this module is:
it costs a few hundred milliseconds per process that never touches S3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strom.common.config_options import ConfigError, ConfigLookup, option, read_option

S3_SCHEMES = ("s3", "s3a", "s3p")  # Flink's names for its S3 file systems; all are boto3 here

S3_ENDPOINT = option("s3.endpoint", "str", "", "S3 endpoint URL for S3-compatible stores; empty = AWS.")
S3_ACCESS_KEY = option("s3.access-key", "str", "", "S3 access key; empty = boto3's credential chain.")
S3_SECRET_KEY = option("s3.secret-key", "str", "", "S3 secret key; empty = boto3's credential chain.")
S3_PATH_STYLE_ACCESS = option(
    "s3.path.style.access", "bool", False, "Address buckets as endpoint/bucket (most S3-compatible stores)."
)
S3_REGION = option("s3.region", "str", "", "S3 region; empty = boto3's chain (AWS_REGION, profile).")
S3_CONNECT_TIMEOUT = option(
    "s3.connection.establish.timeout", "duration", 5_000, "Timeout to open a connection to S3.", minimum=1
)
S3_SOCKET_TIMEOUT = option("s3.connection.timeout", "duration", 60_000, "Timeout of one S3 read.", minimum=1)
S3_ATTEMPTS = option(
    "s3.attempts.maximum", "int", 3, "Attempts of one S3 request, the first one included.", minimum=1
)

NOT_FOUND_CODES = ("404", "NoSuchKey", "NotFound")
DENIED_CODES = ("403", "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken")


@dataclass(frozen=True, slots=True)
class S3Settings:
    """How to reach S3. The keys are excluded from repr() so that no log line can carry them."""

    endpoint: str = ""
    region: str = ""
    path_style_access: bool = False
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    connect_timeout_ms: int = S3_CONNECT_TIMEOUT.default
    socket_timeout_ms: int = S3_SOCKET_TIMEOUT.default
    max_attempts: int = S3_ATTEMPTS.default

    @classmethod
    def from_config(cls, config: ConfigLookup | None) -> S3Settings:
        """The `s3.*` options of a `Configuration`, a mapping or None."""
        settings = cls(
            endpoint=read_option(config, S3_ENDPOINT).strip(),
            region=read_option(config, S3_REGION).strip(),
            path_style_access=read_option(config, S3_PATH_STYLE_ACCESS),
            access_key=read_option(config, S3_ACCESS_KEY),
            secret_key=read_option(config, S3_SECRET_KEY),
            connect_timeout_ms=read_option(config, S3_CONNECT_TIMEOUT),
            socket_timeout_ms=read_option(config, S3_SOCKET_TIMEOUT),
            max_attempts=read_option(config, S3_ATTEMPTS),
        )
        if bool(settings.access_key) != bool(settings.secret_key):
            pair = (S3_ACCESS_KEY.key, S3_SECRET_KEY.key)
            given, missing = pair if settings.access_key else pair[::-1]
            raise ConfigError(f"{given!r} is set but {missing!r} is not: set both, or neither to use the AWS chain")
        return settings


def create_s3_client(settings: S3Settings) -> Any:
    """A boto3 S3 client for `settings`, on a session of its own (boto3's default session is shared
    process-wide and not thread-safe)."""
    import boto3
    from botocore.config import Config as BotoConfig

    s = settings
    session = boto3.session.Session(
        aws_access_key_id=s.access_key or None,
        aws_secret_access_key=s.secret_key or None,
        region_name=s.region or None,
    )
    if s.endpoint and "://" not in s.endpoint:
        raise ConfigError(
            f"invalid value {s.endpoint!r} for {S3_ENDPOINT.key!r}: expected a URL such as http://minio:9000"
        )
    client = session.client(
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
    client.meta.events.register_last("before-call.s3", _no_expect_header_for_empty_body)
    return client


def _no_expect_header_for_empty_body(params: dict[str, Any], **_: Any) -> None:
    """Drop `Expect: 100-continue` from requests without a body. Go servers (SeaweedFS) answer such a
    request and then send a late '100 Continue', which the next request on the kept-alive connection
    reads as its response: it stalls for the whole read timeout. An empty state file is legitimate."""
    from botocore.utils import determine_content_length

    if "Expect" in params.get("headers", {}) and determine_content_length(params.get("body")) == 0:
        del params["headers"]["Expect"]


def is_s3_uri(path: str) -> bool:
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() in S3_SCHEMES


def split_s3_uri(uri: str) -> tuple[str, str, str]:
    """(lower-case scheme, bucket, key as written) of `s3://bucket/key`; the key may be '' or end in '/'."""
    scheme, sep, rest = uri.partition("://")
    bucket, _, key = rest.partition("/")
    if not sep or scheme.lower() not in S3_SCHEMES or not bucket:
        raise ConfigError(f"invalid S3 URI {uri!r}: expected s3://bucket/prefix (or s3a://, s3p://)")
    return scheme.lower(), bucket, key


def error_code(exc: Any) -> str:
    """The S3 error code of a botocore `ClientError` ('NoSuchBucket', '404', ...)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def describe_s3_failure(exc: Exception, *, action: str, where: str, endpoint: str, bucket: str) -> str:
    """One clear line: what failed (`action` on `where`, a URI), at which endpoint and bucket, and what
    would fix it; never a credential."""
    from botocore.exceptions import ClientError, HTTPClientError, NoCredentialsError, PartialCredentialsError
    from botocore.exceptions import ConnectionError as S3ConnectionError

    at = f"S3 endpoint {endpoint} (bucket {bucket!r})"
    if isinstance(exc, ClientError):
        code = error_code(exc)
        if code == "NoSuchBucket":
            return f"cannot {action} {where}: bucket {bucket!r} does not exist at {at}"
        if code in DENIED_CODES:
            return (
                f"cannot {action} {where}: {at} denied access ({code}); check 's3.access-key' and "
                "'s3.secret-key' (or the AWS credential chain) and the bucket's permissions"
            )
        message = exc.response.get("Error", {}).get("Message", "")
        return f"cannot {action} {where}: {at} answered {code} {message}".rstrip()
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return (
            f"cannot {action} {where}: no S3 credentials for {at}; set 's3.access-key' and 's3.secret-key' "
            "or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or an AWS profile)"
        )
    if isinstance(exc, S3ConnectionError | HTTPClientError):
        return (
            f"cannot {action} {where}: cannot reach {at} ({type(exc).__name__}); check 's3.endpoint' "
            "and that the store is running"
        )
    return f"cannot {action} {where} at {at}: {type(exc).__name__}: {exc}"
