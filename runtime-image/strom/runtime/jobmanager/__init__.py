"""The JobManager: dispatcher, resource manager, job masters, REST and RPC endpoints."""
