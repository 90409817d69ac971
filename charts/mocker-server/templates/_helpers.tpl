{{/* Chart name, truncated to the 63 characters a label value may have. */}}
{{- define "mocker-server.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: the release name, prefixed with the chart name
unless the release name already contains it.
*/}}
{{- define "mocker-server.fullname" -}}
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

{{- define "mocker-server.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "mocker-server.labels" -}}
helm.sh/chart: {{ include "mocker-server.chart" . }}
{{ include "mocker-server.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: worker
{{- end }}

{{/* The Deployment's selector: immutable, so only name and instance. */}}
{{- define "mocker-server.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mocker-server.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mocker-server.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
One serve flag as "--name=value", or nothing when the value is null or "".
Whole numbers print as integers (values files decode numbers as floats,
which would print as 1e+06), lists join with commas.
Argument: (list "flag-name" value).
*/}}
{{- define "mocker-server.flag" -}}
{{- $name := index . 0 }}
{{- $value := index . 1 }}
{{- if not (or (kindIs "invalid" $value) (and (kindIs "string" $value) (eq $value ""))) }}
{{- if and (kindIs "float64" $value) (eq $value (floor $value)) }}
{{- printf "--%s=%d" $name (int64 $value) }}
{{- else if kindIs "slice" $value }}
{{- if $value }}{{ printf "--%s=%s" $name (join "," $value) }}{{ end }}
{{- else }}
{{- printf "--%s=%v" $name $value }}
{{- end }}
{{- end }}
{{- end }}

{{/* Number of data-parallel ranks of one pod. */}}
{{- define "mocker-server.dpSize" -}}
{{- $dp := .Values.server.dataParallelSize | default 1 | int }}
{{- $dp }}
{{- end }}

{{/*
The ZMQ ports of one pod as a YAML list of {name, port}: per data-parallel
rank r, KV events on port + r, replay on replayPort + r, FPM on port + r.
Rank 0 has the plain names (kv-events, kv-replay, fpm); rank r > 0 appends
"-r". Fails on ports that collide with each other or with the HTTP port.
*/}}
{{- define "mocker-server.zmqPorts" -}}
{{- $dp := include "mocker-server.dpSize" . | int }}
{{- $ports := list }}
{{- range $rank := until $dp }}
{{- $suffix := ternary "" (printf "-%d" $rank) (eq $rank 0) }}
{{- if $.Values.kvEvents.enabled }}
{{- $ports = append $ports (dict "name" (printf "kv-events%s" $suffix) "port" (add (int $.Values.kvEvents.port) $rank)) }}
{{- if not (kindIs "invalid" $.Values.kvEvents.replayPort) }}
{{- $ports = append $ports (dict "name" (printf "kv-replay%s" $suffix) "port" (add (int $.Values.kvEvents.replayPort) $rank)) }}
{{- end }}
{{- end }}
{{- if $.Values.fpm.enabled }}
{{- $ports = append $ports (dict "name" (printf "fpm%s" $suffix) "port" (add (int $.Values.fpm.port) $rank)) }}
{{- end }}
{{- end }}
{{- $seen := dict (toString (int .Values.server.port)) "http" }}
{{- range $ports }}
{{- $key := toString .port }}
{{- if hasKey $seen $key }}
{{- fail (printf "port %s of %s collides with %s: with dataParallelSize %d, rank r uses port + r; move kvEvents.port, kvEvents.replayPort or fpm.port apart" $key .name (get $seen $key) $dp) }}
{{- end }}
{{- if gt (int .port) 65535 }}
{{- fail (printf "port %s of %s exceeds 65535" $key .name) }}
{{- end }}
{{- $_ := set $seen $key .name }}
{{- end }}
{{- toYaml $ports }}
{{- end }}

{{/* The --kv-events-config JSON of the kvEvents values. */}}
{{- define "mocker-server.kvEventsConfig" -}}
{{- $cfg := dict "enable_kv_cache_events" true "endpoint" (printf "tcp://*:%d" (int .Values.kvEvents.port)) }}
{{- if not (kindIs "invalid" .Values.kvEvents.replayPort) }}
{{- $_ := set $cfg "replay_endpoint" (printf "tcp://*:%d" (int .Values.kvEvents.replayPort)) }}
{{- end }}
{{- with .Values.kvEvents.topic }}
{{- $_ := set $cfg "topic" . }}
{{- end }}
{{- toJson $cfg }}
{{- end }}

{{/* The container args: "serve", the structured flags, then extraArgs. */}}
{{- define "mocker-server.args" -}}
{{- $s := .Values.server }}
{{- $t := $s.timing }}
{{- $flags := list
  (list "model" $s.model)
  (list "served-model-name" $s.servedModelName)
  (list "host" $s.host)
  (list "port" $s.port)
  (list "engine-type" $s.engineType)
  (list "block-size" $s.blockSize)
  (list "num-gpu-blocks-override" $s.numGpuBlocks)
  (list "max-model-len" $s.maxModelLen)
  (list "max-num-seqs" $s.maxNumSeqs)
  (list "max-num-batched-tokens" $s.maxNumBatchedTokens)
  (list "enable-prefix-caching" $s.enablePrefixCaching)
  (list "prefix-caching-hash-algo" $s.prefixCachingHashAlgo)
  (list "data-parallel-size" $s.dataParallelSize)
  (list "seed" $s.seed)
  (list "startup-time" $s.startupTime)
  (list "metrics-family" $s.metricsFamily)
  (list "log-level" $s.logLevel)
  (list "timing-model" $t.model)
  (list "speedup-ratio" $t.speedupRatio)
  (list "decode-speedup-ratio" $t.decodeSpeedupRatio)
  (list "fixed-prefill-ms" $t.fixedPrefillMs)
  (list "fixed-decode-ms" $t.fixedDecodeMs)
  (list "planner-profile-data" $t.plannerProfileData)
}}
{{- $args := list "serve" }}
{{- range $flags }}
{{- $flag := include "mocker-server.flag" . }}
{{- if $flag }}{{ $args = append $args $flag }}{{ end }}
{{- end }}
{{- if .Values.kvEvents.enabled }}
{{- $args = append $args (printf "--kv-events-config=%s" (include "mocker-server.kvEventsConfig" .)) }}
{{- $flag := include "mocker-server.flag" (list "kv-events-encoding" .Values.kvEvents.encoding) }}
{{- if $flag }}{{ $args = append $args $flag }}{{ end }}
{{- end }}
{{- if .Values.fpm.enabled }}
{{- $args = append $args (printf "--fpm-endpoint=tcp://*:%d" (int .Values.fpm.port)) }}
{{- end }}
{{- toYaml (concat $args .Values.extraArgs) }}
{{- end }}

{{/*
The startup probe's failure budget: enough periods to cover --startup-time,
plus the configured margin.
*/}}
{{- define "mocker-server.startupFailureThreshold" -}}
{{- $period := .Values.probes.startup.periodSeconds | int }}
{{- $startup := .Values.server.startupTime | default 0 | float64 }}
{{- add (ceil (divf $startup $period) | int) (.Values.probes.startup.failureThreshold | int) }}
{{- end }}
