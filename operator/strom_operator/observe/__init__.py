"""What the operator saw of a FlinkJob, and what it means (pure types and decisions, no I/O).

  observed.py             `ObservedJob`: the job as the JobManager REST API and the pods showed it,
                          the input of every lifecycle decision
  jobmanager_readiness.py whether the JobManager Service has a ready endpoint, and the condition saying so
  owned_objects.py        the Deployments and pods of each FlinkJob as the operator's watches last saw them
  derived_status.py       status fields derived just before the status is written
  kstatus_conditions.py   kstatus' Reconciling and Stalled conditions from the operator's own conditions

The I/O that fills `ObservedJob` is reconcile/observer.py (through clients/); the types live here, below
lifecycle/ and clients/, so the pure state machine and the REST client can both name them.
"""
