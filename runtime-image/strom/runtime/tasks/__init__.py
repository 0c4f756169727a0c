"""Runtime: tasks. One parallel subtask of a JobVertex, and what it is made of.

    stream_task.py        `StreamTask`: the mailbox loop in one thread (sources pull, others read input gates)
    operator_chain.py     the chained operators of one JobVertex, wired by direct calls
    watermark_valve.py    one input's watermark: min over active channels, never backwards
    barrier_alignment.py  checkpoint barriers: when the task snapshots (aligned or unaligned)
    processing_time.py    the processing-time service (wall clock, or a manual clock in tests)

Tasks are deployed by a TaskDeployer (runtime/jobmanager/task_deployment.py), read channels from
runtime/network, and reach keyed state through runtime/state's API only.
"""
