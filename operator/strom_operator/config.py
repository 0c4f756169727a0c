"""The operator process's own settings, from the environment (the `strom-operator` flags set it).

Per-FlinkJob options live in the resource (`kubernetes.operator.*`, operator_options.py); these
are the process's: where its metrics are served, how to reach JobManagers from outside the
cluster, a cap on requeue delays, and what it watches (kopf's cluster scanning follows from it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from strom_operator.clients.jobmanager_endpoints import URL_MAP_ENV
from strom_operator.crd.spec import IngressSpec
from strom_operator.resources.ingress import ingress_problem

METRICS_PORT_ENV = "STROM_OPERATOR_METRICS_PORT"
MAX_REQUEUE_ENV = "STROM_OPERATOR_MAX_REQUEUE_SECONDS"
WATCH_TIMEOUT_ENV = "STROM_OPERATOR_WATCH_TIMEOUT_SECONDS"
# What `strom-operator` was told to watch: `*` for every namespace, else namespaces separated by
# commas; unset (`kopf run`): kopf's default, cluster scanning on.
NAMESPACES_ENV = "STROM_OPERATOR_NAMESPACES"
# The chart's jobIngress as JSON ({"template", "className", "annotations"}): the Ingress of every streaming
# FlinkJob without spec.ingress; unset or an empty template: none.
JOB_INGRESS_ENV = "STROM_OPERATOR_JOB_INGRESS"
ALL_NAMESPACES = "*"
_GLOB_CHARS = set("*?[]!")


def cluster_scanning(namespaces: tuple[str, ...] | None) -> bool:
    """Whether kopf must list and watch CRDs and namespaces cluster-wide: always when watching every
    namespace (None) or namespace patterns (kopf resolves globs against the namespace list), never
    for named namespaces (a namespaced Role cannot list them: kopf's 403 retries at every start)."""
    if namespaces is None:
        return True
    return any(_GLOB_CHARS & set(ns) for ns in namespaces)
DEFAULT_METRICS_PORT = 9090


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    metrics_port: int | None = DEFAULT_METRICS_PORT  # None: no metrics endpoint; 0: any free port
    jobmanager_url_map: str | None = None
    max_requeue_s: float | None = None
    watch_timeout_s: int = 300
    namespaces: tuple[str, ...] | None = None  # None: every namespace (or unknown: `kopf run`)
    job_ingress: IngressSpec | None = None  # the chart's jobIngress, for FlinkJobs without spec.ingress

    @property
    def cluster_scanning(self) -> bool:
        return cluster_scanning(self.namespaces)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OperatorConfig:
        env = os.environ if environ is None else environ

        def number(key: str, kind: type) -> object | None:
            raw = env.get(key, "").strip()
            if not raw:
                return None
            try:
                return kind(raw)
            except ValueError:
                raise ValueError(f"invalid value {raw!r} for {key}: expected a {kind.__name__}") from None

        port = env.get(METRICS_PORT_ENV, "").strip()
        metrics_port: int | None = DEFAULT_METRICS_PORT
        if port.lower() in ("off", "none", "-"):
            metrics_port = None
        elif port:
            metrics_port = number(METRICS_PORT_ENV, int)  # type: ignore[assignment]
        raw_namespaces = env.get(NAMESPACES_ENV, "").strip()
        namespaces = None if raw_namespaces in ("", ALL_NAMESPACES) else tuple(
            ns.strip() for ns in raw_namespaces.split(",") if ns.strip())
        return cls(
            namespaces=namespaces or None,
            metrics_port=metrics_port,
            jobmanager_url_map=env.get(URL_MAP_ENV) or None,
            max_requeue_s=number(MAX_REQUEUE_ENV, float),  # type: ignore[arg-type]
            watch_timeout_s=number(WATCH_TIMEOUT_ENV, int) or 300,  # type: ignore[arg-type]
            job_ingress=job_ingress_from(env.get(JOB_INGRESS_ENV, "")),
        )


def job_ingress_from(raw: str) -> IngressSpec | None:
    """The chart's jobIngress from its JSON; a value that cannot become an Ingress is one line naming the key."""
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid {JOB_INGRESS_ENV} (the chart's jobIngress): not JSON: {e}") from None
    annotations = value.get("annotations") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance({} if annotations is None else annotations, dict):
        raise ValueError(f"invalid {JOB_INGRESS_ENV} (the chart's jobIngress): expected "
                         '{"template": ..., "className": ..., "annotations": {...}}')
    if not str(value.get("template") or "").strip():
        return None
    ingress = IngressSpec.from_dict({k: v for k, v in value.items() if v not in ("", None)})
    problem = ingress_problem(ingress) if ingress is not None else None
    if problem is not None:
        raise ValueError(f"invalid jobIngress of the chart ({JOB_INGRESS_ENV}): {problem.replace('spec.ingress.', '')}")
    return ingress
