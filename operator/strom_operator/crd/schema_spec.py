"""The OpenAPI schema of `FlinkJob.spec`: fields, types, enums, defaults, minimums, descriptions.

This is the source of truth for the CRD's spec (definition.py assembles the CRD) and for the defaults
the operator applies when it parses a spec (spec.py). Field names follow the Flink Kubernetes
Operator's FlinkDeployment where it has the concept.
"""

from __future__ import annotations

from strom_operator.crd.schema_ingress import INGRESS
from strom_operator.crd.schema_security import SECURITY
from strom_operator.crd.schema_types import (
    Schema,
    array,
    boolean,
    free_object,
    integer,
    obj,
    string,
    string_map,
)
from strom_operator.crd.spark_spec import SPARK, restart_policy_schema

# Flink durations ('10 s', '500ms', '1 min', '24h'); the engine parses the same units.
DURATION_PATTERN = (
    r"^\s*\d+(\.\d+)?\s*(ms|milli|millis|millisecond|milliseconds|s|sec|secs|second|seconds|"
    r"m|min|mins|minute|minutes|h|hour|hours|d|day|days)?\s*$"
)


def _duration(description: str, *, default: str | None = None) -> Schema:
    return string(description + " A Flink duration such as '10 s', '500 ms', '5 min' or '24 h'.",
                  default=default, pattern=DURATION_PATTERN)


def _number(description: str, *, default: float) -> Schema:
    return {"type": "number", "description": description, "minimum": 0, "maximum": 1, "default": default}


def _resources(description: str, *, cpu: str, memory: str) -> Schema:
    return obj(description, {
        "cpu": string(
            f"CPU requested for the container, as a Kubernetes quantity (e.g. '500m', '2'). Default {cpu}.",
            default=cpu),
        "memory": string(
            f"Memory requested and limited for the container, as a Kubernetes quantity (e.g. '1Gi'). "
            f"Default {memory}.", default=memory),
    }, default={})


def _pod_template(whose: str) -> Schema:
    return free_object(
        f"A Kubernetes PodTemplateSpec merged into {whose}: containers, env, volumes and volumeMounts "
        "are merged by name (the container named 'flink-main-container', or 'jobmanager'/'taskmanager', "
        "is Strom's own), and the values given here win for other fields.")


JOB = obj("The job to run: its entry point (or SQL script), parallelism, and how it is upgraded and suspended.", {
    "entry": string(
        "The job's entry point inside the image: a path to a Python file (e.g. /opt/jobs/wordcount.py) "
        "or 'module:package.module' to run an importable module. The JobManager runs it in application mode. "
        "Exactly one of entry, sql and sqlFrom.",
    ),
    "sql": string(
        "A SQL script (Flink SQL, statements ended by ';') the JobManager runs in application mode: its "
        "statements in order, its INSERTs as one job. The operator checks it before any pod starts. "
        "Exactly one of entry, sql and sqlFrom."),
    "sqlFrom": obj("Where the SQL script is kept, instead of inline in spec.job.sql.", {
        "configMapKeyRef": obj("A key of a ConfigMap in the FlinkJob's namespace holding the script.", {
            "name": string("The ConfigMap's name."),
            "key": string("The key whose value is the script."),
        }, required=("name", "key")),
    }, required=("configMapKeyRef",)),
    "args": array("Arguments passed to the job's entry point.", string("One argument.")),
    "parallelism": integer(
        "Parallelism of the job (parallelism.default). The TaskManager count is ceil(parallelism / "
        "taskManager.slots). The scale subresource maps to this field.", minimum=1, default=1),
    "maxParallelism": integer(
        "Maximum parallelism, i.e. the number of key groups (pipeline.max-parallelism). It bounds "
        "rescaling and must not change across upgrades that restore state.",
        minimum=1, maximum=32768, default=128),
    "upgradeMode": string(
        "How state is carried across upgrades: 'savepoint' takes a stop-with-savepoint and restores from "
        "it; 'last-state' restarts from the latest completed checkpoint; 'stateless' starts empty.",
        enum=("stateless", "savepoint", "last-state"), default="stateless"),
    "state": string(
        "Desired state of the job: 'running', or 'suspended' to stop it with a savepoint and remove its "
        "pods (the configuration is kept; setting 'running' again resumes from that savepoint).",
        enum=("running", "suspended"), default="running"),
    "savepointTriggerNonce": integer(
        "Change this number to trigger a manual savepoint of the running job."),
    "initialSavepointPath": string(
        "Savepoint or checkpoint to restore from when the job is first deployed (s3:// or file://)."),
    "allowNonRestoredState": boolean(
        "Allow restoring a savepoint that contains state of operators the job no longer has.",
        default=False),
})
# entry, sql or sqlFrom: one of them (validation.py says which and why; the schema refuses none or two)
JOB["oneOf"] = [{"required": ["entry"]}, {"required": ["sql"]}, {"required": ["sqlFrom"]}]

JOB_MANAGER = obj("The JobManager pod: one replica running the job's entry point in application mode.", {
    "resources": _resources("Resources of the JobManager container.", cpu="0.5", memory="1Gi"),
    "podTemplate": _pod_template("the JobManager pod (after spec.podTemplate)"),
}, default={})

TASK_MANAGER = obj("The TaskManager pods that run the job's subtasks in slots.", {
    "slots": integer(
        "Task slots per TaskManager (taskmanager.numberOfTaskSlots); a slot is a worker process, so one "
        "slot uses about one core.", minimum=1, default=1),
    "resources": _resources("Resources of each TaskManager container.", cpu="1", memory="2Gi"),
    "podTemplate": _pod_template("the TaskManager pods (after spec.podTemplate)"),
}, default={})

