"""The slot autoscaler: pure logic from JobManager REST metrics to per-vertex parallelism decisions.

One evaluation, as a handler on a `spec.autoscaler.metricsInterval` timer drives it (the I/O is the
handler's; everything here is pure):

1. state, problem = configmap_store.state_from_configmap_data(<ConfigMap `<job>-autoscaler`>.data)
2. topology = topology.topology_from_rest(GET /jobs/:jobid, GET /jobs/:jobid/plan)
   sample = metrics_sample.sample_from_rest(topology, {vertex id: GET metrics_sample.subtask_metrics_path(..)},
                                            time=now)
3. state, decision = scaling.autoscale(state, settings=settings.AutoscalerSettings.from_spec(spec),
                                       topology=.., sample=.., job_id=.., job_start=.., now=..,
                                       slots_per_task_manager=spec.task_manager.slots)
4. write configmap_store.build_autoscaler_configmap(ref, state); put decision.to_dict() in
   status.scaling.autoscaler; emit decision.event_message(); prometheus.record_decision(registry, ...).
5. if decision.rescales: redeploy through a savepoint with the engine option
   resources.configmap.PARALLELISM_OVERRIDES_KEY = parallelism_overrides_value(state.overrides) and
   decision.task_managers TaskManagers.
"""
