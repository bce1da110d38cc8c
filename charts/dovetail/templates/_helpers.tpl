{{/* The chart name, or nameOverride. */}}
{{- define "dovetail.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: fullnameOverride, else the release name when it already
contains the chart name, else <release>-<chart>; at most 63 characters.
*/}}
{{- define "dovetail.fullname" -}}
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

{{/* chart label value: <name>-<version>. */}}
{{- define "dovetail.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the controller's pods. */}}
{{- define "dovetail.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dovetail.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "dovetail.labels" -}}
helm.sh/chart: {{ include "dovetail.chart" . }}
{{ include "dovetail.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The annotations block of every object, empty when there are none. */}}
{{- define "dovetail.annotations" -}}
{{- with .Values.additionalAnnotations -}}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "dovetail.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dovetail.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller image: repository:tag[@digest]. */}}
{{- define "dovetail.image" -}}
{{- $image := .Values.controller.image }}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- with $image.digest }}@{{ . }}{{ end }}
{{- end }}

{{/* The lease the replicas elect a leader on; the Role names it. */}}
{{- define "dovetail.leaseName" -}}
dovetail-leader-election
{{- end }}

{{/*
The rules controller-gen generated from the +kubebuilder:rbac markers into
files/rbac/<file>, for the object of the given kind (ClusterRole or Role).
Called with (list $ "core.yaml" "ClusterRole").
*/}}
{{- define "dovetail.generatedRules" -}}
{{- $root := index . 0 }}
{{- $kind := index . 2 }}
{{- $rules := list }}
{{- range splitList "\n---\n" ($root.Files.Get (printf "files/rbac/%s" (index . 1))) }}
{{- $obj := fromYaml . }}
{{- if eq (get $obj "kind") $kind }}
{{- $rules = concat $rules $obj.rules }}
{{- end }}
{{- end }}
{{- if not $rules }}
{{- fail (printf "files/rbac/%s holds no %s rules: run make generate" (index . 1) $kind) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/* Fails rendering when a required setting is missing. */}}
{{- define "dovetail.validate" -}}
{{- if and (eq .Values.cloudProvider "aws") (not .Values.settings.clusterName) }}
{{- fail "settings.clusterName is required with cloudProvider aws: set it to the EKS cluster's name (--set settings.clusterName=<name>)" }}
{{- end }}
{{- end }}

{{/*
The affinity with the pods' selector labels put into every pod (anti-)affinity
term that has no labelSelector. Called with (list $ .Values.affinity).
*/}}
{{- define "dovetail.withSelector" -}}
{{- $root := index . 0 }}
{{- $affinity := deepCopy (index . 1) }}
{{- $selector := dict "matchLabels" (include "dovetail.selectorLabels" $root | fromYaml) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with get $affinity $kind }}
{{- range (get . "requiredDuringSchedulingIgnoredDuringExecution" | default list) }}
{{- if not .labelSelector }}{{ $_ := set . "labelSelector" $selector }}{{ end }}
{{- end }}
{{- range (get . "preferredDuringSchedulingIgnoredDuringExecution" | default list) }}
{{- if and .podAffinityTerm (not .podAffinityTerm.labelSelector) }}{{ $_ := set .podAffinityTerm "labelSelector" $selector }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}
