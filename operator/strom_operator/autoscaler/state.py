"""What the autoscaler remembers between evaluations; kept in a ConfigMap (configmap_store.py).

An operator restart must not lose the metrics window (a decision needs a full one), the scale-downs
waiting out their delay, the restarts counted against the hourly budget, or the parallelism the
autoscaler set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom_operator.autoscaler.metrics_window import MetricsWindow
from strom_operator.autoscaler.topology import VertexId

STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class PendingScaleDown:
    """A scale-down recommended since `since` (epoch seconds); `highest` is the highest parallelism
    recommended meanwhile, which is what applies when the delay has passed."""

    since: float
    highest: int


@dataclass(frozen=True, slots=True)
class AutoscalerState:
    window: MetricsWindow = MetricsWindow()
    pending_scale_downs: Mapping[VertexId, PendingScaleDown] = field(default_factory=dict)
    restarts: tuple[float, ...] = ()  # start times of the job's restarts (upgrades, rescales) in the last hour
    overrides: Mapping[VertexId, int] = field(default_factory=dict)  # parallelism the autoscaler set per vertex
    rescale_requested_at: float | None = None  # a rescale decided and not yet seen as a restart

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "window": self.window.to_dict(),
            "pendingScaleDowns": {vid: {"since": p.since, "highest": p.highest}
                                  for vid, p in self.pending_scale_downs.items()},
            "restarts": list(self.restarts),
            "overrides": dict(self.overrides),
            "rescaleRequestedAt": self.rescale_requested_at,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AutoscalerState:
        if d.get("version") != STATE_VERSION:
            raise ValueError(f"autoscaler state version {d.get('version')!r}; this operator reads {STATE_VERSION}")
        requested = d.get("rescaleRequestedAt")
        return cls(
            window=MetricsWindow.from_dict(d.get("window") or {}),
            pending_scale_downs={VertexId(k): PendingScaleDown(float(v["since"]), int(v["highest"]))
                                 for k, v in (d.get("pendingScaleDowns") or {}).items()},
            restarts=tuple(float(t) for t in d.get("restarts") or ()),
            overrides={VertexId(k): int(v) for k, v in (d.get("overrides") or {}).items()},
            rescale_requested_at=None if requested is None else float(requested),
        )
