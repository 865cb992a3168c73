#!/usr/bin/env bash
# Checks the Helm chart charts/kube-extended-resource against deploy/ and crds/, which stay the
# plain manifests users and the e2e tests apply; the chart is a second spelling of the same
# install, and this keeps the two from drifting:
#   - the chart's crds/ are byte-identical copies of crds/ (a chart must carry its own files:
#     `helm package` and .Files cannot reach outside the chart folder);
#   - `helm lint --strict` passes, with the default values and with each variant below;
#   - `helm template --include-crds` with the default values renders exactly the objects of
#     deploy/*.yaml and crds/*.yaml, compared object by object as parsed YAML (comments, key
#     order and formatting aside), printing a unified diff of each object that differs;
#   - every render holds what test/helm/manifests.py checks (no NetworkPolicy admits pods of any
#     namespace by their labels alone; the extender over mutual TLS; image, profile, placement
#     and node-file knobs; admission and network policies off), and
#     values.schema.json refuses a misspelt or out-of-range value;
#   - kube-scheduler itself (the pinned build, when present) loads the scheduler configuration
#     of the default, TLS and knobs renders with --write-config-to: strict decoding, validation
#     and the extender's TLS files, and nothing started.
#
#   test/helm/check-chart.sh
#
# helm is the pinned one (test/controlplane/build-binaries.sh --helm builds it once, about 3
# min) unless HELM names another; KUBE_SCHEDULER names a kube-scheduler binary, else the
# pinned control plane's is used when built, else that check is skipped. Needs python3 with
# PyYAML (installs Debian's python3-yaml when neither python has it and it runs as root).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
chart="$root/charts/kube-extended-resource"
start=$SECONDS

log() { printf '[check-chart] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

case "${1:-}" in
'') ;;
-h | --help)
  sed -n '2,23s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
  ;;
*) die "unknown argument '$1' (try --help)" ;;
esac

helm=${HELM:-}
if [[ -z "$helm" ]]; then
  helm_dir=$("$root/test/controlplane/build-binaries.sh" --helm | tail -n 1)
  helm="$helm_dir/helm"
fi
[[ -x "$helm" ]] || die "no helm at $helm"

# PyYAML: the project's python3, else Debian's (python3-yaml).
python=''
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import yaml' 2>/dev/null; then
    python=$p
    break
  fi
