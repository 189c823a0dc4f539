{{/* Chart name, possibly overridden. */}}
{{- define "central-ledger.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Resource name prefix: <release>-central-ledger unless the release name contains it. */}}
{{- define "central-ledger.fullname" -}}
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

{{/*
The TigerBeetle StatefulSet's name. At most 52 characters (the controller-revision-hash label
adds 11), so per-replica Service names (<this>-<i>) stay valid DNS labels too.
*/}}
{{- define "central-ledger.tigerbeetle.name" -}}
{{- printf "%s-tigerbeetle" (include "central-ledger.fullname" . | trunc 40 | trimSuffix "-") }}
{{- end }}

{{- define "central-ledger.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "central-ledger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels; the component tells the service pods from the TigerBeetle pods. */}}
{{- define "central-ledger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "central-ledger.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The service image. */}}
{{- define "central-ledger.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The MySQL password Secret's name and key. */}}
{{- define "central-ledger.mysqlSecretName" -}}
{{- default (printf "%s-mysql" (include "central-ledger.fullname" .)) .Values.mysql.existingSecret }}
{{- end }}
{{- define "central-ledger.mysqlSecretKey" -}}
{{- if .Values.mysql.existingSecret }}{{ .Values.mysql.existingSecretKey }}{{ else }}mysql-password{{ end }}
{{- end }}

{{/*
Every replica's address in replica order, as host:port with the stable DNS name of the replica's
own ClusterIP Service: addresses[i] is replica i. The same list goes to every replica and to the
service; both resolve the names to the Services' (fixed) IPs at start, because TigerBeetle 0.17.9
accepts only IP addresses.
*/}}
{{- define "central-ledger.tigerbeetle.replicaAddresses" -}}
{{- $name := include "central-ledger.tigerbeetle.name" . }}
{{- $entries := list }}
{{- range $i := until (int .Values.tigerbeetle.replicas) }}
{{- $entries = append $entries (printf "%s-%d.%s.svc.%s:%d" $name $i $.Release.Namespace $.Values.clusterDomain (int $.Values.tigerbeetle.port)) }}
{{- end }}
{{- join "," $entries }}
{{- end }}

{{/* "true" or "false": may a replica without a data file be formatted? (values: tigerbeetle.allowFormat) */}}
{{- define "central-ledger.tigerbeetle.allowFormat" -}}
{{- $mode := toString .Values.tigerbeetle.allowFormat }}
{{- if eq $mode "true" }}true
{{- else if eq $mode "false" }}false
{{- else if eq $mode "auto" }}
{{- $existing := false }}
{{- $name := include "central-ledger.tigerbeetle.name" . }}
{{- range $i := until (int .Values.tigerbeetle.replicas) }}
{{- if lookup "v1" "PersistentVolumeClaim" $.Release.Namespace (printf "data-%s-%d" $name $i) }}
{{- $existing = true }}
{{- end }}
{{- end }}
{{- and .Release.IsInstall (not $existing) | toString }}
{{- else }}
{{- fail (printf "tigerbeetle.allowFormat must be auto, true or false, not %q" $mode) }}
{{- end }}
{{- end }}

{{/* Memory request = limit of a replica: overhead + grid cache. */}}
{{- define "central-ledger.tigerbeetle.memory" -}}
{{- printf "%dMi" (add (int .Values.tigerbeetle.memoryOverheadMiB) (int .Values.tigerbeetle.cacheGridMiB)) }}
{{- end }}

{{/* Values checks that must stop the render with a clear message. */}}
{{- define "central-ledger.validate" -}}
{{- $clusterId := toString .Values.tigerbeetle.clusterId }}
{{- if not (regexMatch "^[0-9]{1,39}$" $clusterId) }}
{{- fail "tigerbeetle.clusterId must be set to a decimal 128-bit number, fixed for the life of the data, e.g. --set-string tigerbeetle.clusterId=$(python3 -c 'import secrets; print(secrets.randbits(128))')" }}
{{- end }}
{{- if ge (len $clusterId) 39 }}
{{- if gt $clusterId "340282366920938463463374607431768211455" }}
{{- fail "tigerbeetle.clusterId does not fit in 128 bits" }}
{{- end }}
{{- end }}
{{- $replicas := int .Values.tigerbeetle.replicas }}
{{- if or (lt $replicas 1) (gt $replicas 6) }}
{{- fail "tigerbeetle.replicas must be 1 to 6" }}
{{- end }}
{{- if lt (int .Values.tigerbeetle.cacheGridMiB) 64 }}
{{- fail "tigerbeetle.cacheGridMiB must be at least 64" }}
{{- end }}
{{- if .Values.serviceEnabled }}
{{- if and (not .Values.mysql.existingSecret) (not .Values.mysql.password) }}
{{- fail "set mysql.existingSecret (a Secret with the MySQL password) or mysql.password" }}
{{- end }}
{{- $reserved := list "HOST" "PORT" "LEDGER_BACKEND" "TB_CLUSTER_ID" "TB_ADDRESSES" "MYSQL_ENABLED" "MYSQL_HOST" "MYSQL_PORT" "MYSQL_USER" "MYSQL_PASSWORD" "MYSQL_DATABASE" "KAFKA_ENABLED" "KAFKA_BROKERS" "CONFIG_FILE" }}
{{- range $key, $_ := .Values.config }}
{{- if has $key $reserved }}
{{- fail (printf "config.%s is set by the chart; use the mysql/kafka/tigerbeetle/port values instead" $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Environment of both TigerBeetle containers (files/tigerbeetle-replica.sh reads it). */}}
{{- define "central-ledger.tigerbeetle.env" -}}
- name: POD_NAME
  valueFrom:
    fieldRef: { fieldPath: metadata.name }
- name: TB_CLUSTER_ID
  value: {{ .Values.tigerbeetle.clusterId | toString | quote }}
- name: TB_REPLICA_COUNT
  value: {{ .Values.tigerbeetle.replicas | quote }}
- name: TB_REPLICA_ADDRESSES
  value: {{ include "central-ledger.tigerbeetle.replicaAddresses" . | quote }}
- name: TB_BIND_HOST
  value: {{ .Values.tigerbeetle.bindHost | quote }}
- name: TB_CACHE_GRID
  value: "{{ .Values.tigerbeetle.cacheGridMiB }}MiB"
- name: TB_PROBE_TIMEOUT_S
  value: {{ .Values.tigerbeetle.probeTimeoutSeconds | quote }}
{{- end }}

{{/* Resources of both TigerBeetle containers: memory request = limit (it never grows). */}}
{{- define "central-ledger.tigerbeetle.resources" -}}
{{- $memory := include "central-ledger.tigerbeetle.memory" . -}}
requests:
  cpu: {{ .Values.tigerbeetle.cpu.request | quote }}
  memory: {{ $memory }}
limits:
  memory: {{ $memory }}
  {{- with .Values.tigerbeetle.cpu.limit }}
  cpu: {{ . | quote }}
  {{- end }}
{{- end }}
