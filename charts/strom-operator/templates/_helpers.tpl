{{/* Names and labels shared by the chart's templates. */}}
{{- define "strom-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "strom-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "strom-operator.labels" -}}
{{ include "strom-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "strom-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "strom-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The namespaces that get a Role when RBAC is namespaced. */}}
{{- define "strom-operator.roleNamespaces" -}}
{{- if .Values.watchNamespaces -}}
{{- join "," .Values.watchNamespaces -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The rules of the operator's Role or ClusterRole: exactly what it calls, nothing more
  (tests/operator/test_rbac.py holds the same table with the code path of each grant). Reading
  Secrets is not here: see "strom-operator.secretRule". */}}
{{- define "strom-operator.rules" -}}
# kopf watches FlinkJobs and patches their finalizer and its annotations; the reconciler reads one.
- apiGroups: ["strom.io"]
  resources: ["flinkjobs"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["strom.io"]
  resources: ["flinkjobs/status"]
  verbs: ["patch"]
# Owned objects carry ownerReferences with blockOwnerDeletion, which OwnerReferencesPermissionEnforcement
# (on by default in OpenShift) allows only to who may update the owner's finalizers.
- apiGroups: ["strom.io"]
  resources: ["flinkjobs/finalizers"]
  verbs: ["update"]
# apply (create, or server-side apply, which also needs create when the object is new), delete; kopf
# watches them (list, watch) for observation, and a pass reads one (get) until the watch shows its own change.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["create", "patch"]
# Batch FlinkJobs: the operator creates Spark driver pods, deletes executor pods, and creates each
# job's driver ServiceAccount with a Role over pods, configmaps and volume claims, which Kubernetes
# only lets it grant if it holds those permissions itself (RBAC escalation prevention).
- apiGroups: [""]
  resources: ["pods", "configmaps", "persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "patch", "delete", "deletecollection"]
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["create", "patch"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["create", "patch"]
# Events: created, and a repeat patches the first one's count and lastTimestamp.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
# Each FlinkJob's cluster secret (cluster_secret.py) and generated TLS Secret <name>-tls (tls_secret.py):
# created once, never changed or listed; creating a Secret reveals no other. (With spec.security.tls the
# operator also reads <name>-tls for its REST client certificate: the "get" of "strom-operator.secretRule".)
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
# Each FlinkJob's NetworkPolicy (network_policy.py): server-side apply.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["create", "patch"]
# spec.ingress (resources/ingress.py): server-side apply; deleted when spec.ingress is removed.
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["create", "patch", "delete"]
{{- if (.Values.certManager | default dict).enabled }}
# spec.security.tls.issuerRef: the cert-manager Certificate whose Secret is <name>-tls (tls_secret.py).
- apiGroups: ["cert-manager.io"]
  resources: ["certificates"]
  verbs: ["create", "patch"]
{{- end }}
{{- end -}}

{{/* Reading the Secrets FlinkJobs name in spec.s3.credentialsSecret (get only), limited to
  rbac.secrets.names when given. */}}
{{- define "strom-operator.secretRule" -}}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
  {{- with .Values.rbac.secrets.names }}
  resourceNames:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
