"""The runtime: tasks, operators, channels, state and the executors that run a JobGraph."""
