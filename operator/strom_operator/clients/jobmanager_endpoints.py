"""Where the operator finds a FlinkJob's JobManager REST API.

In the cluster: its Service's DNS name, `http://<name>-jobmanager.<namespace>.svc:8081`. An
operator run outside the cluster (development, the integration tests' process kubelet) cannot
resolve that, so a JSON file may map `"<namespace>/<service>"` to a base URL
(`--jobmanager-url-map FILE` or `STROM_OPERATOR_JOBMANAGER_URL_MAP`). The file is read again when
it changes: the mapping follows JobManagers that come and go. A JobManager deployed with TLS
(`tls`, jobmanager_tls.py) is reached over https at the same address; `tls_for(url)` gives the
client the context and the name to check for a URL handed out here.
"""

from __future__ import annotations

import json
import os

from strom_operator.clients.jobmanager_tls import JobManagerTls, TlsTarget
from strom_operator.resources.labels import REST_PORT, FlinkJobRef, jobmanager_name

URL_MAP_ENV = "STROM_OPERATOR_JOBMANAGER_URL_MAP"


def service_url(ref: FlinkJobRef) -> str:
    return f"http://{jobmanager_name(ref)}.{ref.namespace}.svc:{REST_PORT}"


class JobManagerEndpoints:
    """`url(ref)`: the override from the map file if it names the service, else the Service's DNS URL."""

    def __init__(self, map_file: str | None = None) -> None:
        self.map_file = map_file if map_file is not None else os.environ.get(URL_MAP_ENV) or None
        self._mtime: float | None = None
        self._map: dict[str, str] = {}
        self.tls = JobManagerTls()
        self._tls_urls: dict[str, TlsTarget] = {}  # https base URL handed out -> its target

    def url(self, ref: FlinkJobRef) -> str:
        base = self._overrides().get(f"{ref.namespace}/{jobmanager_name(ref)}") or service_url(ref)
        target = self.tls.target(ref.namespace, ref.name)
        if target is None:
            return base
        base = "https://" + base.split("://", 1)[-1]
        self._tls_urls[base.rstrip("/")] = target
        return base

    def tls_for(self, url: str) -> TlsTarget | None:
        """The TLS target of a URL under a base URL `url()` gave for a JobManager with TLS."""
        if not url.startswith("https://"):
            return None
        for base, target in self._tls_urls.items():
            if url == base or url.startswith(base + "/"):
                return target
        return None

    def _overrides(self) -> dict[str, str]:
        if not self.map_file:
            return {}
        try:
            mtime = os.stat(self.map_file).st_mtime_ns
        except FileNotFoundError:
            return {}
        if mtime != self._mtime:
            try:
                with open(self.map_file, encoding="utf-8") as f:
                    loaded = json.load(f)
            except (OSError, ValueError):
                return self._map  # a file being rewritten: keep the last good mapping
            if not isinstance(loaded, dict):
                raise ValueError(f"{self.map_file}: expected a JSON object of 'namespace/service' -> URL")
            self._map, self._mtime = {str(k): str(v) for k, v in loaded.items()}, mtime
        return self._map
