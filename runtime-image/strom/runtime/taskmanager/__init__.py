"""The TaskManager process and its slot worker processes.

    taskmanager.py    `strom taskmanager`: registers slots with the JobManager, heartbeats, runs each slot
                      as a worker process and forwards deployments, task states and checkpoint messages
    registration.py   how long and how loudly a TaskManager retries registering at its JobManager
    slot_worker.py    one slot = one worker process (N slots use N cores): runs the deployed subtasks
                      (runtime/execution_graph.py builds them)

Deployments arrive as RPC messages (runtime/rpc.py) from the JobManager's `RpcTaskDeployer`.
"""
