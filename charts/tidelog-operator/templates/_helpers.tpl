{{/* The release's name, cut to the 63 characters of a label value. */}}
{{- define "tidelog-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object of the chart. */}}
{{- define "tidelog-operator.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* What selects the operator's pod. */}}
{{- define "tidelog-operator.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The selector's labels as key=value,key=value: the operator admits its own pods by
them in the Clusters' NetworkPolicies. */}}
{{- define "tidelog-operator.selectorTerms" -}}
{{- $terms := list -}}
{{- range $key, $value := include "tidelog-operator.selector" . | fromYaml -}}
{{- $terms = append $terms (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $terms -}}
{{- end -}}

{{- define "tidelog-operator.serviceAccountName" -}}
{{- default (include "tidelog-operator.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "tidelog-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "tidelog-operator.brokerImage" -}}
{{- default (printf "tidelog-broker:%s" .Chart.AppVersion) .Values.brokerImage -}}
{{- end -}}

{{/* The Spark image of ConsumerGroups whose spec.spark.image is empty. */}}
{{- define "tidelog-operator.sparkImage" -}}
{{- default (printf "tidelog-spark:%s" .Chart.AppVersion) .Values.sparkImage -}}
{{- end -}}

{{/* The rules the operator needs in each namespace it watches. */}}
{{- define "tidelog-operator.namespacedRules" -}}
- apiGroups: [tidelog.dev]
  resources: [clusters, topics, consumergroups, users]
  verbs: [get, list, watch, patch, update]
- apiGroups: [tidelog.dev]
  resources: [clusters/status, topics/status, consumergroups/status, users/status]
  verbs: [get, patch, update]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [""]
  resources: [configmaps, services, serviceaccounts]
  verbs: [get, create, patch]
# the Clusters' CAs, certificates and the operator's own credentials
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, create, patch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, create, patch, delete]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, create, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [get, create, patch]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, create, patch, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, create, patch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, create, patch]
{{- end -}}