CHECKPOINTING = obj("Periodic checkpoints: the job's fault tolerance and the basis of 'last-state' upgrades.", {
    "interval": _duration("Time between checkpoints (execution.checkpointing.interval); unset or 0 disables "
                          "checkpointing."),
    "mode": string("Checkpointing guarantee (execution.checkpointing.mode).",
                   enum=("EXACTLY_ONCE", "AT_LEAST_ONCE"), default="EXACTLY_ONCE"),
    "dir": string("Checkpoint storage URI (state.checkpoints.dir): s3://bucket/prefix or file:///path."),
}, default={})

SAVEPOINTS = obj("Savepoints: where they go, periodic ones, and how long their history is kept.", {
    "dir": string("Savepoint directory (state.savepoints.dir): s3://bucket/prefix or file:///path. "
                  "Required by upgradeMode 'savepoint'."),
    "periodicInterval": _duration("Take a savepoint of the running job this often; unset or 0 disables."),
    "maxHistory": integer("Savepoints kept in status.savepoints.history; older ones are disposed of "
                          "(the latest completed savepoint is always kept).", minimum=1, default=10),
    "maxAge": _duration("Savepoints older than this are disposed of (the latest completed savepoint is "
                        "always kept).", default="24 h"),
    "onDeletion": boolean("Take a savepoint before the FlinkJob is deleted.", default=False),
}, default={})

S3 = obj("Access to S3 or an S3-compatible store for checkpoints and savepoints.", {
    "endpoint": string("Endpoint URL of an S3-compatible store (e.g. http://minio:9000); unset for AWS S3."),
    "credentialsSecret": string(
        "Name of a Secret in the FlinkJob's namespace with keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. "
        "They reach the pods as environment variables, never the ConfigMap or the status."),
}, default={})

AUTOSCALER = obj(
    "The job autoscaler: sets each job vertex's parallelism from its busy time, processing rate and the "
    "sources' input rate and backlog (the Flink Kubernetes Operator's algorithm), and the TaskManager count "
    "from the slots needed.", {
        "enabled": boolean("Let the operator collect scaling metrics and evaluate the job's parallelism.",
                           default=False),
        "mode": string("'scale' applies the recommended parallelism (a rescale through a savepoint); 'advise' "
                       "only writes the recommendation to status.scaling.", enum=("scale", "advise"),
                       default="scale"),
        "metricsInterval": _duration("How often the JobManager's metrics are sampled.", default="15 s"),
        "metricsWindow": _duration("The sliding window of samples that a decision averages over; a decision "
                                   "needs a full window.", default="10 min"),
        "stabilization": _duration("Time after each (re)start of the job before samples count (start-up "
                                   "and catch-up distort the rates).", default="5 min"),
        "targetUtilization": _number("The busy fraction each vertex is sized for, in (0, 1].", default=0.7),
        "utilizationBoundary": _number("Dead band around targetUtilization: no change while a vertex's "
                                       "utilization stays within targetUtilization +- this.", default=0.3),
        "catchUpDuration": _duration("The sources' backlog is to be worked off within this time, on top of "
                                     "the input rate.", default="5 min"),
        "scaleDownDelay": _duration("A scale-down is applied only after it has been recommended for this "
                                    "long, at the highest parallelism recommended meanwhile.", default="1 h"),
        "minParallelism": integer("Lowest parallelism the autoscaler gives a vertex.", minimum=1, default=1),
        "maxParallelism": integer("Highest parallelism the autoscaler gives a vertex (unset: the job's "
                                  "maxParallelism, which always bounds it).", minimum=1),
        "maxRescalesPerHour": integer("Rescales allowed in any hour, upgrades and restarts of the job "
                                      "counted too.", minimum=1, default=2),
    }, default={})

SPEC: Schema = obj("Desired state of a Strom streaming (or batch) job on Kubernetes.", {
    "image": string("Container image holding the Strom runtime and the job's code."),
    "imagePullPolicy": string("Image pull policy of the JobManager and TaskManager containers.",
                              enum=("Always", "IfNotPresent", "Never"), default="IfNotPresent"),
    "serviceAccount": string("Service account of the JobManager and TaskManager pods (batch mode: of the Spark "
                             "driver, which must be allowed to manage pods; unset, the operator creates one)."),
    "mode": string("Runtime mode: 'streaming' runs on Strom's engine, 'batch' runs bounded jobs on Spark.",
                   enum=("streaming", "batch"), default="streaming"),
    "job": JOB,
    "jobManager": JOB_MANAGER,
    "taskManager": TASK_MANAGER,
    "checkpointing": CHECKPOINTING,
    "savepoints": SAVEPOINTS,
    "s3": S3,
    "autoscaler": AUTOSCALER,
    "security": SECURITY,
    "ingress": INGRESS,
    "flinkConfiguration": string_map(
        "Engine configuration (Flink keys such as execution.buffer-timeout), written to the ConfigMap's "
        "config.yaml; kubernetes.operator.* keys tune the operator for this job."),
    "restartNonce": integer("Change this number to restart the job (an upgrade with the same spec)."),
    "podTemplate": _pod_template("both the JobManager and TaskManager pods"),
    "spark": SPARK,
    "restartPolicy": restart_policy_schema(_duration(
        "Wait before the first retry of a failed driver; each further retry waits twice as long as the one "
        "before, at most 5 min longer than this.", default="10 s")),
}, required=("image", "job"))
