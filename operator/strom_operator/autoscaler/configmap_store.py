"""The autoscaler's state in a ConfigMap `<job>-autoscaler`: the pure (de)serialization and the builder.

The handler reads the ConfigMap before an evaluation and writes `build_autoscaler_configmap` after
it, so an operator restart keeps the metrics window, waiting scale-downs, the rescale budget and
the overrides. The state is JSON under one key. A ConfigMap holds at most 1 MiB: when the window
would not fit, its oldest samples are dropped. A missing, corrupt or foreign state reads as an empty
one with the problem said, never as an error: the autoscaler then collects a new window.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from strom_operator.autoscaler.state import AutoscalerState
from strom_operator.resources.labels import FlinkJobRef, object_meta

STATE_KEY = "state.json"
# Below the API server's 1 MiB object limit, leaving room for metadata.
MAX_STATE_BYTES = 900_000


def autoscaler_configmap_name(ref: FlinkJobRef) -> str:
    return f"{ref.name}-autoscaler"


def state_to_configmap_data(state: AutoscalerState, *, max_bytes: int = MAX_STATE_BYTES) -> dict[str, str]:
    """`{"state.json": ...}`, dropping the window's oldest samples until it fits in `max_bytes`."""
    text = _dump(state)
    samples = state.window.samples
    if len(text.encode()) > max_bytes and samples:
        # Bisect the number of newest samples that fit instead of re-encoding once per sample.
        low, high = 0, len(samples)
        while low < high:
            mid = (low + high + 1) // 2
            if len(_dump(_keep_newest(state, mid)).encode()) <= max_bytes:
                low = mid
            else:
                high = mid - 1
        text = _dump(_keep_newest(state, low))
    return {STATE_KEY: text}


def _keep_newest(state: AutoscalerState, n: int) -> AutoscalerState:
    samples = state.window.samples
    return replace(state, window=replace(state.window, samples=samples[len(samples) - n:] if n else ()))


def _dump(state: AutoscalerState) -> str:
    return json.dumps(state.to_dict(), separators=(",", ":"), sort_keys=True)


def state_from_configmap_data(data: Mapping[str, str] | None) -> tuple[AutoscalerState, str | None]:
    """The stored state and None, or an empty state and why the stored one could not be read."""
    if not data or STATE_KEY not in data:
        return AutoscalerState(), None
    try:
        return AutoscalerState.from_dict(json.loads(data[STATE_KEY])), None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return AutoscalerState(), f"stored autoscaler state unreadable ({type(e).__name__}: {e}); starting afresh"


def build_autoscaler_configmap(ref: FlinkJobRef, state: AutoscalerState) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(ref, autoscaler_configmap_name(ref), "autoscaler"),
        "data": state_to_configmap_data(state),
    }
