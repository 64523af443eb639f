{{/* The labels deploy/ gives every object, Helm's, and customLabels. */}}
{{- define "plait.labels" -}}
app.kubernetes.io/name: plait
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.customLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* What the controller's pods are selected by, as deploy/ selects them. */}}
{{- define "plait.selectorLabels" -}}
app.kubernetes.io/name: plait
{{- end }}

{{/* metadata.labels and, when customAnnotations are set, metadata.annotations. */}}
{{- define "plait.metadata" -}}
labels:
  {{- include "plait.labels" . | nindent 2 }}
{{- with .Values.customAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "plait.serviceAccountName" -}}
{{- required "serviceAccount.name is required" .Values.serviceAccount.name }}
{{- end }}

{{- define "plait.image" -}}
{{- $repository := required "image.repository is required: the controller image, built and pushed with `make image REGISTRY=… TAG=…` (REGISTRY/plait)" .Values.image.repository }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/* The webhook's Service (and certificate) name, as in deploy/webhook. */}}
{{- define "plait.webhookName" -}}plait-webhook{{- end }}

{{/* The Secret holding the webhook's serving certificate, mounted into the
pod; empty when plait makes the certificate itself (and reads its Secrets). */}}
{{- define "plait.webhookSecret" -}}
{{- if .Values.webhook.certManager.enabled -}}
plait-webhook-tls
{{- else if .Values.webhook.certificate.secretName -}}
{{- .Values.webhook.certificate.secretName }}
{{- end }}
{{- end }}

{{/* `plait controller`'s arguments. */}}
{{- define "plait.args" -}}
- controller
{{- if .Values.shards }}
- --shards={{ int .Values.shards }}
{{- else if .Values.leaderElection.enabled }}
- --leader-election
{{- end }}
{{- if and (or .Values.shards .Values.leaderElection.enabled) .Values.leaderElection.namespace }}
- --leader-election-namespace={{ .Values.leaderElection.namespace }}
{{- end }}
- --probe-address=0.0.0.0:{{ int .Values.metrics.port }}
{{- with .Values.reconcile.pollInterval }}
- --poll-interval={{ . }}
{{- end }}
{{- if not (kindIs "invalid" .Values.reconcile.maxConcurrentReconciles) }}
- --max-concurrent-reconciles={{ int .Values.reconcile.maxConcurrentReconciles }}
{{- end }}
{{- if not (kindIs "invalid" .Values.reconcile.circuitBreaker.burst) }}
- --circuit-breaker-burst={{ int .Values.reconcile.circuitBreaker.burst }}
{{- end }}
{{- with .Values.reconcile.circuitBreaker.refillRate }}
- --circuit-breaker-refill-rate={{ . }}
{{- end }}
{{- with .Values.reconcile.circuitBreaker.cooldown }}
- --circuit-breaker-cooldown={{ . }}
{{- end }}
{{- with .Values.functions.deadline }}
- --function-deadline={{ . }}
{{- end }}
{{- with .Values.functions.memory }}
- --function-memory={{ . }}
{{- end }}
{{- if not (kindIs "invalid" .Values.functions.concurrentCalls) }}
- --concurrent-function-calls={{ int .Values.functions.concurrentCalls }}
{{- end }}
{{- with .Values.functions.guestMemoryBudget }}
- --guest-memory-budget={{ . }}
{{- end }}
{{- if not .Values.functions.responseCache.enabled }}
- --no-function-cache
{{- end }}
{{- with .Values.functions.responseCache.ttlMax }}
- --function-cache-ttl-max={{ . }}
{{- end }}
{{- with .Values.functions.responseCache.size }}
- --function-cache-size={{ . }}
{{- end }}
{{- range .Values.registry.insecure }}
- --insecure-registry={{ . }}
{{- end }}
{{- with .Values.registry.timeout }}
- --registry-timeout={{ . }}
{{- end }}
{{- if .Values.registry.caBundleConfigMap }}
- --ca-file=/registry-ca/ca.crt
{{- end }}
{{- if .Values.registry.dockerConfigSecret }}
- --docker-config=/docker/config.json
{{- end }}
{{- if .Values.tenancy.impersonation.enabled }}
- --tenant-service-account={{ required "tenancy.impersonation.serviceAccount is required" .Values.tenancy.impersonation.serviceAccount }}
{{- end }}
{{- if not (kindIs "invalid" .Values.tenancy.maxReconciles) }}
- --tenant-max-reconciles={{ int .Values.tenancy.maxReconciles }}
{{- end }}
{{- if not (kindIs "invalid" .Values.tenancy.maxCalls) }}
- --tenant-max-calls={{ int .Values.tenancy.maxCalls }}
{{- end }}
{{- if .Values.webhook.enabled }}
- --webhook-address=0.0.0.0:{{ int .Values.webhook.port }}
{{- if include "plait.webhookSecret" . }}
- --webhook-cert-file=/tls/tls.crt
- --webhook-key-file=/tls/tls.key
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
