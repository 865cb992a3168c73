#!/usr/bin/env bash
# Checks the monitoring files of deploy/monitoring/ (the Grafana dashboard and the Prometheus
# alerting rules, docs/monitoring.md) offline:
#   - alerts.yaml loads with Prometheus' own rule loader (model/rulefmt of Prometheus v3.16:
#     every expression parsed, every template too); each alert has `for`, a severity label and
#     summary and description annotations;
#   - dashboard.json decodes strictly into grafana-foundation-sdk's dashboard model (schemaVersion
#     42, Grafana 12), has a title, a uid, unique panel ids, gridPos inside the 24 columns without
#     overlaps, targets with expr and refId on the ${datasource} Prometheus variable, a node
#     variable, and every target's PromQL parses once Grafana's variables are replaced by
#     stand-ins;
#   - every metric either file reads is registered in the C++ sources of scheduler/,
#     controller/, agent/ or common/ (a histogram's name with _bucket, _sum, _count), or is one
#     of the external metrics below: kube-scheduler's own (scheduler_*, leader_election_master_
#     status; checked against the pinned kube-scheduler's source when the Go module cache holds
#     it) and dcgm-exporter's (DCGM_FI_*).
#
#   test/monitoring/check.sh                  check, print a summary on stderr
#   test/monitoring/check.sh --print-metrics  print the metric names the files read (sorted,
#                                             one per line, byte order) and nothing else on stdout
#
# The checker (test/monitoring/promcheck, a Go module pinned by its go.mod and go.sum) is built
# once into $CONTROLPLANE_CACHE_DIR (default <repo>/.cache/controlplane)/promcheck/, beside the
# pinned helm, under a lock, and rebuilt when its sources, go.mod, go.sum or Go change.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../controlplane/common.sh
source "$here/../controlplane/common.sh" # REPO_ROOT, go_env, check_go_meets
root=$REPO_ROOT
start=$SECONDS

log() { printf '[monitoring] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

print_metrics=false
case "${1:-}" in
'') ;;
--print-metrics) print_metrics=true ;;
-h | --help)
  sed -n '2,27s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
  ;;
*) die "unknown argument '$1' (try --help)" ;;
esac

files=("$root"/deploy/monitoring/*.json "$root"/deploy/monitoring/*.yaml)
for f in "${files[@]}"; do
  [[ -f "$f" ]] || die "missing $f"
done

# Metrics the files may read that none of the project's binaries exports (kube-scheduler's
# leader election gauge).
external=(leader_election_master_status)
external_prefixes=(scheduler_ DCGM_FI_)

# --- build the checker once (cached_build, as helm and the control plane are)
src="$here/promcheck"
cache_root=${CONTROLPLANE_CACHE_DIR:-$root/.cache/controlplane}
dir="$cache_root/promcheck"
go_env
check_go_meets "$(awk '$1 == "go" { print $2; exit }' "$src/go.mod")" "test/monitoring/promcheck"
# Bump when the build changes what it produces (flags) so caches get rebuilt.
recipe=1
fingerprint=$(
  {
    printf '%s\n' "recipe=$recipe" "$(go env GOVERSION GOOS GOARCH)"
    cat "$src/go.mod" "$src/go.sum" "$src"/*.go
  } | sha256sum | cut -d' ' -f1
)
promcheck_present() { [[ -x "$1/promcheck" ]]; }
promcheck_steps() { # OUT
  log "building promcheck (Prometheus and grafana-foundation-sdk as pinned in its go.sum; about a minute with empty Go caches)"
  (cd "$src" && go build -trimpath -ldflags='-s -w' -o "$1/promcheck" .)
}
cached_build promcheck "$dir" "$fingerprint" 600 promcheck_steps promcheck_present
promcheck="$dir/promcheck"

if $print_metrics; then
  exec "$promcheck" --print-metrics --require-variable datasource --require-variable node "${files[@]}"
fi

# --- validate the files and check every metric against the sources
cd "$root"
args=(--require-variable datasource --require-variable node)
for d in scheduler controller agent common; do
  args+=(--source "$d")
done
for m in "${external[@]}"; do
  args+=(--external "$m")
done
for p in "${external_prefixes[@]}"; do
  args+=(--external-prefix "$p")
done
rel=("${files[@]#"$root"/}")
"$promcheck" "${args[@]}" "${rel[@]}" || die "deploy/monitoring/ failed the checks above"

# --- kube-scheduler's metrics, against the pinned kube-scheduler's source when the module
# cache holds it (test/controlplane/build-binaries.sh puts it there); offline either way.
load_versions
modcache=$(go env GOMODCACHE)
k8s="$modcache/k8s.io/kubernetes@$KUBERNETES_VERSION"
cbase="$modcache/k8s.io/component-base@v0.${KUBERNETES_VERSION#v1.}"
if [[ -d "$k8s/pkg/scheduler/metrics" && -d "$cbase/metrics" ]]; then
  unknown=()
  while IFS= read -r m; do
    case "$m" in
    scheduler_*)
      base=${m#scheduler_}
      base=${base%_bucket}
      base=${base%_sum}
      base=${base%_count}
      grep -rqE "Name:[[:space:]]+\"$base\"" "$k8s/pkg/scheduler/metrics" || unknown+=("$m")
      ;;
    leader_election_master_status)
      grep -rqF "\"$m\"" "$cbase/metrics/prometheus/clientgo/leaderelection" || unknown+=("$m")
      ;;
    esac
  done < <("$promcheck" --print-metrics "${rel[@]}")
  ((${#unknown[@]} == 0)) ||
    die "kube-scheduler $KUBERNETES_VERSION does not define: ${unknown[*]} (its pkg/scheduler/metrics, component-base's leaderelection metrics)"
  kube_note="kube-scheduler's metrics found in $KUBERNETES_VERSION's source"
else
  kube_note="kube-scheduler's metrics not checked by name (no k8s.io/kubernetes@$KUBERNETES_VERSION in the Go module cache: make controlplane-binaries)"
fi
log "ok in $((SECONDS - start)) s: ${rel[*]}; every metric exported by scheduler/, controller/, agent/, common/ or external (${external[*]}, ${external_prefixes[*]/%/*}); $kube_note"
