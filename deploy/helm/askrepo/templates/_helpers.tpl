{{- define "askrepo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "askrepo.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "askrepo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "askrepo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "askrepo.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "askrepo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "askrepo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "askrepo.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
askrepo.validate stops a render that would deploy something broken, with
what to change.
*/}}
{{- define "askrepo.validate" -}}
{{- if not .Values.existingSecret }}
{{- fail "existingSecret is required: create a Secret with SLACK_BOT_TOKEN, SLACK_APP_TOKEN and OPENAI_API_KEY (kubectl create secret generic askrepo --from-literal=…) and set existingSecret to its name; tokens never go in values" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.store.postgres.existingSecret) }}
{{- fail (printf "replicaCount is %d, but more than one replica needs a shared PostgreSQL store: set store.postgres.existingSecret to a Secret whose key %q holds the BOT_STORE URL (postgres://…), or set replicaCount to 1 to use SQLite" (int .Values.replicaCount) .Values.store.postgres.key) }}
{{- end }}
{{- if lt (int .Values.replicaCount) 1 }}
{{- fail "replicaCount must be at least 1" }}
{{- end }}
{{- end }}

{{/* askrepo.persistent: the data directory is a PVC (one replica only). */}}
{{- define "askrepo.persistent" -}}
{{- if and .Values.persistence.enabled (eq (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}
