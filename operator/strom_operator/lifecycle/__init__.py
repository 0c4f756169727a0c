"""The FlinkJob lifecycle: the pure state machine that chooses the next step (no I/O).

A pass calls `state_machine.next_step(spec, status, observed, now=...)` (or, for a FlinkJob being
deleted, `deletion.next_deletion_step`) and gets one `steps.Step` to perform; the status it carries is
written afterwards, so the status is the write-ahead log a restarted operator resumes from.

  state_machine.py     next_step: validate, then deploy / wait for RUNNING / run / upgrade / roll back
  validation.py        `validate_*(spec) -> str | None`, first error wins (runs before any step)
  upgrades.py          upgrades, suspends and rollbacks as a write-ahead log in status.reconciliation
  deletion.py          deletion, with a final savepoint when spec.savepoints.onDeletion asks for one
  rescaling.py         the autoscaler's decisions entering the lifecycle (a rescale is an upgrade)
  savepoint_outcome.py what a pending savepoint's state means: the one rule the three callers above share
  savepoint_history.py trigger ids, recording completed savepoints, pruning the history
  steps.py             the steps a handler performs (DeployJob, StopWithSavepoint, WriteStatus, Wait, ...)

Performing a step is reconcile/reconciler.py.
"""
