"""What a kubelet makes of a container's env and argv: the downward API and `$(VAR)` references.

Pure functions the process kubelet (kubelet.py) calls:

* `expand_references(text, env)`: Kubernetes' expansion of `$(VAR)` in `command`, `args` and env
  `value`s, ported from its `third_party/forked/golang/expansion`: `$(VAR)` becomes VAR's value
  when the container defines VAR, and stays `$(VAR)` when it does not; `$$` is an escaped `$`; a
  `$` before anything else, and an unclosed `$(`, stay as written. Only the container's own env
  (`env`, `envFrom`) is looked up, never the environment the kubelet itself runs in.
* `field_value(path, fields)`: a `valueFrom.fieldRef.fieldPath` (status.podIP, metadata.name,
  metadata.labels['k'], ...) from the pod's fields; a path it does not know is a
  `ContainerConfigError`, as Kubernetes refuses such a pod.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


class ContainerConfigError(Exception):
    """The container cannot be configured (a missing Secret or ConfigMap key, an unknown fieldPath):
    the pod stays Pending in CreateContainerConfigError."""


def expand_references(text: str, env: Mapping[str, str]) -> str:
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            if nxt == "$":  # escaped: one literal $
                out.append("$")
                advance = 1
            elif nxt == "(":
                close = text.find(")", cursor + 2)
                if close < 0:  # unclosed reference: kept as written, scanning goes on after "$("
                    out.append("$(")
                    advance = 1
                else:
                    name = text[cursor + 2:close]
                    out.append(env[name] if name in env else f"$({name})")
                    advance = close - cursor
            else:  # a $ that starts no reference
                out.append("$" + nxt)
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


@dataclass(frozen=True, slots=True)
class PodFields:
    """What the downward API can read of a pod."""

    name: str
    namespace: str
    uid: str
    node_name: str
    pod_ip: str
    host_ip: str
    service_account: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


_MAP_KEY = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")


def field_value(path: str, fields: PodFields) -> str:
    simple = {
        "metadata.name": fields.name, "metadata.namespace": fields.namespace, "metadata.uid": fields.uid,
        "spec.nodeName": fields.node_name, "spec.serviceAccountName": fields.service_account,
        "status.podIP": fields.pod_ip, "status.podIPs": fields.pod_ip,
        "status.hostIP": fields.host_ip, "status.hostIPs": fields.host_ip,
    }
    if path in simple:
        return simple[path]
    m = _MAP_KEY.match(path)
    if m is not None:
        return (fields.labels if m.group(1) == "labels" else fields.annotations).get(m.group(2), "")
    raise ContainerConfigError(f"unsupported fieldRef fieldPath {path!r}; supported: {', '.join(sorted(simple))}, "
                               "metadata.labels['<key>'], metadata.annotations['<key>']")
