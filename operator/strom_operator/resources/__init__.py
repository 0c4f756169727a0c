"""The Kubernetes objects of a FlinkJob, built as plain dicts by pure functions (no I/O).

  builders.py                 every object of a deployed job, in the order they are applied (start here)
  jobmanager_deployment.py    the JobManager Deployment and Service (application mode)
  taskmanager_deployment.py   the TaskManager Deployment: enough pods for the job's slots
  pods.py                     the pod template both share: config volume, S3 env, resources, user templates
  podtemplates.py             merging the user's pod templates the way `kubectl patch` merges
  pod_security.py             the securityContext of every pod and the writable directories it then needs
  configmap.py                the engine's config.yaml (Flink keys) and the autoscaler's parallelism overrides
  network_policy.py           who may connect to the JobManager and TaskManagers
  cluster_secret.py           the Secret with the cluster secret, and how containers read it
  tls_secret.py               the Secret with TLS material (or cert-manager's Certificate), its Flink keys, mounts
  tls_certificates.py         generating a job's own CA and leaf certificate
  labels.py                   names, labels and owner references shared by all of the above

Creating the two Secrets (they are created once, never applied) is reconcile/owned_secrets.py.
"""