done
if [[ -z "$python" ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing python3-yaml (PyYAML) for the comparison"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null; }
    python=/usr/bin/python3
  else
    die "needs python3 with PyYAML: apt-get install python3-yaml (or pip install pyyaml)"
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=()
fail() {
  failed+=("$1")
  log "FAILED: $1"
}

# --- the chart's crds/ are crds/
log "crds: chart copies against crds/"
crds_ok=true
for f in "$root"/crds/*.yaml; do
  name=$(basename "$f")
  if [[ ! -f "$chart/crds/$name" ]]; then
    log "charts/kube-extended-resource/crds/$name is missing"
    crds_ok=false
  elif ! cmp -s "$f" "$chart/crds/$name"; then
    diff -u "$f" "$chart/crds/$name" >&2 || true
    crds_ok=false
  fi
done
for f in "$chart"/crds/*; do
  [[ -f "$root/crds/$(basename "$f")" ]] || {
    log "charts/kube-extended-resource/crds/$(basename "$f") is not in crds/"
    crds_ok=false
  }
done
$crds_ok || fail "the chart's crds/ differ from crds/: cp crds/*.yaml charts/kube-extended-resource/crds/ (and remove files crds/ no longer has)"

# --- lint and render: the defaults, then each variant
# name | helm arguments
variants=(
  "default|"
  "tls|--set scheduler.extender.tls.enabled=true"
  "knobs|-f $here/values-knobs.yaml"
  "no-policies|--set admissionPolicy.enabled=false --set networkPolicy.enabled=false"
)
for v in "${variants[@]}"; do
  name=${v%%|*}
  read -r -a args <<<"${v#*|}"
  log "$name: helm lint --strict ${args[*]}"
  if ! "$helm" lint --strict "$chart" "${args[@]}" >"$tmp/lint-$name.log" 2>&1; then
    cat "$tmp/lint-$name.log" >&2
    fail "helm lint ($name)"
  fi
  extra=()
  [[ "$name" != default ]] || extra=(--include-crds)
  if ! "$helm" template ker "$chart" "${extra[@]}" "${args[@]}" >"$tmp/$name.yaml" 2>"$tmp/template-$name.log"; then
    cat "$tmp/template-$name.log" >&2
    fail "helm template ($name)"
    continue
  fi
  if [[ "$name" == default ]]; then
    log "default: helm template --include-crds against deploy/*.yaml and crds/*.yaml"
    "$python" "$here/manifests.py" compare "$tmp/default.yaml" "$root"/deploy/*.yaml "$root"/crds/*.yaml ||
      fail "the chart's default render differs from deploy/ + crds/ (diffs above: - is deploy/, + is the chart)"
    "$python" "$here/manifests.py" variant "$name" "$tmp/$name.yaml" || fail "variant $name"
  else
    "$python" "$here/manifests.py" variant "$name" "$tmp/$name.yaml" || fail "variant $name"
  fi
done

# --- values the schema refuses: a misspelt or out-of-range knob fails the render, not silently
for bad in scheduler.extender.scoreing=spread scheduler.extender.scoring=spred \
  scheduler.profile.extender.weight=0 nodeAgent.hostMounts[0]=usr/lib; do
  if "$helm" template ker "$chart" --set "$bad" >/dev/null 2>&1; then
    fail "helm template --set $bad renders; values.schema.json should refuse it"
  fi
done

# --- kube-scheduler loads each scheduler configuration
kube_scheduler=${KUBE_SCHEDULER:-}
if [[ -z "$kube_scheduler" ]]; then
  cp_dir=$("$root/test/controlplane/build-binaries.sh" --print-dir | tail -n 1)
  [[ ! -x "$cp_dir/kube-scheduler" ]] || kube_scheduler="$cp_dir/kube-scheduler"
fi
if [[ -z "$kube_scheduler" ]]; then
  log "kube-scheduler: skipped (no pinned build yet: make controlplane-binaries, or set KUBE_SCHEDULER)"
else
  # A kubeconfig it never dials (--write-config-to exits before any request), and a CA and
  # client certificate standing in for the TLS variant's Secret.
  sc="$tmp/scheduler"
  mkdir -p "$sc"
  cat >"$sc/kubeconfig" <<'EOF'
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
EOF
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$sc/ca.key" -out "$sc/ca.crt" -days 1 \
    -subj /CN=check-chart-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$sc/tls.key" -out "$sc/tls.csr" \
    -subj /CN=extended-resource-kube-scheduler 2>/dev/null
  openssl x509 -req -in "$sc/tls.csr" -CA "$sc/ca.crt" -CAkey "$sc/ca.key" -CAcreateserial \
    -out "$sc/tls.crt" -days 1 2>/dev/null
  for name in default tls knobs; do
    [[ -f "$tmp/$name.yaml" ]] || continue
    log "$name: $(basename "$kube_scheduler") --config=<the render's> --write-config-to"
    if ! "$python" "$here/manifests.py" scheduler-config "$tmp/$name.yaml" "$sc" ||
      ! timeout 60 "$kube_scheduler" --config="$sc/config.yaml" --write-config-to="$sc/written.yaml" \
        >"$sc/$name.log" 2>&1; then
      grep -v '^[IW][0-9]' "$sc/$name.log" >&2 || true
      fail "kube-scheduler refuses the $name render's configuration"
    fi
  done
fi

if ((${#failed[@]} > 0)); then
  log "${#failed[@]} check(s) failed in $((SECONDS - start)) s:"
  printf '[check-chart]   %s\n' "${failed[@]}" >&2
  exit 1
fi
log "ok in $((SECONDS - start)) s: $("$helm" version --template '{{.Version}}'), lint, default render = deploy/ + crds/, variants ${variants[*]%%|*}"
