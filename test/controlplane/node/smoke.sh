#!/usr/bin/env bash
# End-to-end check of a real node (root only): starts a plane with --node-network,
# kube-controller-manager and a node (containerd, kubelet, kube-proxy) with a busybox image made
# here with podman; runs a pod (Running, kubectl logs, kubectl exec) and a pod that calls the API
# server the in-cluster way (ServiceAccount token, KUBERNETES_SERVICE_HOST=10.0.0.1, kube-proxy's
# DNAT); checks ip_forward stays 0; stops everything and checks that no process, mount, network
# namespace, interface, iptables chain or table, sysctl change, kubepods cgroup or fixed host
# path is left behind. Prints the times it measured.
#
#   test/controlplane/node/smoke.sh [DIR]   (default: a new temp folder, removed on success)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
launcher="$here/launch.sh"
step() { printf '[node-smoke %3ss] %s\n' "$SECONDS" "$*" >&2; }
fail() {
  step "FAILED: $*"
  exit 1
}
[[ "$(id -u)" == 0 ]] || fail "needs root (bridge, iptables, kubelet)"
command -v podman >/dev/null || fail "needs podman to make the test image (make deps)"

own_dir=false
if (($# == 0)); then
  dir=$(mktemp -d /tmp/ker-node-smoke.XXXXXX)
  own_dir=true
else
  dir=$1
  mkdir -p "$dir"
fi
dir=$(cd "$dir" && pwd -P)
image=localhost/ker-node-smoke:1
env_value() { awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$dir/env"; }
host_paths=(/var/lib/kubelet /var/log/containers /var/log/pods /usr/libexec/kubernetes /var/lib/cni /run/containerd /run/nri /opt/containerd)
sysctls=(net.ipv4.ip_forward vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

# What the host looks like before; compared after stop.
snapshot() {
  local s p
  for s in "${sysctls[@]}"; do printf 'sysctl %s=%s\n' "$s" "$(cat "/proc/sys/${s//.//}")"; done
  for p in "${host_paths[@]}"; do [[ -e "$p" ]] && printf 'path %s\n' "$p"; done
  ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link " $2 }'
  ip netns list 2>/dev/null | sed 's/^/netns /'
  { iptables-save; ip6tables-save; } 2>/dev/null | grep -E '^(\*|:KUBE-|:CNI-|-A .*(KUBE|CNI)-)' | sed 's/^/iptables /'
  for p in /sys/fs/cgroup/*/kubepods; do [[ -d "$p" ]] && printf 'cgroup %s\n' "$p"; done
  return 0
}
before=$(snapshot)

cleanup() {
  local rc=$?
  trap - EXIT
  if [[ -f "$dir/env" && "$(env_value STATE 2>/dev/null)" != stopped ]]; then "$launcher" stop "$dir" || rc=1; fi
  podman rmi -f "$image" >/dev/null 2>&1 || true
  if ((rc == 0)) && $own_dir && ! grep -q " $dir/" /proc/self/mountinfo; then rm -rf "$dir"; else step "folder kept: $dir"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t=$SECONDS
bin_dir=$("$here/build-binaries.sh" | tail -n1)
step "binaries ready in $((SECONDS - t))s: $bin_dir"
for b in kubelet kube-proxy containerd ctr; do step "$b: $("$bin_dir/$b" --version | awk 'NR == 1')"; done

step "test image $image: busybox-static + kubectl (podman import/save)"
rootfs="$dir/image-rootfs"
rm -rf "$rootfs"
mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev"
cp /bin/busybox "$rootfs/bin/busybox"
for a in sh echo cat ls sleep wget id env ip; do ln -s busybox "$rootfs/bin/$a"; done
cp "$bin_dir/kubectl" "$rootfs/bin/kubectl"
out=$(tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/sh"]' - "$image" 2>&1) || fail "podman import: $out"
out=$(podman save --format docker-archive -o "$dir/image.tar" "$image" 2>&1) || fail "podman save: $out"
rm -rf "$rootfs"

t=$SECONDS
step "launch.sh start --node-network"
"$launcher" start "$dir" --bin-dir "$bin_dir" --node-network >/dev/null
step "control plane up in $((SECONDS - t))s at $(env_value APISERVER_URL)"
"$launcher" start-controller-manager "$dir" >/dev/null
t=$SECONDS
step "launch.sh start-node --image-tar"
"$launcher" start-node "$dir" --image-tar "$dir/image.tar" >/dev/null
step "node Ready; start-node took $((SECONDS - t))s"
for k in NODE_NAME NODE_IP POD_CIDR CONTAINERD_SOCKET CONTAINERD_PID KUBELET_PID KUBE_PROXY_PID KUBELET_LOG \
  CONTAINERD_LOG KUBE_PROXY_LOG CTR NRI_SOCKET; do
  [[ -n "$(env_value "$k")" ]] || fail "no $k in $dir/env"
done
[[ -S "$(env_value NRI_SOCKET)" ]] || fail "no NRI socket at $(env_value NRI_SOCKET)"
"$launcher" load-image "$dir" "$dir/image.tar" 2>/dev/null || fail "load-image"

export KUBECONFIG="$dir/admin.kubeconfig"
k() { "$bin_dir/kubectl" --request-timeout=20s "$@"; }
node=$(env_value NODE_NAME)

k create namespace smoke >/dev/null
for ((i = 0; i < 60; i++)); do
  k get serviceaccount default -n smoke >/dev/null 2>&1 && k get configmap kube-root-ca.crt -n smoke >/dev/null 2>&1 && break
  sleep 0.5
done
t0=$(date +%s%N)
k apply -n smoke -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: $image
    imagePullPolicy: Never
    command: ["sh", "-c", "echo hello; sleep 3600"]
YAML
k wait -n smoke pod/hello --for=condition=Ready --timeout=60s >/dev/null || fail "pod hello not Ready: $(k get pod -n smoke hello -o wide)"
step "pod hello Running $((($(date +%s%N) - t0) / 1000000)) ms after create (IP $(k get pod -n smoke hello -o jsonpath='{.status.podIP}'))"
[[ "$(k logs -n smoke hello)" == hello ]] || fail "kubectl logs: '$(k logs -n smoke hello)'"
# shellcheck disable=SC2016 # expanded by the pod's shell
[[ "$(k exec -n smoke hello -- sh -c 'echo exec-$((6 * 7))')" == exec-42 ]] || fail "kubectl exec"
step "kubectl logs and exec work"

k apply -n smoke -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: in-cluster}
spec:
  nodeName: $node
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: $image
    imagePullPolicy: Never
    command: ["sh", "-c", "echo \$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT; kubectl get --raw /version | grep gitVersion; kubectl auth whoami -o jsonpath='{.status.userInfo.username}'"]
YAML
for ((i = 0; i < 120; i++)); do
  phase=$(k get pod -n smoke in-cluster -o jsonpath='{.status.phase}')
  [[ "$phase" == Succeeded || "$phase" == Failed ]] && break
  sleep 0.5
done
out=$(k logs -n smoke in-cluster)
[[ "$phase" == Succeeded ]] || fail "in-cluster pod $phase: $out"
step "in-cluster pod said: $(paste -sd' ' <<<"$out")"
[[ "$out" == *"10.0.0.1:443"* && "$out" == *"system:serviceaccount:smoke:default"* ]] ||
  fail "the pod did not reach the API server through the kubernetes Service"

# scheduled_pod_runs NAME: a pod for the extended-resource-scheduler profile becomes Ready.
scheduled_pod_runs() {
  k apply -n smoke -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  schedulerName: extended-resource-scheduler
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: $image
    imagePullPolicy: Never
    command: ["sleep", "3600"]
YAML
  k wait -n smoke "pod/$1" --for=condition=Ready --timeout=60s >/dev/null ||
    fail "pod $1 not Ready: $(k get pod -n smoke "$1" -o wide)"
}

step "a kube-scheduler (ignorable extender on a closed loopback port) schedules onto the node"
"$launcher" start-scheduler "$dir" --extender-url http://127.0.0.1:9/extender --ignorable true >/dev/null
scheduled_pod_runs scheduled
[[ "$(k get pod -n smoke scheduled -o jsonpath='{.spec.nodeName}')" == "$node" ]] || fail "pod scheduled is not on $node"

step "restart-apiserver: the node stays Ready and pods keep reaching the API server"
"$launcher" restart-apiserver "$dir" >/dev/null
k wait node "$node" --for=condition=Ready --timeout=60s >/dev/null || fail "node not Ready after the apiserver restart"
[[ "$(k exec -n smoke hello -- echo ok)" == ok ]] || fail "kubectl exec after the apiserver restart"

step "stop-node, then start-node again: the node takes pods again"
"$launcher" stop-node "$dir" >/dev/null
"$launcher" start-node "$dir" --image-tar "$dir/image.tar" >/dev/null
[[ -z "$(k get node "$node" -o jsonpath='{.spec.unschedulable}')" ]] || fail "node $node is still cordoned"
scheduled_pod_runs again

[[ "$(cat /proc/sys/net/ipv4/ip_forward)" == 0 ]] || fail "net.ipv4.ip_forward is not 0"
step "net.ipv4.ip_forward is still 0"

"$launcher" status "$dir" >&2
t=$SECONDS
step "launch.sh stop"
"$launcher" stop "$dir"
step "stopped in $((SECONDS - t))s"
left=$(pgrep -a -f -- "$dir/" | grep -v "^$$ " || true)
[[ -z "$left" ]] || fail "processes left behind: $left"
# (Other node daemons on this machine are not this run's; container processes are caught by the
# kubepods cgroups check of the snapshot, which cannot be removed while any remains.)
left=$(grep -E " ($dir/|/var/lib/kubelet|/run/containerd)" /proc/self/mountinfo || true)
[[ -z "$left" ]] || fail "mounts left: $left"
after=$(snapshot)
[[ "$after" == "$before" ]] || fail "host differs after stop: $(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep '^[<>]' | paste -sd' ' -)"
step "nothing left: processes, mounts, netns, links, iptables, sysctls, cgroups, host paths as before"
step "PASS"
