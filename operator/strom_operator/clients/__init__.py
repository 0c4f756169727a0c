"""The operator's I/O: the Kubernetes API, the JobManager REST API, S3, Secrets, Events.

  kube_api.py             the few Kubernetes API calls the operator makes (aiohttp, kopf's credentials)
  api_credentials.py      how that client authenticates, kept fresh
  secret_cache.py         Secrets the operator reads, cached for a while
  event_recorder.py       the FlinkJobs' Events, aggregated as the kubelet's are
  jobmanager_client.py    the only way to the engine: a client of the JobManager's REST API (Flink's paths)
  jobmanager_endpoints.py where that REST API is (the Service, or a URL map for tests)
  jobmanager_tls.py       https to a job's JobManager with the job's CA and certificate
  savepoint_disposal.py   deleting pruned savepoints' files (s3:// with boto3, or file://)
  action_failures.py      a failed call as the user sees it: a Ready=False condition and a retry delay

Everything that talks to a server is here or in reconcile/; the layers below (lifecycle/, autoscaler/,
observe/, resources/, crd/) import none of kopf, kubernetes, aiohttp or boto3 (lint-imports checks it).
"""
