"""A small synchronous client of the JobManager's REST API, for the `strom` client commands.

It uses the standard library's urllib rather than aiohttp: each CLI command makes one or two
requests and exits, and `strom submit` posts from inside the user's program (a context
executor called by `env.execute()`), where no event loop runs and one must not be started
under a program that may already use asyncio. Error bodies `{"errors": [...]}` become a
`RestError` whose message is the server's; a refused or timed-out connection becomes
`JobManagerUnreachable` naming the address.

With an `ssl_context` (`strom.common.tls.rest_client_tls`, from `security.ssl.rest.*`) it speaks HTTPS,
verifying the JobManager and presenting the client certificate a mutual-TLS JobManager requires; a TLS
failure is one line naming the key to set.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from strom.common.job_payload import CONTENT_TYPE
from strom.common.tls_options import REST, REST_ENABLED, STORE_OPTIONS, VERIFY_HOSTNAME

REST_KEYSTORE = STORE_OPTIONS[REST]["keystore"].key
REST_KEY = STORE_OPTIONS[REST]["key"].key
REST_TRUSTSTORE = STORE_OPTIONS[REST]["truststore"].key

DEFAULT_REST_PORT = 8081
DEFAULT_TIMEOUT_S = 30.0


class RestClientError(Exception):
    """Base of what a RestClient raises; the message is one line fit for a terminal."""


class JobManagerUnreachable(RestClientError):
    pass


class RestError(RestClientError):
    """The JobManager answered with an error status; `errors` are its messages."""

    def __init__(self, status: int, errors: list[str], method: str, path: str) -> None:
        self.status, self.errors, self.method, self.path = status, errors, method, path
        super().__init__(f"{'; '.join(errors) or 'no error message'} (HTTP {status} for {method} {path})")


def parse_address(text: str) -> tuple[str, int]:
    """'host:port', 'host' (port 8081) or '[::1]:8081' -> (host, port); ValueError when malformed."""
    text = text.strip()
    for scheme in ("http://", "https://"):
        if text.startswith(scheme):
            text = text[len(scheme) :].rstrip("/")
    if text.startswith("["):  # bracketed IPv6
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, ""
    if not host:
        raise ValueError(f"invalid JobManager address {text!r}: expected HOST:PORT such as localhost:8081")
    if not port_text:
        return host, DEFAULT_REST_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"invalid port in JobManager address {text!r}: expected a number in 1..65535")
    return host, int(port_text)


class RestClient:
    def __init__(
        self, host: str, port: int, *, timeout: float = DEFAULT_TIMEOUT_S, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.ssl_context = ssl_context
        netloc = f"[{host}]" if ":" in host else host
        self.base_url = f"{'https' if ssl_context is not None else 'http'}://{netloc}:{port}"

    # -- the calls the commands make ----------------------------------------------------------
    def submit(self, payload: bytes) -> str:
        """POST /jobs with a job payload (strom.common.job_payload); returns the job id."""
        body = self.request("POST", "/jobs", data=payload, content_type=CONTENT_TYPE)
        if not isinstance(body, dict) or not isinstance(body.get("jobid"), str):
            raise RestClientError(f"unexpected answer to POST /jobs from {self.host}:{self.port}: {body!r}")
        return body["jobid"]

    def overview(self) -> dict[str, Any]:
        return self.request("GET", "/overview")

    def jobs_overview(self) -> list[dict[str, Any]]:
        return self.request("GET", "/jobs/overview")["jobs"]

    def job(self, jid: str) -> dict[str, Any]:
        return self.request("GET", f"/jobs/{_segment(jid)}")

    def vertex(self, jid: str, vid: str) -> dict[str, Any]:
        return self.request("GET", f"/jobs/{_segment(jid)}/vertices/{_segment(vid)}")

    def cancel(self, jid: str) -> None:
        self.request("PATCH", f"/jobs/{_segment(jid)}?mode=cancel")

    def trigger_savepoint(self, jid: str, target_directory: str | None, *, cancel_job: bool = False) -> str:
        """POST /jobs/:jobid/savepoints; the trigger id to poll with `savepoint_status`."""
        body = {"target-directory": target_directory, "cancel-job": cancel_job}
        return self._trigger(f"/jobs/{_segment(jid)}/savepoints", body)

    def stop_with_savepoint(self, jid: str, target_directory: str | None, *, drain: bool = False) -> str:
        """POST /jobs/:jobid/stop; the trigger id to poll with `savepoint_status`."""
        return self._trigger(f"/jobs/{_segment(jid)}/stop", {"targetDirectory": target_directory, "drain": drain})

    def savepoint_status(self, jid: str, trigger_id: str) -> dict[str, Any]:
        return self.request("GET", f"/jobs/{_segment(jid)}/savepoints/{_segment(trigger_id)}")

    def dispose_savepoint(self, path: str) -> str:
        """POST /savepoint-disposal; the trigger id to poll with `savepoint_disposal_status`."""
        return self._trigger("/savepoint-disposal", {"savepoint-path": path})

    def savepoint_disposal_status(self, trigger_id: str) -> dict[str, Any]:
        return self.request("GET", f"/savepoint-disposal/{_segment(trigger_id)}")

    def _trigger(self, path: str, body: dict[str, Any]) -> str:
        data = json.dumps({k: v for k, v in body.items() if v is not None}).encode("utf-8")
        answer = self.request("POST", path, data=data, content_type="application/json")
        if not isinstance(answer, dict) or not isinstance(answer.get("request-id"), str):
            raise RestClientError(f"unexpected answer to POST {path} from {self.host}:{self.port}: {answer!r}")
        return answer["request-id"]

    # -- transport ----------------------------------------------------------------------------
    def request(self, method: str, path: str, *, data: bytes | None = None, content_type: str | None = None) -> Any:
        """One request; the decoded JSON body (None when empty) or a RestClientError."""
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if content_type is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.ssl_context) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise RestError(e.code, _error_messages(e.read(), e.reason), method, path.partition("?")[0]) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, ssl.SSLError):
                raise JobManagerUnreachable(self._tls_failure(e.reason)) from None
            reason = e.reason.strerror if isinstance(e.reason, OSError) and e.reason.strerror else e.reason
            raise JobManagerUnreachable(f"cannot reach the JobManager at {self.host}:{self.port}: {reason}") from None
        except TimeoutError:
            raise JobManagerUnreachable(
                f"the JobManager at {self.host}:{self.port} did not answer within {self.timeout:g} s"
            ) from None
        except ssl.SSLError as e:  # TLS 1.3: a refused client certificate shows at the first read
            raise JobManagerUnreachable(self._tls_failure(e)) from None
        except ConnectionError as e:
            where = f"{self.host}:{self.port}"
            if self.ssl_context is None:
                hint = f" (if it serves HTTPS, set {REST_ENABLED.key}: true and its {REST_TRUSTSTORE} here)"
            else:  # TLS 1.3: a server that refuses the client's certificate may just close
                hint = (
                    f" (if it requires client certificates, set {REST_KEYSTORE} and {REST_KEY} to one signed by a "
                    "CA in its rest truststore)"
                )
            raise JobManagerUnreachable(f"lost the connection to the JobManager at {where}: {e}{hint}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise RestClientError(f"{self.host}:{self.port} answered {method} {path} with non-JSON data") from None


    def _tls_failure(self, e: ssl.SSLError) -> str:
        where = f"the JobManager at {self.host}:{self.port}"
        reason = str(e.reason or e)
        if isinstance(e, ssl.SSLCertVerificationError):
            return (
                f"cannot verify the TLS certificate of {where} ({e.verify_message}): set {REST_TRUSTSTORE} to "
                f"the CA that signed it (or {VERIFY_HOSTNAME.key}: false when it names another host)"
            )
        if "CERTIFICATE" in reason.upper():
            return (
                f"{where} refused this client's TLS certificate ({reason}): set {REST_KEYSTORE} (and "
                f"{REST_KEY}) to a client certificate signed by a CA in its rest truststore"
            )
        if "WRONG_VERSION_NUMBER" in reason.upper() or "RECORD_LAYER" in reason.upper():
            return f"TLS with {where} failed ({reason}): it does not serve HTTPS; unset {REST_ENABLED.key} here"
        return f"TLS with {where} failed: {reason}"


def _segment(text: str) -> str:
    """An id as one path segment: a stray '/' or '?' must not change the path."""
    return urllib.parse.quote(text, safe="")


def _error_messages(raw: bytes, reason: object) -> list[str]:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        return [str(m) for m in body["errors"]]
    return [str(reason)]
