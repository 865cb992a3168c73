#!/usr/bin/env bash
# The whole scheduling pipeline on one real, loopback-only control plane, back to back: this
# project (deploy/'s scheduler profile with the extender, and the controller), Kubernetes DRA
# (ResourceSlices, a DeviceClass, one ResourceClaim per pod, the default profile), the same
# pods without a device request, this project's pods made by a ReplicaSet, each with a
# claim the controller makes from a template, and pods asking for devices in resources.limits:
# through this project's ExtendedResourceClass (the controller makes the claim) and through DRA's
# DeviceClass extendedResourceName (kube-scheduler makes it). Writes bench/results/pipeline-latest.{json,md} (also printed)
# and, through bench/plot.py, the plots pipeline-pods-per-second.svg and pipeline-p99.svg.
#
#   bench/pipeline.sh [options]
#     --sizes LIST       node counts, grown in place (default 500,2000,5000)
#     --pods N           pods per run, each claiming one k80 (default: as many as nodes)
#     --repeats N        runs of each variant per size and QPS; medians reported (default 3)
#     --qps LIST         kube-scheduler client QPS settings, the same for every variant; burst is
#                        twice the QPS; "default" leaves kube-scheduler's 50/100 (default 1000,default)
#     --variants LIST    any of extender,dra,no-claims,templates,classes,classes-routed,
#                        dra-classes (default all seven, in that order)
#     --scoring POLICY   the extender's --scoring (default: its own default, binpack)
#     --percentage P     the extender profile's percentageOfNodesToScore, 1-100 or "default"
#                        (kube-scheduler's adaptive one); default 100, as deploy/ sets it
#     --extender-flag F  one more flag for the extender, e.g. --extender-flag --http-threads=16
#                        (repeatable)
#     --creating-clients N
#                        concurrent clients creating each run's pods and claims (default 16)
#     --timeout SECONDS  bound for every pod of a run to be scheduled (default 600)
#     --writes N         status writes per kind in the write-cost stage (default 1000)
#     --no-write-cost    skip the write-cost stage (kube-apiserver's CPU per status write of a
#                        device, a claim and a pod, once per size before the runs)
#     --out-dir DIR      where the results go (default bench/results)
#     -h, --help
#
# Builds pipeline_bench, the extender and the controller into $BENCH_BUILD_DIR (default
# build-bench, Release); starts etcd, kube-apiserver and kube-controller-manager (with the
# resourceclaim-controller) through test/controlplane/launch.sh in a temporary folder, and
# always stops everything on exit. KEEP_BENCH_DIR=1 keeps that folder (logs, every run's JSON)
# after success; after a failure it is always kept. See bench/README.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$root/bench/lib.sh"
extender_sa=extended-resource-scheduler-extender
controller_sa=extended-resource-controller

sizes=500,2000,5000 pods='' repeats=3 qps_list=1000,default scoring=''
variants=extender,dra,no-claims,templates,classes,classes-routed,dra-classes
timeout=600 out_dir=$root/bench/results percentage=100 extender_flags=() writes=1000 write_cost=true
creating_clients=16

log() { printf '[bench/pipeline.sh] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
# shellcheck source=../test/controlplane/lib/scheduler_checks.sh
source "$root/test/controlplane/lib/scheduler_checks.sh"

while (($#)); do
  case "$1" in
  --sizes) sizes=${2:?} && shift ;;
  --pods) pods=${2:?} && shift ;;
  --repeats) repeats=${2:?} && shift ;;
  --qps) qps_list=${2:?} && shift ;;
  --variants) variants=${2:?} && shift ;;
  --scoring) scoring=${2:?} && shift ;;
  --percentage) percentage=${2:?} && shift ;;
  --extender-flag) extender_flags+=("${2:?}") && shift ;;
  --creating-clients) creating_clients=${2:?} && shift ;;
  --timeout) timeout=${2:?} && shift ;;
  --writes) writes=${2:?} && shift ;;
  --no-write-cost) write_cost=false ;;
  --out-dir) out_dir=${2:?} && shift ;;
  -h | --help) usage && exit 0 ;;
  *) die "unknown option '$1' (try --help)" ;;
  esac
  shift
