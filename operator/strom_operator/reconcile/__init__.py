"""One FlinkJob's reconciliation pass: observe, decide (lifecycle/), perform, write the status.

  reconciler.py     the pass: observer -> lifecycle.next_step -> perform the step -> patch the status;
                    batch FlinkJobs go to batch/batch_reconciler.py
  observer.py       fills observe.ObservedJob from the JobManager REST API and the pods' states
  owned_secrets.py  creates the cluster-secret and TLS Secrets before the pods that mount them
  ha_data.py        clears a JobManager's old high-availability data before a deployment that must start clean
  autoscaling.py    one autoscaler evaluation with its I/O (REST metrics in; state, status, events out)
  wakeups.py        when a FlinkJob's daemon runs its next pass
  metrics.py        the operator's own Prometheus metrics

The kopf handlers (../handlers.py) only parse the body and call into here.
"""
