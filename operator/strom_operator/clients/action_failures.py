"""A failure to act, as the user sees it: a `Ready=False` condition with a reason and a message, and
a Warning Event (aggregated: event_recorder.py).

Whatever the operator could not do in a pass (the API server refused an object: RBAC, admission, an
invalid field; the API or S3 did not answer; the S3 credentials Secret is missing; cert-manager has
not issued the TLS Secret yet) is classified here into one CamelCase reason and a one-line message
naming what was being done, the object and the server's own words. The pass is retried with a
growing delay (`retry_delay`); the first pass that gets through removes the condition again
(`without_failure`). Pure: the reconciler catches, this decides.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from strom_operator.clients.kube_api import KubeApiError, describe_path
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.steps import SOON

CONDITION = "Ready"
MAX_RETRY_DELAY_S = 300.0

# Reasons of a failure to act (the condition's and the Warning Event's).
FORBIDDEN = "Forbidden"
INVALID = "Invalid"
ADMISSION_DENIED = "AdmissionDenied"
CONFLICT = "Conflict"
NOT_FOUND = "NotFound"
UNAUTHORIZED = "Unauthorized"
API_UNREACHABLE = "ApiUnreachable"
API_ERROR = "ApiError"
S3_UNREACHABLE = "S3Unreachable"
S3_ACCESS_DENIED = "S3AccessDenied"
S3_CREDENTIALS_MISSING = "S3CredentialsMissing"
TLS_CERTIFICATE_PENDING = "TlsCertificatePending"
SQL_CHECK_FAILED = "SqlCheckFailed"
FAILURE_REASONS = frozenset({FORBIDDEN, INVALID, ADMISSION_DENIED, CONFLICT, NOT_FOUND, UNAUTHORIZED, API_UNREACHABLE,
                             API_ERROR, S3_UNREACHABLE, S3_ACCESS_DENIED, S3_CREDENTIALS_MISSING,
                             TLS_CERTIFICATE_PENDING, SQL_CHECK_FAILED})

_S3_DENIED_WORDS = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Forbidden", "403")


class S3CredentialsMissing(Exception):
    """spec.s3.credentialsSecret names a Secret that does not exist (or lacks the keys)."""


class SqlCheckUnavailable(Exception):
    """The engine's SQL check could not run (clients/sql_checker.py): not a verdict on the script."""


class S3Unavailable(Exception):
    """Reading or removing S3 data failed; the message names the URI and the cause."""


class TlsSecretPending(Exception):
    """The Secret <name>-tls is not there yet (cert-manager has not issued it) or lacks a key (tls_secret.py)."""


@dataclass(frozen=True, slots=True)
class ActionFailure:
    reason: str
    message: str


def failure_of(error: BaseException, *, doing: str) -> ActionFailure:
    """The reason and message of `error`, raised while `doing` (e.g. "deploying the job")."""
    if isinstance(error, KubeApiError):
        return ActionFailure(_api_reason(error), f"{doing}: cannot {error.verb} {describe_path(error.path)}: "
                                                  f"{error.api_message}")
    if isinstance(error, S3CredentialsMissing):
        return ActionFailure(S3_CREDENTIALS_MISSING, f"{doing}: {error}")
    if isinstance(error, TlsSecretPending):
        return ActionFailure(TLS_CERTIFICATE_PENDING, f"{doing}: {error}")
    if isinstance(error, SqlCheckUnavailable):
        return ActionFailure(SQL_CHECK_FAILED, f"{doing}: {error}")
    text = str(error) or type(error).__name__
    reason = S3_ACCESS_DENIED if any(w in text for w in _S3_DENIED_WORDS) else S3_UNREACHABLE
    return ActionFailure(reason, f"{doing}: {text}")


def _api_reason(error: KubeApiError) -> str:
    if "admission webhook" in error.api_message or "denied the request" in error.api_message:
        return ADMISSION_DENIED
    return {0: API_UNREACHABLE, 400: INVALID, 401: UNAUTHORIZED, 403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT,
            422: INVALID}.get(error.status, API_ERROR)


def with_failure(status: FlinkJobStatus, failure: ActionFailure, now: datetime) -> FlinkJobStatus:
    return status.with_condition(CONDITION, "False", failure.reason, failure.message, now)


def without_failure(status: FlinkJobStatus) -> FlinkJobStatus:
    """The status without a failure condition: the lifecycle sets Ready again when it knows
    (RUNNING, FAILED, suspended); until then there is none, as before the failure."""
    cond = status.condition(CONDITION)
    if cond is None or cond.status != "False" or cond.reason not in FAILURE_REASONS:
        return status
    return replace(status, conditions=tuple(c for c in status.conditions if c.type != CONDITION))


def retry_delay(failures: int) -> float:
    """Seconds before the next attempt after `failures` failed passes in a row: 5, 10, 20, ... 300."""
    return min(SOON * 2 ** max(failures - 1, 0), MAX_RETRY_DELAY_S)
