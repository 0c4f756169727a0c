"""Services and readiness for the process kubelet: which pods a Service's name resolves to, and probes.

Pure functions and one probe coroutine that kubelet.py calls:

* `selects(selector, labels)`: a Service's `spec.selector` (equality on every key) matches a pod;
* `service_names(service, namespace)`: the names a pod may use for a Service, as cluster DNS
  answers them: `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`;
* `hosts_entries(endpoints, namespace)`: address -> names for every pod's hosts file, from each
  Service's endpoint addresses. Every name resolves to the pod IPs behind it, as a headless
  Service does: there is no ClusterIP and no kube-proxy, so a Service's own `port` means nothing
  here and a client dials the pod's port (`targetPort`), which the operator's Services keep equal;
* `target_port(service_port, container_ports)`: a Service port's `targetPort` (a number, or the
  name of a container port) as a number;
* `probe(spec, ip, container_ports)`: one run of a container's `readinessProbe` against the pod's
  IP from this machine (which is on the pods' bridge): `httpGet` (a status 200-399 is success)
  or `tcpSocket` (a connection is success), each within `timeoutSeconds` (default 1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

PROBE_KINDS = ("httpGet", "tcpSocket")


def selects(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """A Service without a selector has no endpoints the kubelet manages (someone writes them)."""
    return bool(selector) and all(labels.get(k) == v for k, v in (selector or {}).items())


def service_names(service: str, namespace: str) -> list[str]:
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def hosts_entries(endpoints: Mapping[str, Iterable[str]], namespace: str) -> dict[str, list[str]]:
    """`endpoints`: Service name -> its endpoint addresses. Address -> names, in a stable order."""
    names: dict[str, list[str]] = {}
    for service in sorted(endpoints):
        for address in sorted(set(endpoints[service])):
            names.setdefault(address, []).extend(service_names(service, namespace))
    return dict(sorted(names.items()))


def container_ports(container: Mapping[str, Any]) -> dict[str, int]:
    return {p["name"]: int(p["containerPort"]) for p in container.get("ports") or () if p.get("name")}


def resolve_port(port: int | str, ports: Mapping[str, int]) -> int | None:
    """A probe's or targetPort's port: a number, or a container port's name (None if there is none)."""
    if isinstance(port, int):
        return port
    if port.isdigit():
        return int(port)
    return ports.get(port)


def target_port(service_port: Mapping[str, Any], ports: Mapping[str, int]) -> int | None:
    return resolve_port(service_port.get("targetPort", service_port["port"]), ports)


async def probe(spec: Mapping[str, Any], ip: str, ports: Mapping[str, int]) -> bool:
    """One run of a readinessProbe: True on success. A probe of a kind not in PROBE_KINDS is the
    caller's to handle (see `probe_kind`)."""
    timeout = float(spec.get("timeoutSeconds", 1))
    try:
        if "httpGet" in spec:
            return await asyncio.wait_for(_http_get(spec["httpGet"], ip, ports), timeout)
        if "tcpSocket" in spec:
            port = resolve_port(spec["tcpSocket"]["port"], ports)
            if port is None:
                return False
            _, writer = await asyncio.wait_for(asyncio.open_connection(spec["tcpSocket"].get("host") or ip, port),
                                               timeout)
            writer.close()
            return True
    except (OSError, TimeoutError, ValueError):
        return False
    return False


def probe_kind(spec: Mapping[str, Any]) -> str | None:
    """The kind of a probe the kubelet runs, or None for one it does not (exec, grpc)."""
    return next((kind for kind in PROBE_KINDS if kind in spec), None)


async def _http_get(get: Mapping[str, Any], ip: str, ports: Mapping[str, int]) -> bool:
    port = resolve_port(get["port"], ports)
    if port is None or get.get("scheme", "HTTP").upper() != "HTTP":
        return False
    host = get.get("host") or ip
    reader, writer = await asyncio.open_connection(host, port)
    try:
        headers = {"Host": f"{host}:{port}", "User-Agent": "kube-probe/process-kubelet", "Accept": "*/*",
                   "Connection": "close"}
        headers.update({h["name"]: h["value"] for h in get.get("httpHeaders") or ()})
        request = f"GET {get.get('path') or '/'} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write((request + "\r\n").encode())
        await writer.drain()
        status_line = (await reader.readline()).decode(errors="replace").split()
        return len(status_line) >= 2 and status_line[1].isdigit() and 200 <= int(status_line[1]) < 400
    finally:
        writer.close()
