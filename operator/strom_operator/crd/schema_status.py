"""The OpenAPI schema of `FlinkJob.status`, the operator's write-ahead log.

What the operator has decided is written here before it acts, so an operator that restarts in the
middle of an upgrade reads where it was and resumes (lifecycle/state_machine.py). status.py is the typed view.
"""

from __future__ import annotations

from strom_operator.crd.schema_types import Schema, array, free_object, integer, list_map, obj, string

AUTOSCALER_REASONS = ("Disabled", "WaitingForStabilization", "WaitingForMetrics", "RescaleInProgress",
                      "WithinDeadBand", "NoChange", "ScaleDownDelayed", "BudgetExhausted", "Advised", "Rescaled")

LIFECYCLE_STATES = ("CREATED", "DEPLOYED", "STABLE", "UPGRADING", "SUSPENDED", "FAILED",
                    "ROLLING_BACK", "ROLLED_BACK", "DELETING")
UPGRADE_STEPS = ("STOP_WITH_SAVEPOINT", "DELETE_DEPLOYMENTS", "DEPLOY", "SAVEPOINT_FAILED")
SAVEPOINT_KINDS = ("manual", "periodic", "upgrade", "suspend", "deletion", "rescale")
TIMESTAMP = "RFC 3339 UTC time, e.g. 2024-05-01T12:00:00Z."
# Reconciling and Stalled are kstatus' abnormal-true conditions (what Flux and `kubectl wait` read); the
# operator's own Ready/Progressing/Degraded stay for people and Argo CD (gitops docs: the mapping).
CONDITION_TYPES = ("Ready", "Progressing", "Degraded", "JobManagerReady", "Reconciling", "Stalled")


def _number(description: str) -> Schema:
    return {"type": "number", "description": description}


def _int_map(description: str) -> Schema:
    return {"type": "object", "description": description, "additionalProperties": {"type": "integer"}}


AUTOSCALER_VERTEX = obj("The figures of one job vertex.", {
    "vertexId": string("Job vertex id."),
    "name": string("Job vertex name."),
    "parallelism": integer("Parallelism the vertex runs at."),
    "recommendedParallelism": integer("Parallelism the autoscaler recommends for it."),
    "inputRate": _number("Records in per second, summed over subtasks, averaged over the metrics window."),
    "busyTimeMsPerSecond": _number("Busy time of the busiest subtask, averaged over the metrics window."),
    "backPressuredTimeMsPerSecond": _number("Back-pressured time of the most back-pressured subtask, averaged."),
    "trueProcessingRate": _number("Records per second the vertex could process at its parallelism if always "
                                  "busy: input rate / busy fraction."),
    "targetRate": _number("Records per second the vertex must process: the sources' input rate plus backlog "
                          "catch-up, carried downstream by observed output ratios."),
    "catchUpRate": _number("Part of a source's target rate that works off its backlog within catchUpDuration."),
    "backlog": _number("Records a source still has to read (pendingRecords)."),
    "utilization": _number("Target rate / true processing rate: the busy fraction the target asks for."),
    "outcome": string("What was decided for this vertex, in words."),
    "scaleDownAfter": string("A delayed scale-down applies from this time on. " + TIMESTAMP),
})

AUTOSCALER_DECISION = obj("The autoscaler's latest decision or non-decision, with the figures it used.", {
    "time": string("When it was evaluated. " + TIMESTAMP),
    "mode": string("spec.autoscaler.mode at the time.", enum=("scale", "advise")),
    "action": string("'rescale' when new parallelism is applied, 'advise' when it is only recommended, "
                     "'none' otherwise.", enum=("rescale", "advise", "none")),
    "reason": string("Why, in one CamelCase word.", enum=AUTOSCALER_REASONS),
    "message": string("The decision in words with its figures (also sent as an event)."),
    "until": string("When the wait this decision reports ends, if known. " + TIMESTAMP),
    "taskManagers": integer("TaskManagers the recommended parallelism needs."),
    "rescalesInLastHour": integer("Rescales, upgrades and restarts of the job in the last hour."),
    "recommendedParallelism": _int_map("Recommended parallelism per job vertex id."),
    "vertices": array("Per job vertex figures.", AUTOSCALER_VERTEX),
})


def _savepoint(description: str) -> Schema:
    return obj(description, {
        "path": string("Location of the savepoint (s3://... or file://...)."),
        "timestamp": string("When the savepoint completed. " + TIMESTAMP),
        "kind": string("Why it was taken.", enum=SAVEPOINT_KINDS),
    })


BATCH_STATES = ("SUBMITTED", "RUNNING", "PENDING_RERUN", "COMPLETED", "FAILED")

BATCH = obj("A batch job (spec.mode 'batch') as its Spark driver pod shows it (batch/batch_status.py).", {
    "state": string("SUBMITTED (driver pod created), RUNNING, PENDING_RERUN (waiting to retry or to resubmit "
                    "a changed spec), COMPLETED or FAILED.", enum=BATCH_STATES),
    "driverPod": string("Name of the current driver pod."),
    "submission": integer("Driver pods created for this FlinkJob so far; the current one is named after it."),
    "attempt": integer("Attempt of the current run: 1, then one more per retry under restartPolicy OnFailure."),
    "submittedAt": string("When the current driver pod was created. " + TIMESTAMP),
    "startedAt": string("When the current driver pod started running. " + TIMESTAMP),
    "finishedAt": string("When the last driver pod ended. " + TIMESTAMP),
    "nextAttemptAt": string("When the next driver pod is created (PENDING_RERUN). " + TIMESTAMP),
    "exitCode": integer("Exit code of the last driver container that ended."),
    "reason": string("Why the last driver ended or is stuck, as the pod reports it."),
    "executors": integer("Executor pods of the current driver seen running at the last observation."),
})

