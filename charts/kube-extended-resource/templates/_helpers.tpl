{{/*
Helpers shared by the templates. No helper adds labels or annotations that deploy/ lacks: the
default render must equal deploy/*.yaml (test/helm/check-chart.sh).
*/}}

{{/* The project image, one place for repository and tag, or digest (which wins: a tag can
be moved to other bytes, a digest cannot). */}}
{{- define "ker.image" -}}
{{- include "ker.imageRef" (dict "image" .Values.image "defaultTag" .Chart.AppVersion) -}}
{{- end -}}

{{/* "repository@digest" when a digest is given, else "repository:tag". */}}
{{- define "ker.imageRef" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .defaultTag) -}}
{{- end -}}
{{- end -}}

{{/*
The helpers below render nothing when there is nothing to say, and their callers indent them
only then (`with include ...`), so the default render has no blank lines where they stand.
*/}}

{{/* imagePullPolicy line of a project-image container, or nothing. */}}
{{- define "ker.pullPolicy" -}}
{{- with .Values.image.pullPolicy -}}
imagePullPolicy: {{ . }}
{{- end -}}
{{- end -}}

{{/* The namespace of every namespaced object. */}}
{{- define "ker.namespace" -}}
{{- required "namespace must be set" .Values.namespace -}}
{{- end -}}

{{/* The component's --admission-policy flag when the chart leaves the policy out. */}}
{{- define "ker.admissionPolicyArg" -}}
{{- if not .Values.admissionPolicy.enabled -}}
- --admission-policy=
{{- end -}}
{{- end -}}

{{/* Pod-level scheduling fields of a component's values: (list $ .Values.controller). */}}
{{- define "ker.podPlacement" -}}
{{- $c := index . 1 -}}
{{- $p := dict -}}
{{- with (index . 0).Values.imagePullSecrets }}{{ $_ := set $p "imagePullSecrets" . }}{{ end -}}
{{- with $c.nodeSelector }}{{ $_ := set $p "nodeSelector" . }}{{ end -}}
{{- with $c.affinity }}{{ $_ := set $p "affinity" . }}{{ end -}}
{{- with $c.tolerations }}{{ $_ := set $p "tolerations" . }}{{ end -}}
{{- if $p }}{{ toYaml $p }}{{ end -}}
{{- end -}}

{{/* The extender's address as kube-scheduler's urlPrefix names it. */}}
{{- define "ker.extenderURL" -}}
{{- $e := .Values.scheduler.extender -}}
{{- if $e.tls.enabled -}}
{{- printf "https://extended-resource-extender.%s.svc:%v" (include "ker.namespace" .) $e.port -}}
{{- else -}}
{{- printf "http://127.0.0.1:%v" $e.port -}}
{{- end -}}
{{- end -}}

{{/* The extender container: kube-scheduler's sidecar on loopback, or alone with mutual TLS. */}}
{{- define "ker.extenderContainer" -}}
{{- $e := .Values.scheduler.extender -}}
- name: extender
  image: {{ include "ker.image" . }}
  {{- with include "ker.pullPolicy" . }}{{ . | nindent 2 }}{{ end }}
  command:
    - /usr/local/bin/extended-resource-scheduler
    {{- if $e.tls.enabled }}
    # Off loopback the extender refuses to start without all four TLS flags.
    - --bind-address=0.0.0.0
    {{- else }}
    - --bind-address=127.0.0.1
    {{- end }}
    - --port={{ $e.port }}
    - --health-port={{ $e.healthPort }}
    {{- if $e.tls.enabled }}
    - --tls-cert-file=/etc/extender-tls/tls.crt
    - --tls-private-key-file=/etc/extender-tls/tls.key
    - --client-ca-file=/etc/extender-tls/ca.crt
    - --tls-allowed-client-names={{ required "scheduler.extender.tls.allowedClientNames must name kube-scheduler's client certificate" (join "," $e.tls.allowedClientNames) }}
    {{- end }}
    - --scoring={{ $e.scoring }}
    {{- with $e.topologyProperty }}
    - --topology-property={{ . }}
    {{- end }}
    # nodeCacheCapable: true sends a Pod and node names: a few MiB at most. Raise this
    # (and the memory limit) only for nodeCacheCapable: false, which sends whole Nodes.
    - --max-body-bytes={{ int64 $e.maxBodyBytes }}
    {{- with include "ker.admissionPolicyArg" . }}{{ . | nindent 4 }}{{ end }}
    {{- with $e.extraArgs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- if $e.tls.enabled }}
    - name: verbs
      containerPort: {{ $e.port }}
    {{- end }}
    - name: health
      containerPort: {{ $e.healthPort }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: health
  readinessProbe:
    httpGet:
      path: /readyz
      port: health
  {{- with $e.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
{{- end -}}
