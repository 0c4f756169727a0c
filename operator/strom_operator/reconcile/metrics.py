"""The operator's own Prometheus metrics, served by prometheus-client on their own port.

Reconciliations (count, duration, errors per FlinkJob), FlinkJobs per lifecycle state,
savepoints (count and duration per kind, failures), upgrades and rollbacks. Savepoint and
upgrade figures are derived from the status before and after a step (`record_transition`), so
they count what the write-ahead log says happened, once, whoever performed it.
"""

from __future__ import annotations

from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from strom_operator.crd.status import FlinkJobStatus

LIFECYCLE_STATES = ("CREATED", "DEPLOYED", "STABLE", "UPGRADING", "SUSPENDED", "ROLLING_BACK", "ROLLED_BACK",
                    "FAILED", "DELETING")


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciliations = Counter("strom_operator_reconciliations", "Reconciliation passes.",
                                       ["namespace", "name"], registry=r)
        self.reconcile_errors = Counter("strom_operator_reconciliation_errors", "Reconciliation passes that failed.",
                                        ["namespace", "name"], registry=r)
        self.reconcile_duration = Histogram("strom_operator_reconciliation_duration_seconds",
                                            "Duration of a reconciliation pass.", ["namespace", "name"],
                                            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30), registry=r)
        self.flinkjobs = Gauge("strom_operator_flinkjobs", "FlinkJobs by lifecycle state.", ["state"], registry=r)
        self.savepoints = Counter("strom_operator_savepoints", "Completed savepoints.", ["namespace", "name", "kind"],
                                  registry=r)
        self.savepoint_failures = Counter("strom_operator_savepoint_failures", "Savepoints that failed.",
                                          ["namespace", "name", "kind"], registry=r)
        self.savepoint_duration = Histogram("strom_operator_savepoint_duration_seconds",
                                            "From trigger to completion of a savepoint.", ["kind"],
                                            buckets=(0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600), registry=r)
        self.upgrades = Counter("strom_operator_upgrades", "Upgrades started (spec changes, suspends, resumes).",
                                ["namespace", "name"], registry=r)
        self.rollbacks = Counter("strom_operator_rollbacks", "Rollbacks started.", ["namespace", "name"], registry=r)
        self.disposed_savepoints = Counter("strom_operator_disposed_savepoints",
                                           "Savepoints disposed of after pruning.", ["namespace", "name"], registry=r)
        self._states: dict[str, str] = {}
        for state in LIFECYCLE_STATES:
            self.flinkjobs.labels(state).set(0)

    def serve(self, port: int, addr: str = "0.0.0.0") -> int:
        """Start the HTTP endpoint; the bound port (port 0 picks a free one)."""
        server, _thread = start_http_server(port, addr=addr, registry=self.registry)
        return int(server.server_port)

    def set_state(self, key: str, state: str | None) -> None:
        """The lifecycle state of FlinkJob `key` (namespace/name); None when it is gone."""
        if state is None:
            self._states.pop(key, None)
        else:
            self._states[key] = state
        counts = {s: 0 for s in LIFECYCLE_STATES}
        for s in self._states.values():
            counts[s] = counts.get(s, 0) + 1
        for s, n in counts.items():
            self.flinkjobs.labels(s).set(n)

    def record_transition(self, namespace: str, name: str, before: FlinkJobStatus, after: FlinkJobStatus,
                          now: datetime) -> None:
        sp_before, sp_after = before.savepoints, after.savepoints
        pending = sp_before.pending
        if pending is not None and sp_after.pending is None:
            if sp_after.last is not None and sp_after.last != sp_before.last:
                self.savepoints.labels(namespace, name, pending.kind).inc()
                self.savepoint_duration.labels(pending.kind).observe(
                    max(0.0, (now - pending.triggered_at).total_seconds()))
            else:
                self.savepoint_failures.labels(namespace, name, pending.kind).inc()
        if after.lifecycle_state == "UPGRADING" and before.lifecycle_state != "UPGRADING":
            self.upgrades.labels(namespace, name).inc()
        if after.lifecycle_state == "ROLLING_BACK" and before.lifecycle_state != "ROLLING_BACK":
            self.rollbacks.labels(namespace, name).inc()
        self.set_state(f"{namespace}/{name}", after.lifecycle_state)