done
[[ "$sizes" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--sizes must be a list of node counts"
[[ -z "$pods" || "$pods" =~ ^[1-9][0-9]*$ ]] || die "--pods must be a positive number"
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || die "--repeats must be a positive number"
[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a number of seconds"
[[ "$creating_clients" =~ ^[1-9][0-9]*$ ]] || die "--creating-clients must be a positive number"
[[ "$writes" =~ ^[1-9][0-9]*$ ]] || die "--writes must be a positive number"
check_percentage_of_nodes_to_score --percentage "$percentage"
[[ "$qps_list" =~ ^(default|[1-9][0-9]*)(,(default|[1-9][0-9]*))*$ ]] || die "--qps: numbers or default"
variant_re='(extender|dra|no-claims|templates|classes|classes-routed|dra-classes)'
[[ "$variants" =~ ^$variant_re(,$variant_re)*$ ]] ||
  die "--variants: extender, dra, no-claims, templates, classes, classes-routed, dra-classes"
IFS=, read -r -a size_list <<<"$sizes"
IFS=, read -r -a qps_values <<<"$qps_list"
IFS=, read -r -a variant_list <<<"$variants"

bench_build pipeline_bench extended-resource-scheduler \
  extended-resource-controller
bench=$build_dir/bench/pipeline_bench

bin_dir=$("$root/test/controlplane/build-binaries.sh" | tail -n1)
work=$(mktemp -d "${TMPDIR:-/tmp}/ker-pipeline.XXXXXX")
cp_dir=$work/controlplane
runs_dir=$work/runs
write_cost_dir=$work/write-cost
mkdir -p "$runs_dir" "$write_cost_dir"
extender_pid='' controller_pid='' bench_pid=''

stop_pid() { # pid name: TERM, up to 20 s, then KILL
  local pid=$1 i
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$2 (pid $pid) ignored SIGTERM; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # invoked by trap
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$bench_pid" pipeline_bench
  stop_pid "$extender_pid" extender
  stop_pid "$controller_pid" controller
  if [[ -d "$cp_dir" ]] && ! "$launcher" stop "$cp_dir" >/dev/null; then
    log "stopping the control plane in $cp_dir failed"
    ((rc != 0)) || rc=1
  fi
  if ((rc != 0)) || [[ "${KEEP_BENCH_DIR:-0}" == 1 ]]; then
    log "work folder kept: $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A loopback port nobody listens on (20000-32767, below the ephemeral range).
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12768))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  die "no free loopback port found"
}

wait_http() { # url seconds pid name
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    kill -0 "$3" 2>/dev/null || die "$4 exited; see $work/$4.log"
    [[ "$(curl -fsS --max-time 2 "$1" 2>/dev/null)" == ok ]] && return 0
    sleep 0.25
  done
  die "$4 not ready within $2 s; see $work/$4.log"
}

# Run a child in the background so a signal to this script reaches the trap promptly.
run_bench() {
  "$bench" "$@" &
  bench_pid=$!
  local rc=0
  wait "$bench_pid" || rc=$?
  bench_pid=''
  return "$rc"
}

log "starting the control plane in $cp_dir"
env_file=$("$launcher" start "$cp_dir" --bin-dir "$bin_dir" | tail -n1)
"$launcher" start-controller-manager "$cp_dir" --extra-controllers resourceclaim-controller >/dev/null
env_get() { sed -n "s/^$1=//p" "$env_file" | tail -n1; }
kubeconfig=$(env_get KUBECONFIG)
kubectl=$(env_get KUBECTL)
k8s_version=$(env_get KUBERNETES_VERSION)
"$kubectl" --kubeconfig "$kubeconfig" api-versions | grep -qx resource.k8s.io/v1 ||
  die "kube-apiserver $k8s_version does not serve resource.k8s.io/v1"

"$kubectl" --kubeconfig "$kubeconfig" apply -f "$root/crds" >/dev/null
admin_kubectl() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
wait_crds_established admin_kubectl \
  crd/extendedresources.extendedresource.io crd/extendedresourceclaims.extendedresource.io \
  crd/extendedresourceclaimtemplates.extendedresource.io \
  crd/extendedresourceclasses.extendedresource.io || die "the CRDs are not Established"
"$launcher" apply-deploy-rbac "$cp_dir"
# As deployed: the class variants' pods get the scheduling gate the controller lifts with their
# record, and classes-routed's, which name no scheduler, deploy/'s profile (the ext instance's,
# extended-resource-scheduler).
"$kubectl" --kubeconfig "$kubeconfig" apply -f "$root/deploy/class-routing-policy.yaml" >/dev/null
"$launcher" sa-kubeconfig "$cp_dir" kube-system "$extender_sa" "$work/extender.kubeconfig" >/dev/null
"$launcher" sa-kubeconfig "$cp_dir" kube-system "$controller_sa" "$work/controller.kubeconfig" >/dev/null

# The bound for a run's wait for a quiet cluster: 5 minutes, plus what the controller needs to
# protect the devices of a grown cluster (8 per node; it protected about 100 a second at
# 5,000 nodes on 2 cores).
quiet_timeout() { echo "$((300 + $1 * 8 / 50))s"; }

start_components() {
  local ext_port health_port ctl_port args=()
  ext_port=$(free_port)
  health_port=$(free_port)
  [[ "$health_port" != "$ext_port" ]] || health_port=$(free_port)
  [[ -z "$scoring" ]] || args+=(--scoring "$scoring")
  args+=(${extender_flags[@]+"${extender_flags[@]}"})
  "$build_dir/scheduler/extended-resource-scheduler" --kubeconfig "$work/extender.kubeconfig" \
    --bind-address 127.0.0.1 --port "$ext_port" --health-bind-address 127.0.0.1 \
    --health-port "$health_port" --admission-policy= "${args[@]}" </dev/null >>"$work/extender.log" 2>&1 &
  extender_pid=$!
  ctl_port=$(free_port)
  "$build_dir/controller/extended-resource-controller" --kubeconfig "$work/controller.kubeconfig" \
    --leader-elect=false --metrics-bind-address "127.0.0.1:$ctl_port" --admission-policy= </dev/null \
    >>"$work/controller.log" 2>&1 &
  controller_pid=$!
  wait_http "http://127.0.0.1:$health_port/readyz" 300 "$extender_pid" extender
  wait_http "http://127.0.0.1:$ctl_port/readyz" 300 "$controller_pid" controller
  extender_url=http://127.0.0.1:$ext_port
  extender_metrics=http://127.0.0.1:$health_port/metrics
  log "extender (pid $extender_pid) at $extender_url, controller (pid $controller_pid) ready"
}

# Stops the extender and the controller (the write-cost stage runs without them).
stop_components() {
  stop_pid "$extender_pid" extender
  stop_pid "$controller_pid" controller
  extender_pid='' controller_pid=''
}

# Two kube-schedulers with the same client QPS: "ext" is deploy/'s profile (extender with
# filter, prioritize and bind, nodeCacheCapable, percentageOfNodesToScore --percentage), "plain" the
# default profile with kube-scheduler's defaults (DRA, DRA's class mapping and the no-claims pods).
start_schedulers() { # qps
  local q=() burst
  if [[ "$1" != default ]]; then
    burst=$(($1 * 2))
    q=(--client-qps "$1" --client-burst "$burst")
  fi
  "$launcher" start-scheduler "$cp_dir" --name ext --extender-url "$extender_url" \
    --node-cache-capable true --percentage-of-nodes-to-score "$percentage" "${q[@]}" >/dev/null
  "$launcher" start-scheduler "$cp_dir" --name plain --no-extender --scheduler-name default-scheduler \
    --percentage-of-nodes-to-score default "${q[@]}" >/dev/null
}

report() {
  local cpu_model note
  cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  note="Kubernetes $k8s_version, $(nproc) cores ($cpu_model), load average at the end $(cut -d' ' -f1-3 /proc/loadavg); scoring ${scoring:-binpack (default)}; extender profile percentageOfNodesToScore $percentage${extender_flags[*]+; extender flags ${extender_flags[*]}}; $(date -u +%FT%TZ)"
  mkdir -p "$out_dir"
  run_bench --mode report --runs-dir "$runs_dir" --write-cost-dir "$write_cost_dir" \
    --out-dir "$out_dir" --note "$note"
  python3 "$root/bench/plot.py" "$out_dir" || log "bench/plot.py could not draw the plots"
}

seq_no=0
failed_runs=0
started=false
for n in "${size_list[@]}"; do
  p=${pods:-$n}
  log "cluster of $n nodes"
  run_bench --mode setup --env-file "$env_file" --nodes "$n"
  if $write_cost; then
    # Neither the extender nor the controller may run: the controller would undo the stage's
    # writes, and their watches would add their fan-out to the figures. No kube-scheduler runs
    # here either (each QPS setting stops its own).
    if $started; then
      stop_components
      started=false
    fi
    log "nodes $n: kube-apiserver's CPU per status write, $writes writes per kind"
    run_bench --mode write-cost --env-file "$env_file" --nodes "$n" --writes "$writes" \
      --namespace pipe-write-cost --quiet-timeout "$(quiet_timeout "$n")" \
      --out "$(printf '%s/%06d.json' "$write_cost_dir" "$n")" || {
      failed_runs=$((failed_runs + 1))
      log "the write-cost stage did not complete; see its log above"
    }
  fi
  if ! $started; then
    start_components
    started=true
  fi
  for q in "${qps_values[@]}"; do
    start_schedulers "$q"
    for ((r = 1; r <= repeats; r++)); do
      for v in "${variant_list[@]}"; do
        seq_no=$((seq_no + 1))
        instance=plain extra=()
        if [[ "$v" == extender || "$v" == templates || "$v" == classes* ]]; then
          instance=ext
          extra=(--extender-metrics "$extender_metrics")
        fi
        log "nodes $n, pods $p, client QPS $q, run $r: $v"
        rc=0
        run_bench --mode run --env-file "$env_file" --variant "$v" --nodes "$n" --pods "$p" \
          --namespace "pipe-$n-$q-$r-$v" --client-qps "$q" --repeat "$r" \
          --workers "$creating_clients" \
          --scheduler-instance "$instance" "${extra[@]}" \
          --extender-pid "$extender_pid" --controller-pid "$controller_pid" \
          --timeout "${timeout}s" --quiet-timeout "$(quiet_timeout "$n")" --out "$(printf '%s/%04d-%s.json' "$runs_dir" "$seq_no" "$v")" || rc=$?
        if ((rc != 0)); then
          failed_runs=$((failed_runs + 1))
          log "run did not complete (exit $rc); its file says how far it got"
        fi
      done
      # After every round, so an interrupted benchmark still leaves what it finished.
      report >/dev/null
    done
    "$launcher" stop-scheduler "$cp_dir" --all
  done
done
report
((failed_runs == 0)) || die "$failed_runs run(s) did not complete"
