{{/* Names, labels and the pieces every service's Deployment shares. */}}

{{- define "tracelab.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tracelab.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tracelab.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tracelab.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tracelab
{{- end -}}

{{/* Selector labels of one service: (dict "root" $ "service" "verifier"). */}}
{{- define "tracelab.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tracelab.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .service }}
{{- end -}}

{{- define "tracelab.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tracelab.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "tracelab.secretName" -}}
{{- printf "%s-secrets" (include "tracelab.fullname" .) -}}
{{- end -}}

{{- define "tracelab.image" -}}
{{- printf "%s/tracelab-%s:%s" (trimSuffix "/" .root.Values.image.repository) .service (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}

{{/*
One TOML value. Helm reads numbers in values as float64, and the services
want integers where their settings are integers, so a whole float is
written without a fraction. Strings are JSON-quoted (valid TOML basic
strings); maps become inline tables.
*/}}
{{- define "tracelab.tomlValue" -}}
{{- $v := . -}}
{{- $k := kindOf $v -}}
{{- if eq $k "string" -}}
{{- toJson $v -}}
{{- else if eq $k "bool" -}}
{{- $v -}}
{{- else if or (eq $k "float64") (eq $k "float32") -}}
{{- if eq (floor $v) (float64 $v) -}}{{- int64 $v -}}{{- else -}}{{- $v -}}{{- end -}}
{{- else if hasPrefix "int" $k -}}
{{- $v -}}
{{- else if eq $k "slice" -}}
[{{- range $i, $e := $v -}}{{- if $i }}, {{ end -}}{{- include "tracelab.tomlValue" $e -}}{{- end -}}]
{{- else if eq $k "map" -}}
{ {{- range $i, $key := keys $v | sortAlpha -}}{{- if $i }}, {{ end -}}{{ $key }} = {{ include "tracelab.tomlValue" (index $v $key) }}{{- end -}} }
{{- else -}}
{{- fail (printf "tracelab: cannot write a %s as a TOML setting" $k) -}}
{{- end -}}
{{- end -}}

{{/*
A service's TOML settings file: its `settings`, `listen`/`grpc_listen` from
its ports, and `[fleet]`. Top-level scalars first, then one table per map.
*/}}
{{- define "tracelab.settingsToml" -}}
{{- $svc := index .root.Values .service -}}
{{- $s := deepCopy (default (dict) $svc.settings) -}}
{{- $_ := set $s "listen" (printf "0.0.0.0:%v" $svc.ports.http) -}}
{{- if $svc.ports.grpc -}}
{{- $_ := set $s "grpc_listen" (printf "0.0.0.0:%v" $svc.ports.grpc) -}}
{{- end -}}
{{- $_ := set $s "fleet" (deepCopy .root.Values.fleet) -}}
{{- if has .service (list "investigator" "verifier") -}}
{{- $_ := set $s "sandbox" (include "tracelab.sandbox" . | fromJson) -}}
{{- end -}}
{{- if eq .service "investigator" -}}
{{- range $key, $value := include "tracelab.handOffSettings" .root | fromJson -}}
{{- $_ := set $s $key $value -}}
{{- end -}}
{{- end -}}
{{- range $key := keys $s | sortAlpha -}}
{{- $v := index $s $key -}}
{{- if ne (kindOf $v) "map" -}}
{{ $key }} = {{ include "tracelab.tomlValue" $v }}
{{ end -}}
{{- end -}}
{{- range $key := keys $s | sortAlpha -}}
{{- $v := index $s $key -}}
{{- if eq (kindOf $v) "map" }}
[{{ $key }}]
{{ range $inner := keys $v | sortAlpha -}}
{{ $inner | toJson }} = {{ include "tracelab.tomlValue" (index $v $inner) }}
{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The [sandbox] table of the investigator or a verifier, as JSON:
(dict "root" $ "service" "verifier"). sandbox.kind, else docker when
sandbox.dockerSocket is set, else hardened; then the service's own
settings.sandbox keys, except allow_local and docker_socket, which follow
sandbox.allowLocal and the socket's mount. The pod mounts what this chose.
*/}}
{{- define "tracelab.sandbox" -}}
{{- $v := .root.Values.sandbox -}}
{{- $kind := $v.kind | default (ternary "docker" "hardened" (ne (toString (default "" $v.dockerSocket)) "")) -}}
{{- $t := dict "kind" $kind "image" (default "" $v.image) "allow" (default (list) $v.allow) "runtime" (default "" $v.runtime) -}}
{{- $own := dig "settings" "sandbox" (dict) (index .root.Values .service) -}}
{{- range $key, $value := $own -}}
{{- $_ := set $t $key $value -}}
{{- end -}}
{{- /* Only sandbox.allowLocal permits local; the socket is where the pod mounts it. */ -}}
{{- $_ := set $t "allow_local" (and (eq (toString $t.kind) "local") (eq (toString $v.allowLocal) "true")) -}}
{{- if eq (toString $t.kind) "docker" -}}
{{- $_ := set $t "docker_socket" "/run/tracelab/docker.sock" -}}
{{- end -}}
{{- if not (has $t.kind (list "hardened" "docker" "local")) -}}
{{- fail (printf "sandbox.kind %q: use hardened, docker or local (or leave it empty)" (toString $t.kind)) -}}
{{- end -}}
{{- if and (eq $t.kind "local") (not $t.allow_local) -}}
{{- fail "sandbox.kind local runs tests as the pod's own user, with its network, files and environment: set sandbox.allowLocal=true to accept that, or use hardened" -}}
{{- end -}}
{{- if and (eq $t.kind "docker") (not $v.dockerSocket) -}}
{{- fail "sandbox.kind docker needs sandbox.dockerSocket, the node path of the Docker engine's socket to mount" -}}
{{- end -}}
{{- if and (eq $t.kind "docker") (not $v.hostWorkDir) -}}
{{- fail "sandbox.kind docker needs sandbox.hostWorkDir: the engine bind-mounts worktrees by their node path" -}}
{{- end -}}
{{- toJson $t -}}
{{- end -}}

{{/*
The secrets one service reads, as JSON {"files": [...]}: (dict "root" $
"service" "verifier"). Each names the setting's environment variable
(`env`, which the pod sets as `<env>_FILE`), the file under
/etc/tracelab/secrets and the Secret and key it comes from.
*/}}
{{- define "tracelab.secretFiles" -}}
{{- $root := .root -}}
{{- $files := list (dict "env" "TRACELAB__FLEET__POSTGRES_URL" "file" "postgres-url" "secret" (default (include "tracelab.secretName" $root) $root.Values.postgresql.existingSecret) "key" $root.Values.postgresql.existingSecretKey) -}}
{{- if and (eq .service "investigator") (or $root.Values.api.tokens $root.Values.api.existingSecret) -}}
{{- $files = append $files (dict "env" "TRACELAB__TOKENS" "file" "tokens" "secret" (default (include "tracelab.secretName" $root) $root.Values.api.existingSecret) "key" $root.Values.api.existingSecretKey) -}}
{{- end -}}
{{- /* Bearer tokens callers must send, in the settings syntax: [{name="ci", token="..."}]. */ -}}
{{- if and (has .service (list "ingest" "indexer")) (index $root.Values .service).tokens.existingSecret -}}
{{- $t := (index $root.Values .service).tokens -}}
{{- $files = append $files (dict "env" "TRACELAB__TOKENS" "file" "tokens" "secret" $t.existingSecret "key" $t.existingSecretKey) -}}
{{- end -}}
{{- /* The HMAC key behind redaction pseudonyms (the built-in one is public). */ -}}
{{- if and (eq .service "ingest") $root.Values.ingest.redactionKey.existingSecret -}}
{{- $r := $root.Values.ingest.redactionKey -}}
{{- $files = append $files (dict "env" "TRACELAB__REDACTION_KEY" "file" "redaction-key" "secret" $r.existingSecret "key" $r.existingSecretKey) -}}
{{- end -}}
{{- /* Each code host's API token for draft pull requests. */ -}}
{{- if eq .service "investigator" -}}
{{- range $name := keys $root.Values.pullRequests.hosts | sortAlpha -}}
{{- $h := index $root.Values.pullRequests.hosts $name -}}
{{- $files = append $files (dict "env" (printf "TRACELAB__PULL_REQUESTS__HOSTS__%s__TOKEN" (upper $name)) "file" (printf "pull-request-token-%s" $name) "secret" (default (include "tracelab.secretName" $root) (get $h "existingSecret")) "key" (include "tracelab.pullRequestTokenKey" (dict "name" $name "host" $h))) -}}
{{- end -}}
{{- end -}}
{{- /* The webhook signing secret and Jira's token and intake secret. */ -}}
{{- if eq .service "investigator" -}}
{{- if $root.Values.webhooks.urls -}}
{{- $files = append $files (dict "env" "TRACELAB__WEBHOOKS__SECRET" "file" "webhook-secret" "secret" (default (include "tracelab.secretName" $root) $root.Values.webhooks.existingSecret) "key" (include "tracelab.secretKey" (dict "what" "webhooks" "v" $root.Values.webhooks "value" "secret"))) -}}
{{- end -}}
{{- if $root.Values.jira.base_url -}}
{{- $files = append $files (dict "env" "TRACELAB__JIRA__TOKEN" "file" "jira-token" "secret" (default (include "tracelab.secretName" $root) $root.Values.jira.existingSecret) "key" (include "tracelab.secretKey" (dict "what" "jira" "v" $root.Values.jira "value" "token"))) -}}
{{- end -}}
{{- if $root.Values.jira.intake.enabled -}}
{{- $files = append $files (dict "env" "TRACELAB__JIRA__INTAKE__SECRET" "file" "jira-intake-secret" "secret" (default (include "tracelab.secretName" $root) $root.Values.jira.intake.existingSecret) "key" (include "tracelab.secretKey" (dict "what" "jira.intake" "v" $root.Values.jira.intake "value" "secret"))) -}}
{{- end -}}
{{- end -}}
{{- /* The LLM patch agent's model server key. */ -}}
{{- if and (eq .service "verifier") $root.Values.verifier.llmApiKey.existingSecret -}}
{{- $k := $root.Values.verifier.llmApiKey -}}
{{- $files = append $files (dict "env" "TRACELAB__REPAIR__LLM__API_KEY" "file" "llm-api-key" "secret" $k.existingSecret "key" $k.existingSecretKey) -}}
{{- end -}}
{{- toJson (dict "files" $files) -}}
{{- end -}}

{{/*
Whether the verifiers' repair uses a model server ("true" or "").
*/}}
{{- define "tracelab.verifierUsesModel" -}}
{{- $repair := default (dict) (get .Values.verifier.settings "repair") -}}
{{- if has (toString (get $repair "mode")) (list "llm" "all") -}}true{{- end -}}
{{- end -}}

{{/*
The Secret key of one code host's token: (dict "name" "github" "host" $h).
Checks the host's name and that a token is given.
*/}}
{{- define "tracelab.pullRequestTokenKey" -}}
{{- if not (regexMatch "^[a-z][a-z0-9_]*$" .name) -}}
{{- fail (printf "pullRequests.hosts: name %q: use lower-case letters, digits and _ (it becomes TRACELAB__PULL_REQUESTS__HOSTS__<NAME>__TOKEN_FILE)" .name) -}}
{{- end -}}
{{- if get .host "existingSecret" -}}
{{- required (printf "pullRequests.hosts.%s.existingSecretKey: the key of %s that holds the API token" .name (get .host "existingSecret")) (get .host "existingSecretKey") -}}
{{- else -}}
{{- $_ := required (printf "pullRequests.hosts.%s: token (or existingSecret with existingSecretKey) holds the code host's API token" .name) (get .host "token") -}}
{{- printf "pull-request-token-%s" .name -}}
{{- end -}}
{{- end -}}

{{/*
The Secret key of a secret the chart may hold: (dict "what" "webhooks" "v"
$values "value" "secret"): existingSecretKey of existingSecret, else the
chart Secret's key, which needs the value.
*/}}
{{- define "tracelab.secretKey" -}}
{{- if .v.existingSecret -}}
{{- required (printf "%s.existingSecretKey: the key of %s that holds it" .what .v.existingSecret) .v.existingSecretKey -}}
{{- else -}}
{{- $_ := required (printf "%s.%s (or %s.existingSecret with existingSecretKey) is required" .what .value .what) (get .v .value) -}}
{{- .v.existingSecretKey -}}
{{- end -}}
{{- end -}}

{{/*
The investigator's [pull_requests] and [review] settings as JSON: each
host's keys but its token and Secret reference (those come from a file).
*/}}
{{- define "tracelab.handOffSettings" -}}
{{- $hosts := dict -}}
{{- range $name, $h := .Values.pullRequests.hosts -}}
{{- $_ := set $hosts $name (omit $h "token" "token_file" "existingSecret" "existingSecretKey") -}}
{{- end -}}
{{- $out := dict "review" (dict "forbid_self_approval" (ne (toString .Values.review.forbidSelfApproval) "false")) -}}
{{- if $hosts -}}
{{- $_ := set $out "pull_requests" (dict "hosts" $hosts) -}}
{{- end -}}
{{- with .Values.webhooks -}}
{{- if .urls -}}
{{- $_ := set $out "webhooks" (merge (dict "urls" .urls) (omit (default (dict) .settings) "secret" "secret_file" "urls")) -}}
{{- end -}}
{{- end -}}
{{- with .Values.jira -}}
{{- if or .base_url .intake.enabled -}}
{{- $intake := merge (dict "enabled" (eq (toString .intake.enabled) "true") "label" .intake.label) (omit (default (dict) .intake.settings) "secret" "secret_file" "enabled" "label") -}}
{{- $_ := set $out "jira" (dict "base_url" .base_url "flavor" .flavor "user" .user "dashboard_url" .dashboard_url "intake" $intake) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The pod of one service: (dict "root" $ "service" "verifier").
*/}}
{{- define "tracelab.pod" -}}
{{- $root := .root -}}
{{- $svc := index $root.Values .service -}}
{{- $docker := false -}}
{{- if has .service (list "investigator" "verifier") -}}
{{- $docker = eq (include "tracelab.sandbox" . | fromJson).kind "docker" -}}
{{- end -}}
{{- $secretFiles := (include "tracelab.secretFiles" . | fromJson).files -}}
{{- $podSecurity := deepCopy $root.Values.podSecurityContext -}}
{{- $gid := get $root.Values.sandbox "dockerSocketGroup" -}}
{{- if and $docker (not (kindIs "invalid" $gid)) (ne (toString $gid) "") -}}
{{- $_ := set $podSecurity "supplementalGroups" (append (default (list) (get $podSecurity "supplementalGroups")) (int64 $gid)) -}}
{{- end -}}
metadata:
  labels:
    {{- include "tracelab.selectorLabels" . | nindent 4 }}
    {{- with $root.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # Restart pods when their settings change.
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- with $root.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "tracelab.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $podSecurity | nindent 4 }}
  terminationGracePeriodSeconds: {{ add (int $root.Values.fleet.drain_seconds) 15 }}
  containers:
    - name: {{ .service }}
      image: {{ include "tracelab.image" . | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      env:
        - name: TRACELAB_CONFIG
          value: /etc/tracelab/{{ .service }}.toml
        # Secrets as files of the read-only `secrets` volume, never as values
        # in the environment (a test could read /proc/<pid>/environ):
        # TRACELAB__<PATH>_FILE names the file the service reads <path> from.
        {{- range $secretFiles }}
        - name: {{ .env }}_FILE
          value: /etc/tracelab/secrets/{{ .file }}
        {{- end }}
        {{- if eq .service "verifier" }}
        # Stored results name the pod that produced them.
        - name: TRACELAB__NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        {{- end }}
        - name: HOME
          value: /tmp
        - name: TMPDIR
          {{- if $docker }}
          # Worktrees where the Docker engine can bind-mount them (same path on the node).
          value: {{ $root.Values.sandbox.hostWorkDir }}
          {{- else }}
          value: /tmp
          {{- end }}
      ports:
        - name: http
          containerPort: {{ $svc.ports.http }}
          protocol: TCP
        {{- if $svc.ports.grpc }}
        - name: grpc
          containerPort: {{ $svc.ports.grpc }}
          protocol: TCP
        {{- end }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        {{- toYaml $root.Values.probes.liveness | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        {{- toYaml $root.Values.probes.readiness | nindent 8 }}
      resources:
        {{- toYaml $svc.resources | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/tracelab
          readOnly: true
        - name: secrets
          mountPath: /etc/tracelab/secrets
          readOnly: true
        - name: tmp
          mountPath: /tmp
        {{- if has .service (list "investigator" "verifier" "indexer") }}
        - name: repositories
          mountPath: {{ $root.Values.repositories.mountPath }}
        - name: repo-cache
          mountPath: {{ $root.Values.fleet.repositories.cache_dir }}
        {{- if $root.Values.gitCredentials.existingSecret }}
        - name: git-credentials
          mountPath: /etc/tracelab/git
          readOnly: true
        {{- end }}
        {{- end }}
        {{- if $docker }}
        - name: docker-socket
          mountPath: /run/tracelab/docker.sock
        - name: sandbox-work
          mountPath: {{ $root.Values.sandbox.hostWorkDir }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "tracelab.fullname" $root }}-config
        items:
          - key: {{ .service }}.toml
            path: {{ .service }}.toml
    # One file per secret, from the Secrets and keys the values name; mode
    # 0440 with the pod's fsGroup as group: readable by the container user.
    - name: secrets
      projected:
        defaultMode: 0440
        sources:
          {{- range $secretFiles }}
          - secret:
              name: {{ .secret }}
              items:
                - key: {{ .key }}
                  path: {{ .file }}
          {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: {{ $root.Values.tmp.sizeLimit }}
    {{- if has .service (list "investigator" "verifier" "indexer") }}
    - name: repositories
      {{- if $root.Values.repositories.existingClaim }}
      persistentVolumeClaim:
        claimName: {{ $root.Values.repositories.existingClaim }}
      {{- else }}
      emptyDir: {}
      {{- end }}
    - name: repo-cache
      emptyDir:
        sizeLimit: {{ $root.Values.repoCache.sizeLimit }}
    {{- if $root.Values.gitCredentials.existingSecret }}
    - name: git-credentials
      secret:
        secretName: {{ $root.Values.gitCredentials.existingSecret }}
        defaultMode: 0440
    {{- end }}
    {{- end }}
    {{- if $docker }}
    # The node's Docker engine: root on that node for whoever holds it.
    - name: docker-socket
      hostPath:
        path: {{ $root.Values.sandbox.dockerSocket }}
        type: Socket
    - name: sandbox-work
      hostPath:
        path: {{ $root.Values.sandbox.hostWorkDir }}
        type: Directory
    {{- end }}
  {{- with $svc.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $svc.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $svc.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
