"""The runtime: what runs a JobGraph — processes, tasks, operators, channels, state and checkpoints.

Nothing above this package imports it (an import-linter contract): executors are loaded by name
(strom.datastream.executors) and operators are built from the kinds the graphs carry.

Ways to run a job, all under one JobMaster (jobmanager/job_master.py):

    local_executor.py     the embedded executor behind `env.execute()` (jobmanager/embedded.py +
                          thread_deployment.py); LocalJob / LocalJobClient are views of the JobMaster
    thread_deployment.py  `ThreadTaskDeployer`: a JobMaster's subtasks as threads of this process
    minicluster.py        `strom run`: a JobManager in this process and TaskManager processes on loopback
    execution_graph.py    JobGraph -> subtasks and channels (one ExecutionVertex per parallel subtask)
    rpc.py                the messages between JobManager, TaskManagers and slot workers, and their framing
    shutdown_signals.py   SIGTERM/SIGINT as one way to stop a process and what it started

Subpackages, from the JobManager down to a record:

    jobmanager/    dispatcher, resource manager, job master, deployment, checkpointing, REST endpoint
    taskmanager/   the TaskManager process and its slot worker processes
    tasks/         StreamTask (a mailbox loop per subtask), operator chains, barrier alignment
    operators/     the built-in operators, built by kind (operators/registry.py)
    network/       channels with credit-based back pressure, local and over TCP; addresses and auth
    state/         keyed and operator state, backends (heap, rocksdb), timers, snapshots (see state/__init__)
    checkpoint/    coordinator, barriers, storage and metadata (see checkpoint/__init__)
    metrics/       metric groups, task metrics, the registry and the Prometheus exporter
"""
