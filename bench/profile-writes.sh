#!/usr/bin/env bash
# Where kube-apiserver's CPU goes on a status write: a CPU profile of it while it takes the
# write-cost stage's writes (pipeline_bench --mode write-cost) of one kind at a time, a device,
# a claim and a pod, each alone in its profile.
#
#   bench/profile-writes.sh [--writes N] [--seconds S] [--out-dir DIR]
#   bench/profile-writes.sh --from DIR       summarize DIR's profiles again, measure nothing
#     --writes N     status writes per kind (default 4000; more than the profile lasts)
#     --seconds S    length of each profile (default 15)
#     --out-dir DIR  where each kind's profile (KIND.pprof), its summary (KIND.top.txt: the
#                    share of the parts below, then pprof's flat and cumulative tops) and the
#                    stage's figures (KIND.json) go (default: a new write-profiles.* folder
#                    under ${TMPDIR:-/tmp})
#
# Builds pipeline_bench into $BENCH_BUILD_DIR (default build-bench, Release), starts etcd,
# kube-apiserver (with --profiling) and kube-controller-manager through
# test/controlplane/launch.sh in a temporary folder with the CRDs and nothing else of this
# project running, and always stops them on exit.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
source "$root/bench/lib.sh"
writes=4000 seconds=15 out_dir='' from=''
kinds=(ExtendedResource ExtendedResourceClaim Pod)

log() { printf '[bench/profile-writes.sh] %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 2
}
usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case "$1" in
  --writes) writes=${2:?} && shift ;;
  --seconds) seconds=${2:?} && shift ;;
  --out-dir) out_dir=${2:?} && shift ;;
  --from) from=${2:?} && shift ;;
  -h | --help) usage && exit 0 ;;
  *) usage >&2 && die "unknown option: $1" ;;
  esac
  shift
done
[[ "$writes" =~ ^[1-9][0-9]*$ ]] || die "--writes must be a positive number"
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] && ((seconds <= 120)) || die "--seconds must be 1 to 120"
command -v go >/dev/null || die "needs the Go toolchain (go tool pprof)"

# The parts of a write, each by the kube-apiserver functions that do it (pprof -focus regexes).
declare -A parts=(
  [admission]='apiserver/pkg/admission\.'
  [decode-request-body]='handlers\.limitedReadBody|serializer/json\.\(\*Serializer\)\.Decode|schemaCoercingDecoder\.Decode'
  [decode-watch-events]='etcd3\.\(\*watchChan\)\.transform'
  [encode-response]='endpoints/handlers/responsewriters\.'
  [gc]='runtime\.gcBgMarkWorker'
  [managed-fields]='managedfields/internal\.\(\*FieldManager\)\.Update'
  [tls]='crypto/tls'
  [validate-update]='registry/rest\.ValidateUpdate'
)
# The share of a profile's samples whose stacks pass through a regex.
share() {
  go tool pprof -top -nodefraction=0 -nodecount=1000000 -focus="$2" "$1" 2>/dev/null |
    sed -n 's/^Showing nodes accounting for \([^,]*\), \([0-9.]*%\) of \(.*\) total$/\2 (\1 of \3)/p'
}
# DIR/KIND.top.txt from DIR/KIND.pprof.
summarize() {
  local dir=$1 kind=$2 part
  {
    echo "# share of the samples with each part on the stack (a sample may count in several)"
    for part in "${!parts[@]}"; do
      printf '%-20s %s\n' "$part" "$(share "$dir/$kind.pprof" "${parts[$part]}")"
    done | sort
    echo "# flat"
    go tool pprof -top -nodecount=40 "$dir/$kind.pprof" 2>/dev/null
    echo "# cumulative"
    go tool pprof -top -cum -nodecount=80 "$dir/$kind.pprof" 2>/dev/null
  } >"$dir/$kind.top.txt"
}

if [[ -n "$from" ]]; then
  for kind in "${kinds[@]}"; do
    [[ -f "$from/$kind.pprof" ]] || die "no $from/$kind.pprof"
    summarize "$from" "$kind"
  done
  log "summaries in $from"
  exit 0
fi

bench_build pipeline_bench
bin_dir=$("$root/test/controlplane/build-binaries.sh" | tail -n1)
[[ -n "$out_dir" ]] || out_dir=$(mktemp -d "${TMPDIR:-/tmp}/write-profiles.XXXXXX")
mkdir -p "$out_dir"
work=$(mktemp -d "${TMPDIR:-/tmp}/ker-profile.XXXXXX")
cp_dir=$work/controlplane
profile_pid='' bench_pid=''
# shellcheck disable=SC2317 # invoked by trap
on_exit() {
  local rc=$? pid
  trap - EXIT INT TERM
  for pid in $profile_pid $bench_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  "$launcher" stop "$cp_dir" >/dev/null || { log "stopping the control plane failed" && rc=1; }
  if ((rc == 0)); then
    rm -rf "$work"
  else
    log "work folder kept: $work"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# A later --profiling wins over the launcher's own --profiling=false.
env_file=$("$launcher" start "$cp_dir" --bin-dir "$bin_dir" --apiserver-arg=--profiling=true |
  tail -n1)
# Its namespace controller removes the stage's namespace once the stage is done.
"$launcher" start-controller-manager "$cp_dir" >/dev/null
kubeconfig=$(sed -n 's/^KUBECONFIG=//p' "$env_file")
kubectl=$(sed -n 's/^KUBECTL=//p' "$env_file")
admin_kubectl() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
admin_kubectl apply -f "$root/crds" >/dev/null
wait_crds_established admin_kubectl \
  crd/extendedresources.extendedresource.io crd/extendedresourceclaims.extendedresource.io ||
  die "the CRDs are not Established"

for kind in "${kinds[@]}"; do
  log "$kind: $writes status writes, profiled for ${seconds}s"
  admin_kubectl get --raw "/debug/pprof/profile?seconds=$seconds" >"$out_dir/$kind.pprof" &
  profile_pid=$!
  "$build_dir/bench/pipeline_bench" --mode write-cost --env-file "$env_file" \
    --namespace "profile-$(tr '[:upper:]' '[:lower:]' <<<"$kind")" --writes "$writes" \
    --write-kinds "$kind" --out "$out_dir/$kind.json" &
  bench_pid=$!
  wait "$bench_pid"
  bench_pid=''
  wait "$profile_pid"
  profile_pid=''
  summarize "$out_dir" "$kind"
done
log "profiles in $out_dir"
