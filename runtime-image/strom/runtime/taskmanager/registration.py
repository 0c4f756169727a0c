"""How long and how loudly a TaskManager tries to register at its JobManager.

On Kubernetes a TaskManager often starts before the JobManager's Service has an endpoint, so a
failed attempt is retried (backoff up to 5 s), with a WARNING at most every `WARN_INTERVAL_S` that
names the address and the key or flag it came from. A TaskManager without a JobManager for
`taskmanager.registration.timeout` (Flink's key; 5 min) gives up with one line and exits non-zero,
as Flink's TaskExecutor does; the period starts again whenever a registered TaskManager loses its
JobManager. A JobManager that refuses the TaskManager (`RegistrationRefused`) ends it at once:
retrying cannot change the address it advertises; nor can it change the cluster secret, so a failed
peer authentication (`authentication_failed`) ends it the same way.

`RegistrationAttempts` is the decision only (clock injectable); the TaskManager does the I/O.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from strom.common import config_options as opts
from strom.common import tls_options
from strom.runtime.network.addresses import describe_os_error, format_duration
from strom.runtime.network.cluster_secret import ENV_VAR

WARN_INTERVAL_S = 10.0
MAX_BACKOFF_S = 5.0


class RegistrationError(Exception):
    """The TaskManager cannot register and must exit; the message is the one line to print."""


@dataclass(frozen=True, slots=True)
class JobManagerAddress:
    """Where the TaskManager registers, and the flag or key that says so (for error lines)."""

    host: str
    port: int
    key: str  # "--jobmanager" or "jobmanager.rpc.address"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    def as_tuple(self) -> tuple[str, int]:
        return self.host, self.port


@dataclass(frozen=True, slots=True)
class Retry:
    wait_s: float
    warning: str | None  # a line to log at WARNING, or None when one was logged recently


class RegistrationAttempts:
    """One period without a JobManager: when to retry, when to warn, when to give up."""

    def __init__(
        self, address: JobManagerAddress, timeout_ms: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.address = address
        self.timeout_ms = timeout_ms
        self.clock = clock
        self.deadline = clock() + timeout_ms / 1000.0
        self._last_warning: float | None = None
        self._backoff = 0.1

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - self.clock())

    def failed(self, error: BaseException) -> Retry:
        """After a failed attempt: how long to wait before the next one. Raises RegistrationError
        once the registration timeout has passed."""
        now = self.clock()
        reason = describe_os_error(error)
        if now >= self.deadline:
            raise RegistrationError(
                f"TaskManager could not register at JobManager {self.address} ({self.address.key}) within "
                f"{format_duration(self.timeout_ms)}: {reason}; check that the JobManager runs and that the "
                "address is reachable from this host"
            )
        warning = None
        if self._last_warning is None or now - self._last_warning >= WARN_INTERVAL_S:
            self._last_warning = now
            warning = (
                f"cannot register at JobManager {self.address} ({self.address.key}): {reason}; retrying, the "
                f"TaskManager exits after {format_duration(self.timeout_ms)} without a JobManager "
                f"({opts.REGISTRATION_TIMEOUT.key})"
            )
        wait = min(self._backoff, max(0.0, self.deadline - now))
        self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
        return Retry(wait, warning)


def authentication_failed(address: JobManagerAddress) -> RegistrationError:
    """The one line for a TaskManager and a JobManager that do not share the cluster secret (either
    refused the other's proof)."""
    return RegistrationError(
        f"TaskManager could not authenticate with JobManager {address}: the cluster secrets differ; give every "
        f"process the same {opts.CLUSTER_SECRET.key} (or {ENV_VAR}, or the same {opts.CLUSTER_SECRET_FILE.key})"
    )


def certificate_refused(error: ssl.SSLError) -> bool:
    """Whether a TLS failure is a verdict on a certificate (this side's or the JobManager's), which
    retrying cannot change, rather than a connection that broke."""
    reason = (getattr(error, "reason", None) or "").upper()
    return isinstance(error, ssl.SSLCertVerificationError) or "CERTIFICATE" in reason or "UNKNOWN_CA" in reason


def tls_refused(address: JobManagerAddress, error: OSError) -> RegistrationError:
    """The one line for a TaskManager and a JobManager whose TLS certificates do not trust each other."""
    reason = getattr(error, "reason", None) or "it closed the connection after the TLS handshake"
    return RegistrationError(
        f"TaskManager could not establish TLS with JobManager {address} ({reason}): give every process a "
        f"certificate signed by a CA in the others' {tls_options.STORE_OPTIONS['internal']['truststore'].key} "
        f"({tls_options.STORE_OPTIONS['internal']['keystore'].key})"
    )
