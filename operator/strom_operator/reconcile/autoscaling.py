"""One autoscaler evaluation of a FlinkJob with its I/O: JobManager REST metrics in; state, status, events out.

The decision is the autoscaler package's (`autoscaler.scaling.autoscale`, pure); this module
fetches what it reads and keeps what it returns, in the order the package docstring gives:
the topology (`/jobs/:jobid`, `/jobs/:jobid/plan`) and one metrics sample (aggregated subtask
metrics per vertex) from the JobManager, the state from the ConfigMap `<job>-autoscaler`; then the
new state goes back to that ConfigMap and the decision to the operator's Prometheus registry. The
status (status.scaling.autoscaler, and a rescale's upgrade) is the reconciler's to write, under its
lock (reconciler.Reconciler.autoscale).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry

from strom_operator.autoscaler.configmap_store import (
    autoscaler_configmap_name,
    build_autoscaler_configmap,
    state_from_configmap_data,
)
from strom_operator.autoscaler.decisions import ScalingDecision
from strom_operator.autoscaler.metrics_sample import MetricsSample, sample_from_rest, subtask_metrics_path
from strom_operator.autoscaler.prometheus import record_decision
from strom_operator.autoscaler.scaling import autoscale
from strom_operator.autoscaler.settings import AutoscalerSettings
from strom_operator.autoscaler.state import AutoscalerState
from strom_operator.autoscaler.topology import JobTopology, topology_from_rest
from strom_operator.clients.jobmanager_client import JobManagerClient, JobManagerError, JobManagerUnreachable
from strom_operator.clients.kube_api import KubeApi
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.resources.labels import FlinkJobRef

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AutoscalerOutcome:
    decision: ScalingDecision
    state: AutoscalerState
    state_problem: str | None = None  # the stored state could not be read and was started afresh


async def fetch_job_metrics(client: JobManagerClient, base_url: str, job_id: str, *, time: float
                            ) -> tuple[JobTopology | None, MetricsSample | None]:
    """The job's topology and one sample; (None, None) when the JobManager gives no usable answer."""
    try:
        topology = topology_from_rest(await client.job_details(base_url, job_id),
                                      await client.job_plan(base_url, job_id))
        if not topology.vertices:
            return None, None
        metrics = {v.id: await client.subtask_metrics(base_url, subtask_metrics_path(job_id, v.id))
                   for v in topology.vertices}
    except (JobManagerError, JobManagerUnreachable, KeyError, TypeError, ValueError) as e:
        log.debug("job %s: no scaling metrics: %s", job_id, e)
        return None, None
    return topology, sample_from_rest(topology, metrics, time=time)


async def evaluate_autoscaler(kube: KubeApi, client: JobManagerClient, registry: CollectorRegistry, *,
                              ref: FlinkJobRef, spec: FlinkJobSpec, base_url: str, job_id: str,
                              job_start: datetime, now: datetime) -> AutoscalerOutcome:
    """Fetch, decide, store the state and record the metrics; the caller writes the status."""
    stored = await kube.get("ConfigMap", ref.namespace, autoscaler_configmap_name(ref))
    state, problem = state_from_configmap_data((stored or {}).get("data"))
    topology, sample = await fetch_job_metrics(client, base_url, job_id, time=now.timestamp())
    state, decision = autoscale(state, settings=AutoscalerSettings.from_spec(spec), topology=topology,
                                sample=sample, job_id=job_id, job_start=job_start, now=now,
                                slots_per_task_manager=spec.task_manager.slots)
    # The state first: a rescale written to the status is then always one the stored state knows of.
    await kube.apply(build_autoscaler_configmap(ref, state))
    record_decision(registry, namespace=ref.namespace, name=ref.name, decision=decision)
    return AutoscalerOutcome(decision, state, problem)
