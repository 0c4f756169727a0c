"""Merging user pod templates into the pods the operator builds, the way `kubectl patch` merges.

Kubernetes' strategic merge: maps merge key by key, the overlay's scalars win, and lists of named
things (containers, env, volumes, ...) merge item by item on their merge key instead of being
replaced. Other lists (tolerations, args) are replaced whole, as Kubernetes does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

# The merge key of each list Kubernetes merges item by item (from its API's patchMergeKey).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
}

# The name the Flink Kubernetes Operator gives the main container in user pod templates.
MAIN_CONTAINER_ALIAS = "flink-main-container"


def strategic_merge(base: Any, overlay: Any, key: str | None = None) -> Any:
    """`overlay` merged into `base`; neither is modified."""
    if isinstance(base, Mapping) and isinstance(overlay, Mapping):
        out = {k: copy.deepcopy(v) for k, v in base.items()}
        for k, v in overlay.items():
            out[k] = strategic_merge(base[k], v, k) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(overlay, list) and key in MERGE_KEYS:
        return _merge_list(base, overlay, MERGE_KEYS[key])
    return copy.deepcopy(overlay)


def _merge_list(base: list[Any], overlay: list[Any], merge_key: str) -> list[Any]:
    out = [copy.deepcopy(item) for item in base]
    index = {item.get(merge_key): i for i, item in enumerate(out) if isinstance(item, Mapping)}
    for item in overlay:
        k = item.get(merge_key) if isinstance(item, Mapping) else None
        if k is not None and k in index:
            out[index[k]] = strategic_merge(out[index[k]], item)
        else:
            out.append(copy.deepcopy(item))
            if k is not None:
                index[k] = len(out) - 1
    return out


def rename_main_container(template: Mapping[str, Any], main: str) -> dict[str, Any]:
    """A user template's 'flink-main-container' is the operator's container named `main`."""
    out = copy.deepcopy(dict(template))
    for c in (out.get("spec") or {}).get("containers") or []:
        if isinstance(c, dict) and c.get("name") == MAIN_CONTAINER_ALIAS:
            c["name"] = main
    return out


def merge_pod_templates(base: Mapping[str, Any], *overlays: Mapping[str, Any], main: str) -> dict[str, Any]:
    """The operator's pod template with each user template merged in turn (later ones win)."""
    merged: dict[str, Any] = copy.deepcopy(dict(base))
    for overlay in overlays:
        if overlay:
            merged = strategic_merge(merged, rename_main_container(overlay, main))
    _default_port_protocols(merged)
    return merged


def _default_port_protocols(template: dict[str, Any]) -> None:
    """A user's container port without `protocol` gets Kubernetes' default, TCP, written out: under
    server-side apply (containerPort, protocol) is the list key, and an element missing it is refused."""
    spec = template.get("spec") or {}
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or ():
            for port in container.get("ports") or () if isinstance(container, dict) else ():
                if isinstance(port, dict) and "containerPort" in port:
                    port.setdefault("protocol", "TCP")
