"""The JobManager: dispatcher, resource manager, job masters, REST and RPC endpoints.

The path of a job: dispatcher -> job_master -> task_deployment -> checkpointing.

    process.py               `strom jobmanager`: the process (session or application mode), REST started here
    dispatcher.py            `JobManager`: jobs (dispatcher), TaskManagers (resource manager) and the RPC
                             endpoint on one asyncio loop
    resource_manager.py      registered TaskManagers, their slots and heartbeats
    embedded.py              `EmbeddedJobManager`: what one embedded job's JobMaster needs, on its own loop
                             (`env.execute()`, `strom run --threads`)
    job_configuration.py     a job's effective configuration: the cluster's, with the job's own over it
    job_master.py            one job: ExecutionGraph state, scheduling into slots, failover
    restart_strategies.py    Flink's `restart-strategy.*`: pure decisions whether and when to restart
    task_deployment.py       the `TaskDeployer` seam; `RpcTaskDeployer` sends deployments to TaskManagers
                             (`ThreadTaskDeployer`, in runtime/thread_deployment.py, runs them as threads)
    checkpointing.py         the JobMaster's side of the checkpoint coordinator (runtime/checkpoint/coordinator.py)
    savepoint_operations.py  savepoint operations of one job, as the REST API reports them by trigger id
    client_savepoints.py     savepoints for an in-process JobClient (`execute_async`, `strom run`)
    high_availability.py     what a restarted JobManager needs to recover its jobs (`high-availability.type`)
    retention.py             how much of the past is kept (finished jobs, operations, exceptions): pure

The REST API (read side):

    read_model.py            what the REST API shows: the records and the `JobManagerView` protocol
    rest_view.py             `DispatcherView`: the JobManagerView over the dispatcher and job masters
    rest_api.py              Flink's REST paths over aiohttp, answering from a JobManagerView
    rest_messages.py         Flink's REST response bodies from the read model: pure, no I/O
    rest_requests.py         reading requests safely: bounded bodies, JSON depth limit, 4xx never 500
    openapi.py               the OpenAPI description served at `GET /v1/openapi.json`
    web_dashboard.py         the dashboard's files (strom.web) served at `/`
"""
