"""Program -> graphs: what `env.execute()` turns a DataStream program into before anything runs.

The user API records `Transformation`s; this package turns them, in two pure steps, into the graphs
the JobManager schedules. Nothing here starts a thread or opens a socket, and nothing here imports
the runtime (an import-linter contract checks it): the runtime builds operators from the kinds and
descriptors these graphs carry.

    transformations.py   the nodes the user API records: an operator (`OperatorDescriptor`, built later
                         by kind) with its inputs, or a virtual step (partitioning, union, side output)
    stream_graph.py      StreamGraph (Flink's StreamGraphGenerator): operators as `StreamNode`s,
                         partitioners as `StreamEdge`s; virtual steps dissolve into edges; uids,
                         parallelism and max parallelism are settled here
    job_graph.py         JobGraph (Flink's StreamingJobGraphGenerator): operator chaining — chains become
                         `JobVertex`es (id: a `VertexId` derived from the head operator's uid), the
                         remaining edges `JobEdge`s; per-vertex parallelism overrides (the autoscaler's)
    connector_checks.py  a job's sources and sinks checked against its effective configuration at submission
    job_sources.py       the job file's source text, carried with the graph for tracebacks on TaskManagers

The next step, one execution vertex per parallel subtask, is the runtime's (`strom.runtime.execution_graph`).
The StreamGraph is what a submitted job's payload carries (`strom.common.job_payload`).
"""