SQL = obj("A SQL FlinkJob's deployed plan (lifecycle/sql_admission.py): what a savepoint upgrade must restore.", {
    "statefulOperators": array(
        "The operators of the deployed script's plan that hold state in a savepoint (sources, sinks, keyed "
        "operators), by uid; a savepoint upgrade to a script without one of them is refused.",
        obj("A stateful operator.", {
            "uid": string("The operator's uid (derived from its plan)."),
            "state": string("The runtime operator and function holding the state."),
            "name": string("The operator's name in the plan."),
        })),
})

STATUS: Schema = obj("Observed state of the job, and the operator's record of what it is doing.", {
    "lifecycleState": string("Where the FlinkJob is in its lifecycle.", enum=LIFECYCLE_STATES),
    "jobStatus": obj("The job as the JobManager's REST API reports it.", {
        "jobId": string("Flink job id (32 hex digits)."),
        "state": string("Job state reported by the JobManager (e.g. RUNNING, FAILED, FINISHED)."),
        "startTime": string("When the job started. " + TIMESTAMP),
        "lastCheckpoint": string("Location of the latest completed checkpoint."),
    }),
    "savepoints": obj("Savepoints taken by the operator.", {
        "last": _savepoint("The latest completed savepoint."),
        "history": array("Completed savepoints, oldest first; pruned by spec.savepoints.maxHistory and maxAge.",
                         _savepoint("A completed savepoint.")),
        "pending": obj("A savepoint that was triggered and has not completed.", {
            "triggerId": string("Trigger id sent to the JobManager; re-sending it is idempotent."),
            "kind": string("Why it was triggered.", enum=SAVEPOINT_KINDS),
            "triggeredAt": string("When it was triggered. " + TIMESTAMP),
            "nonce": integer("The spec.job.savepointTriggerNonce a manual savepoint answers."),
        }),
        "lastTriggerNonce": integer("The spec.job.savepointTriggerNonce last acted upon."),
        "lastTriggeredAt": string("When the operator last triggered a savepoint (periodic savepoints count "
                                  "from it, so a failing one is not retried in a loop). " + TIMESTAMP),
    }),
    "reconciliation": obj("The operator's write-ahead log of upgrades.", {
        "lastReconciledSpec": free_object("The spec the operator is deploying or has deployed (written "
                                          "before anything is torn down)."),
        "lastStableSpec": free_object("The last spec whose job reached RUNNING; rollbacks restore it."),
        "upgradeStep": string("The step of the upgrade in progress.", enum=UPGRADE_STEPS),
        "upgradeStartedAt": string("When the upgrade in progress started. " + TIMESTAMP),
        "deployedAt": string("When the current deployments were created. " + TIMESTAMP),
        "restorePath": string("Savepoint or checkpoint the next deployment restores from."),
        "reason": string("Why the operator is waiting, rolled back or failed, in words."),
        "vertexParallelism": _int_map("Parallelism per job vertex id the autoscaler set for the deployment in "
                                      "progress or deployed (written before the rescale stops the job)."),
        "stableVertexParallelism": _int_map("The autoscaler's parallelism per job vertex id of the last stable "
                                            "deployment; rollbacks restore it."),
    }),
    "scaling": obj("Parallelism and slots of the deployed job, and the autoscaler's latest decision.", {
        "parallelism": integer("Parallelism of the deployed job."),
        "taskManagers": integer("Number of TaskManager pods."),
        "slotsTotal": integer("TaskManagers times slots per TaskManager."),
        "vertexParallelism": _int_map("Parallelism per job vertex id set by the autoscaler "
                                      "(pipeline.jobvertex-parallelism-overrides)."),
        "autoscaler": AUTOSCALER_DECISION,
    }),
    "restoredFrom": obj("What the running job restored its state from.", {
        "kind": string("Kind of snapshot restored.", enum=("savepoint", "checkpoint", "none")),
        "path": string("Location of the snapshot."),
        "age": string("Age of the snapshot when restored, e.g. '5 min' (empty when unknown)."),
        "why": string("Why this snapshot (or none) was chosen."),
    }),
    "conditions": list_map(
        "Ready, Progressing and Degraded conditions, with reasons; JobManagerReady once TaskManagers waited for a "
        "JobManager Service without a ready endpoint; Reconciling and Stalled as kstatus (Flux, kubectl wait) "
        "reads them: Reconciling while the operator works towards the latest spec, Stalled when it cannot get "
        "there without a change by the user. One element per type.", obj("A condition.", {
            "type": string("Condition type.", enum=CONDITION_TYPES),
            "status": string("Whether the condition holds.", enum=("True", "False", "Unknown")),
            "reason": string("One-word CamelCase reason."),
            "message": string("Human-readable explanation."),
            "lastTransitionTime": string("When the status last changed. " + TIMESTAMP),
        }, required=("type", "status")), keys=("type",)),
    "batch": BATCH,
    "sql": SQL,
    "observedGeneration": integer("The metadata.generation of the FlinkJob last reconciled."),
    "selector": string("Label selector of the job's TaskManager pods, in the string form of `kubectl get -l` (the "
                       "scale subresource's labelSelectorPath: what an HPA reads the pods' metrics by)."),
    "error": string("The latest error (invalid spec, failed savepoint, failed job), empty when none."),
    "jobManagerUrl": string("The JobManager's REST URL inside the cluster (its Service): the web dashboard and "
                            "Flink's REST API; from outside, `kubectl port-forward svc/<name>-jobmanager 8081` "
                            "or spec.ingress."),
})
