#!/usr/bin/env bash
# Starts and stops a real, loopback-only Kubernetes control plane (etcd, kube-apiserver and
# any number of kube-schedulers wired to a scheduler extender) in a folder of its own, and, with
# --node-network, one real node (containerd, kubelet, kube-proxy) whose pods reach the API server
# through the kubernetes Service.
#
# Usage:
#   launch.sh start DIR [options]            etcd + kube-apiserver (+ a scheduler with --extender-url)
#       --bin-dir DIR          binaries to use (default: $CONTROLPLANE_BIN_DIR, else build-binaries.sh)
#       --timeout SECONDS      readiness bound for each component (default 120)
#       --keep-data            reuse DIR/etcd-data instead of starting from an empty store
#       --apiserver-arg ARG    extra kube-apiserver flag, e.g. --apiserver-arg=--v=4 (repeatable)
#       --etcd-arg ARG         extra etcd flag (repeatable)
#       --audit-components     log the requests of deploy/'s ServiceAccounts (Metadata level) to
#                              DIR/audit.log (tools/ker-rbac-usage reads it)
#       --node-network         (root) create bridge ker0 (10.213.0.1/24) and serve kube-apiserver on
#                              10.213.0.1 (host clients: 127.0.0.1, forwarded there by a nat
#                              rule that goes before the bridge), with what a real node needs (Node
#                              authorizer, ServiceAccount admission, kubernetes Service endpoints);
#                              takes the machine-wide lock /run/ker-node.lock until stop
#       --extender-url URL ... also start the scheduler named "default"; takes every
#                              start-scheduler option below
#   launch.sh start-scheduler DIR --extender-url URL [options]
#       --no-extender          instead of --extender-url: a plain kube-scheduler (e.g. the
#                              default-scheduler that places deploy/'s pods on a real node)
#       --name NAME            instance name, files DIR/scheduler-NAME.* (default: default)
#       --scheduler-name NAME  the profile's schedulerName (default: extended-resource-scheduler)
#       --node-cache-capable true|false   (default: false)
#       --extender-ca FILE     CA for an https extender (default: tlsConfig.insecure: true)
#       --extender-client-cert FILE / --extender-client-key FILE
#                              client certificate kube-scheduler presents (mutual TLS)
#       --filter-verb V / --prioritize-verb V / --bind-verb V / --preempt-verb V
#                              (defaults: filter, prioritize, bind, preempt; "" leaves a verb out)
#       --weight N             prioritize weight (default: 1)
#       --http-timeout DUR     (default: 5s)
#       --ignorable true|false (default: false)
#       --managed-resource NAME[:ignored]  extender only sees pods asking for NAME; ":ignored"
#                              sets ignoredByScheduler (repeatable; default: all pods)
#       --scheduler-arg ARG    extra kube-scheduler flag (repeatable)
#       --client-qps QPS / --client-burst N
#                              clientConnection.qps and .burst of kube-scheduler's API client
#                              (default: unset, kube-scheduler's 50 and 100)
#       --percentage-of-nodes-to-score N|default
#                              the profile's percentageOfNodesToScore (default: 100, as deploy/;
#                              "default" leaves it unset: kube-scheduler's adaptive percentage)
#       --timeout SECONDS
#   launch.sh stop-scheduler DIR [--name NAME | --all]
#   launch.sh start-controller-manager DIR [--timeout SECONDS] [--extra-controllers LIST]
#                              kube-controller-manager with the controllers a kubelet-less
#                              cluster can use (deployments, replicasets, garbage collection,
#                              namespaces, service accounts); with --node-network also
#                              root-ca-cert-publisher, podgc, job, nodelifecycle, endpointslice(s),
#                              daemonset, statefulset, resourcequota; --extra-controllers adds more, e.g.
#                              resourceclaim-controller (DRA: releases and deallocates the
#                              ResourceClaims of deleted pods, claims from templates)
#   launch.sh start-node DIR [options]     (start --node-network first) containerd + kubelet +
#                              kube-proxy as node NAME; starts kube-controller-manager if needed;
#                              waits for Ready and for kube-proxy to map 10.0.0.1:443 to the apiserver.
#                              The first node runs on the host; each further one (2 to 9) in network
#                              and mount namespaces of its own, as another machine would
#                              (lib/node_extra.sh), its env file DIR/nodes/NAME/env (the last stdout
#                              line); DIR/env's NODES lists the running nodes
#       --image-tar FILE       docker/OCI archive (podman save) imported into containerd's k8s.io
#                              namespace before the kubelet starts (repeatable)
#       --node-name NAME       (default: ker-node)
#       --cdi-spec-dir DIR     containerd's only CDI spec folder (default: DIR/node/cdi)
#       --taint KEY[=VALUE]:EFFECT   the node registers with this taint (repeatable)
#       --bind-dir SRC:TARGET  further nodes: the node sees folder SRC at TARGET (its hostPath
#                              volumes too), e.g. a node agent's node file of its own (repeatable)
#       --timeout SECONDS      bound for each step (default 120)
#   launch.sh load-image DIR FILE          import one more image tarball into the first node
#   launch.sh stop-node DIR [--node-name NAME]   deletes the node's pods, stops kube-proxy, kubelet,
#                              containerd and its shims, and undoes what they did to the host
#                              (mounts, netns, veths, iptables chains, sysctls, kubepods cgroups,
#                              fixed paths they created); the bridge stays until stop. Without
#                              NAME (or with the first node's) every node, the further ones first
#   launch.sh apply-deploy-rbac DIR          the ServiceAccounts, RBAC and Namespace of deploy/ (not
#                              its Deployments and DaemonSet: apply those yourself when a node runs)
#   launch.sh sa-kubeconfig DIR NAMESPACE SERVICEACCOUNT FILE [NODE]
#                              writes a kubeconfig holding a fresh token of that ServiceAccount;
#                              with NODE, bound to that Node (the token then names the node, as
#                              a node agent's must)
#   launch.sh restart-apiserver DIR [--timeout SECONDS]   same etcd, same port, same flags
#   launch.sh restart-kubelet DIR [--node-name NAME] [--timeout SECONDS]   stops a node's kubelet
#                              (SIGTERM: its pods' containers run on) and starts it again with the
#                              same command; waits for its healthz and the node Ready (default: the
#                              first node)
#   launch.sh restart-containerd DIR [--node-name NAME] [--timeout SECONDS]   kills a node's
#                              containerd (SIGKILL, a crash: the shims keep the containers) and
#                              starts it again the same way; waits until it serves and the node
#                              is Ready
#   launch.sh stop DIR                       stops everything started in DIR (stop-node first,
#                              the bridge and the machine lock last), waits for exit
#   launch.sh status DIR                     prints which components run; exit 1 if any is down
#
# Node network: nothing a pod sends leaves this machine. The bridge ker0 has no physical port;
# pods get an address in 10.213.0.0/24 and two routes only (that /24, and the Service CIDR
# 10.0.0.0/24 via the host side 10.213.0.1): no default route, no masquerading. The host does not
# forward (net.ipv4.ip_forward, its default and ker0's forwarding are 0: checked by start and
# start-node, recorded as IP_FORWARD; the launcher refuses to run otherwise), so a pod's packet is
# bridged to another pod or delivered to a local address (kube-apiserver on 10.213.0.1, reached
# through kube-proxy's DNAT of 10.0.0.1:443), never routed on. Pods' resolv.conf names 10.213.0.1
# (no DNS server there); containerd pulls through a proxy on a closed loopback port, so an image
# that was not imported fails instead of being fetched. (Privileged/hostNetwork pods could step
# around this; none is needed.)
#
# DIR/env holds KEY=VALUE lines for tests (see the env_set calls below); the last stdout line
# of start, start-scheduler and start-node is the path of that file. Logs are DIR/*.log.
# start-node adds NODE_NAME, NODE_IP, POD_CIDR, CONTAINERD_SOCKET, CONTAINERD_PID, KUBELET_PID,
# KUBE_PROXY_PID, KUBELET_LOG, CONTAINERD_LOG, KUBE_PROXY_LOG, CTR, NRI_SOCKET, DEVICE_PLUGIN_DIR,
# KUBELET_ROOT_DIR, PAUSE_IMAGE, NODE_STATE; --node-network adds NODE_NETWORK=true, BRIDGE,
# BRIDGE_IP, IP_FORWARD (0), KUBERNETES_SERVICE_HOST/PORT (10.0.0.1/443).
# APISERVER_URL is loopback, for host clients; APISERVER_NODE_URL is where nodes and pods reach
# it (the bridge address in node mode).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAUNCHER="$here/launch.sh"
DEFAULT_TIMEOUT=120
STOP_TIMEOUT=20

log() { printf '[launch] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$LAUNCHER"
}

# ---- DIR and its env file ------------------------------------------------------------------

# Values go into DIR/env unquoted and into YAML, so DIR is kept to plain path characters.
set_dir() { # DIR [create]
  [[ -n "${1:-}" ]] || die "missing DIR (try --help)"
  if [[ "${2:-}" == create ]]; then
    mkdir -p "$1"
  else
    [[ -d "$1" ]] || die "no folder '$1'"
  fi
  DIR=$(cd "$1" && pwd -P)
  [[ "$DIR" =~ ^[A-Za-z0-9_./+-]+$ ]] || die "DIR '$DIR' must consist of [A-Za-z0-9_./+-]"
  ENV_FILE="$DIR/env"
}

# Serializes launcher calls on one DIR (the env file is rewritten by several subcommands).
lock_dir() {
  exec 8>"$DIR/.launch.lock"
  flock -w 300 8 || die "another launch.sh holds $DIR/.launch.lock for more than 300 s"
}

env_get() {
  [[ -f "$ENV_FILE" ]] || return 0
  awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$ENV_FILE"
}

# env_set KEY VALUE [KEY VALUE]...: replaces the keys, atomically.
env_set() {
  local tmp keys=() i
  tmp=$(mktemp "$DIR/.env.XXXXXX")
  for ((i = 1; i <= $#; i += 2)); do keys+=("${!i}"); done
  {
    [[ ! -f "$ENV_FILE" ]] || awk -v ks="${keys[*]}" '
      BEGIN { n = split(ks, a, " "); for (i = 1; i <= n; i++) drop[a[i]] = 1 }
      { k = $0; sub(/=.*/, "", k); if (!(k in drop)) print }' "$ENV_FILE"
    while (($#)); do
      [[ "$2" != *$'\n'* ]] || die "newline in value of $1"
      printf '%s=%s\n' "$1" "$2"
      shift 2
    done
  } >"$tmp"
  mv "$tmp" "$ENV_FILE"
}

env_unset() {
  local tmp
  [[ -f "$ENV_FILE" ]] || return 0
  tmp=$(mktemp "$DIR/.env.XXXXXX")
  awk -v ks="$*" '
    BEGIN { n = split(ks, a, " "); for (i = 1; i <= n; i++) drop[a[i]] = 1 }
    { k = $0; sub(/=.*/, "", k); if (!(k in drop)) print }' "$ENV_FILE" >"$tmp"
  mv "$tmp" "$ENV_FILE"
}

# ---- processes -----------------------------------------------------------------------------

is_alive() { # pid: running and not a zombie
  local state
  [[ -n "${1:-}" && -r "/proc/$1/stat" ]] || return 1
  state=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# True when pid is alive and was started for DIR (every command line names a file in DIR),
# so a recycled pid is never signalled.
owns_pid() {
  local cmdline
  is_alive "$1" || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
  [[ "$cmdline" == *"$DIR/"* ]]
}

# launch NAME CMD...: runs CMD detached (own session, so a Ctrl-C meant for the caller does not
# reach it) with output appended to DIR/NAME.log; sets LAUNCHED_PID and writes DIR/NAME.pid.
launch() {
  local name=$1
  shift
  printf '\n==== %s: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$DIR/$name.log"
  # 8>&-: the child must not inherit (and so keep holding) the DIR lock.
  setsid "$@" </dev/null >>"$DIR/$name.log" 2>&1 8>&- &
  LAUNCHED_PID=$!
  printf '%s\n' "$LAUNCHED_PID" >"$DIR/$name.pid"
  # The command as launched (NUL-separated), for restart-containerd and restart-kubelet.
  printf '%s\0' "$@" >"$DIR/$name.cmd"
}

# stop_pid PID WHAT: TERM, bounded wait, then KILL and a second bounded wait.
stop_pid() {
  local pid=$1 what=$2 i
  if ! owns_pid "$pid"; then
    is_alive "$pid" && log "not stopping pid $pid ($what): it is not a process of $DIR"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    is_alive "$pid" || return 0
    sleep 0.1
  done
  log "$what (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    is_alive "$pid" || return 0
    sleep 0.1
  done
  die "$what (pid $pid) is still alive after SIGKILL"
}

stop_component() { # NAME (DIR/NAME.pid)
  local f="$DIR/$1.pid" pid
  [[ -f "$f" ]] || return 0
  pid=$(<"$f")
  stop_pid "$pid" "$1"
  rm -f "$f"
}

tail_log() { # NAME: the error lines and the tail of the last run's log
  local f="$DIR/$1.log" run
  [[ -f "$f" ]] || return 0
  run=$(awk '/^==== /{ buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$f")
  log "errors in the last run of $f:"
  grep -E '^(Error:|[EF][0-9]{4} |\{"level":"(error|fatal|panic)")' <<<"$run" | tail -n 10 | cut -c1-400 | sed 's/^/    /' >&2 || true
  log "last lines of $f:"
  tail -n 20 <<<"$run" | cut -c1-400 | sed 's/^/    /' >&2
}

# ---- ports ---------------------------------------------------------------------------------

# Any socket (listening or not) using local port $1 on this host's network namespace.
port_used() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v h="$hex" 'FNR > 1 { n = split($2, a, ":"); if (a[n] == h) { f = 1; exit } } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

port_listening() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v h="$hex" 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == h) { f = 1; exit } } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# Picks from 20000-32767, below Linux's ephemeral range (32768+), so outgoing connections never
# hold the port; a race with another process is caught by the bind-failure retry in callers.
PICKED_PORTS=()
pick_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM % 12768)))
    [[ " ${PICKED_PORTS[*]} " == *" $p "* ]] && continue
    port_used "$p" && continue
    PICKED_PORTS+=("$p")
    PORT=$p
    return 0
  done
  die "found no free loopback port in 200 tries"
}

wait_port_closed() { # port seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    port_listening "$1" || return 0
    sleep 0.1
  done
  return 1
}

# ---- readiness -----------------------------------------------------------------------------

# wait_ready PID NAME SECONDS CHECK...: polls CHECK until it succeeds (0), the process exits (2)
# or the time is up (1).
wait_ready() {
  local pid=$1 name=$2 secs=$3 deadline
  shift 3
  deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    "$@" >/dev/null 2>&1 && return 0
    is_alive "$pid" || return 2
    sleep 0.25
  done
  log "$name did not become ready within ${secs}s"
  return 1
}

bind_failed() { # NAME: did the last run in DIR/NAME.log fail for a taken port?
  awk '/^==== /{ s = "" } /address already in use/{ s = 1 } END { exit !s }' "$DIR/$1.log" 2>/dev/null
}

curl_admin() { # path
  curl -fsS --max-time 5 --connect-timeout 2 --cacert "$DIR/pki/ca.crt" \
    --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" "$(env_get APISERVER_URL)$1"
}

apiserver_ready() {
  [[ "$(curl_admin /readyz)" == ok ]] && curl_admin /api/v1/namespaces/default >/dev/null
}

etcd_healthy() { # url
  [[ "$(curl -fsS --max-time 5 --connect-timeout 2 "$1/health")" == *'"health":"true"'* ]]
}

scheduler_ready() { # url
  [[ "$(curl -fsS --max-time 5 --connect-timeout 2 --cacert "$DIR/pki/ca.crt" "$1/healthz")" == ok ]] &&
    [[ "$(curl -fsS --max-time 5 --connect-timeout 2 --cacert "$DIR/pki/ca.crt" "$1/readyz")" == ok ]]
}

# ---- certificates and kubeconfigs ----------------------------------------------------------

# sign NAME SUBJECT EXTENSIONS: an EC P-256 key and a 10-year certificate from the test CA.
sign() {
  local p="$DIR/pki"
  printf '%s\n' "$3" >"$p/$1.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
    -keyout "$p/$1.key" -out "$p/$1.csr" 2>/dev/null
  openssl x509 -req -in "$p/$1.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days 3650 -extfile "$p/$1.ext" -out "$p/$1.crt" 2>/dev/null
  rm -f "$p/$1.csr" "$p/$1.ext"
}

make_pki() {
  local p="$DIR/pki"
  rm -rf "$p"
  mkdir -m 700 "$p"
  (
    set -e
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj "/CN=kube-extended-resource test CA" -keyout "$p/ca.key" -out "$p/ca.crt" \
      -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature' 2>/dev/null
    # Also usable by a test extender served over https on loopback.
    sign serving '/CN=127.0.0.1' "$(printf '%s\n' 'basicConstraints=CA:FALSE' \
      'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc${SERVING_EXTRA_SANS:-}")"
    local client
    client=$(printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=clientAuth')
    sign admin '/O=system:masters/CN=kube-extended-resource-admin' "$client"
    sign scheduler '/CN=system:kube-scheduler' "$client"
    # kube-apiserver's identity towards the kubelet (logs, exec) on a real node.
    [[ -z "${SERVING_EXTRA_SANS:-}" ]] || sign apiserver-kubelet-client '/O=system:masters/CN=kube-apiserver-kubelet-client' "$client"
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$p/sa.key" 2>/dev/null
    openssl pkey -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
    # A bearer token for clients that find a header easier than a client certificate.
    printf '%s,kube-extended-resource-admin-token,ker-admin-token,"system:masters"\n' "$(openssl rand -hex 24)" >"$p/tokens.csv"
  ) || die "generating certificates in $p failed (openssl)"
}

b64() { base64 -w0 <"$1"; }

write_kubeconfig() { # FILE USER CERT KEY [SERVER (default: APISERVER_URL, loopback)]
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-extended-resource
  cluster:
    server: ${5:-$(env_get APISERVER_URL)}
    certificate-authority-data: $(b64 "$DIR/pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(b64 "$3")
    client-key-data: $(b64 "$4")
contexts:
- name: kube-extended-resource
  context:
    cluster: kube-extended-resource
    user: $2
current-context: kube-extended-resource
EOF
  chmod 600 "$1"
}

# ---- etcd and kube-apiserver ---------------------------------------------------------------

start_etcd() {
  local attempt client peer rc
  for attempt in 1 2 3; do
    pick_port
    client=$PORT
    pick_port
    peer=$PORT
    launch etcd "$BIN_DIR/etcd" --name kube-extended-resource --data-dir "$DIR/etcd-data" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "kube-extended-resource=http://127.0.0.1:$peer" --initial-cluster-state new \
      --unsafe-no-fsync --log-level warn "${ETCD_ARGS[@]}"
    env_set ETCD_PID "$LAUNCHED_PID" ETCD_URL "http://127.0.0.1:$client" ETCD_PEER_URL "http://127.0.0.1:$peer" \
      ETCD_DATA_DIR "$DIR/etcd-data" ETCD_LOG "$DIR/etcd.log"
    rc=0
    wait_ready "$LAUNCHED_PID" etcd "$TIMEOUT" etcd_healthy "http://127.0.0.1:$client" || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 2)) && bind_failed etcd; then
      log "etcd lost a port race (attempt $attempt); retrying on other ports"
      continue
    fi
    stop_component etcd
    tail_log etcd
    die "etcd did not start"
  done
  tail_log etcd
  die "etcd could not bind free ports in 3 attempts"
}

# The flags are saved so restart-apiserver brings back the very same server.
apiserver_args() { # port
  local port=$1
  # shellcheck disable=SC2054 # the commas are inside flag values
  APISERVER_ARGS=(
    --etcd-servers="$(env_get ETCD_URL)"
    --bind-address="$APISERVER_HOST" --advertise-address="$APISERVER_HOST" --secure-port="$port"
    --tls-cert-file="$DIR/pki/serving.crt" --tls-private-key-file="$DIR/pki/serving.key"
    --cert-dir="$DIR/apiserver-certs"
    --client-ca-file="$DIR/pki/ca.crt" --token-auth-file="$DIR/pki/tokens.csv"
    --service-account-issuer="https://$APISERVER_HOST:$port"
    --service-account-signing-key-file="$DIR/pki/sa.key" --service-account-key-file="$DIR/pki/sa.pub"
    # No controller-manager: nothing would create the default ServiceAccounts or Endpoints,
    # nor lift the node.kubernetes.io/not-ready taint that TaintNodesByCondition puts on every
    # new Node (hand-made Nodes would stay unschedulable).
    --service-cluster-ip-range=10.0.0.0/24
    --allow-privileged=true --profiling=false
    # Graceful shutdown then ends ~2s after in-flight requests drain; by default it waits up to
    # 60s for open watches (a running scheduler has some), which slows restart-apiserver and stop.
    --shutdown-send-retry-after=true
  )
  if node_mode; then
    # A real node: the Node authorizer (kubelets are system:node:NAME), NodeRestriction, the
    # ServiceAccount and TaintNodesByCondition admission plugins as in any cluster (the
    # controller-manager creates default ServiceAccounts and lifts the not-ready taint), the
    # kubernetes Service's endpoints, and a verified client identity towards the kubelet.
    # shellcheck disable=SC2054 # the commas are inside flag values
    APISERVER_ARGS+=(
      --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction
      --endpoint-reconciler-type=lease
      --kubelet-preferred-address-types=InternalIP,Hostname
      --kubelet-client-certificate="$DIR/pki/apiserver-kubelet-client.crt"
      --kubelet-client-key="$DIR/pki/apiserver-kubelet-client.key"
      --kubelet-certificate-authority="$DIR/pki/ca.crt"
    )
  else
    # shellcheck disable=SC2054
    APISERVER_ARGS+=(
      --authorization-mode=RBAC
      --disable-admission-plugins=ServiceAccount,TaintNodesByCondition
      --endpoint-reconciler-type=none
    )
  fi
  APISERVER_ARGS+=("${APISERVER_EXTRA[@]}")
  printf '%s\n' "${APISERVER_ARGS[@]}" >"$DIR/kube-apiserver.args"
}

# run_apiserver: starts kube-apiserver with DIR/kube-apiserver.args; returns wait_ready's code.
run_apiserver() {
  local args rc=0
  mapfile -t args <"$DIR/kube-apiserver.args"
  launch kube-apiserver "$BIN_DIR/kube-apiserver" "${args[@]}"
  env_set APISERVER_PID "$LAUNCHED_PID"
  wait_ready "$LAUNCHED_PID" kube-apiserver "$TIMEOUT" apiserver_ready || rc=$?
  return "$rc"
}

start_apiserver() {
  local attempt rc
  for attempt in 1 2 3; do
    pick_port
    # Where host clients reach it (loopback, also in node mode: node_loopback_rule) and where
    # the nodes and pods do.
    env_set APISERVER_PORT "$PORT" APISERVER_URL "https://127.0.0.1:$PORT" \
      APISERVER_NODE_URL "https://$APISERVER_HOST:$PORT" APISERVER_LOG "$DIR/kube-apiserver.log"
    if node_mode; then
      node_loopback_down
      node_loopback_up "$PORT"
    fi
    apiserver_args "$PORT"
    write_kubeconfig "$DIR/admin.kubeconfig" kube-extended-resource-admin "$DIR/pki/admin.crt" "$DIR/pki/admin.key"
    write_kubeconfig "$DIR/scheduler.kubeconfig" system:kube-scheduler "$DIR/pki/scheduler.crt" "$DIR/pki/scheduler.key"
    rc=0
    run_apiserver || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 2)) && bind_failed kube-apiserver; then
      log "kube-apiserver lost a port race (attempt $attempt); retrying on another port"
      continue
    fi
    stop_component kube-apiserver
    tail_log kube-apiserver
    die "kube-apiserver did not become ready"
  done
  tail_log kube-apiserver
  die "kube-apiserver could not bind a free port in 3 attempts"
}

resolve_bin_dir() {
  if [[ -z "$BIN_DIR" ]]; then
    BIN_DIR=${CONTROLPLANE_BIN_DIR:-}
  fi
  if [[ -z "$BIN_DIR" ]]; then
    log "binaries from build-binaries.sh (a first build takes minutes)"
    BIN_DIR=$("$here/build-binaries.sh" | tail -n1) || die "build-binaries.sh failed"
  fi
  local b
  for b in etcd kube-apiserver kube-scheduler; do
    [[ -x "$BIN_DIR/$b" ]] || die "no executable $BIN_DIR/$b"
  done
  BIN_DIR=$(cd "$BIN_DIR" && pwd -P)
}

any_running() {
  local f
  for f in "$DIR"/*.pid; do
    [[ -f "$f" ]] || continue
    owns_pid "$(<"$f")" && return 0
  done
  return 1
}

# Cleans up after a failed start: whatever this call started is stopped.
START_OK=false
on_start_exit() {
  local rc=$?
  if ! $START_OK && ((rc != 0)); then
    log "start failed; stopping what it started in $DIR"
    stop_all || true
  fi
  return "$rc"
}

cmd_start() {
  set_dir "${1:-}" create
  shift
  BIN_DIR='' TIMEOUT=$DEFAULT_TIMEOUT
  local keep_data=false sched=() node_network=false audit=false
  APISERVER_EXTRA=() ETCD_ARGS=()
  while (($#)); do
    case "$1" in
    --bin-dir) BIN_DIR=${2:?--bin-dir needs a value} && shift ;;
    --timeout) TIMEOUT=${2:?--timeout needs a value} && shift ;;
    --keep-data) keep_data=true ;;
    --node-network) node_network=true ;;
    --audit-components) audit=true ;;
    --apiserver-arg) APISERVER_EXTRA+=("${2:?--apiserver-arg needs a value}") && shift ;;
    --apiserver-arg=*) APISERVER_EXTRA+=("${1#*=}") ;;
    --etcd-arg) ETCD_ARGS+=("${2:?--etcd-arg needs a value}") && shift ;;
    --etcd-arg=*) ETCD_ARGS+=("${1#*=}") ;;
    --name | --scheduler-name | --node-cache-capable | --extender-url | --extender-ca | \
      --extender-client-cert | --extender-client-key | --filter-verb | \
      --prioritize-verb | --bind-verb | --preempt-verb | --weight | --http-timeout | --ignorable | \
      --managed-resource | --scheduler-arg | --client-qps | --client-burst | --percentage-of-nodes-to-score)
      (($# >= 2)) || die "$1 needs a value"
      sched+=("$1" "$2") && shift
      ;;
    --name=* | --scheduler-name=* | --node-cache-capable=* | --extender-url=* | --extender-ca=* | \
      --extender-client-cert=* | --extender-client-key=* | \
      --filter-verb=* | --prioritize-verb=* | --bind-verb=* | --preempt-verb=* | --weight=* | \
      --http-timeout=* | --ignorable=* | --managed-resource=* | --scheduler-arg=* | --client-qps=* | \
      --client-burst=* | --percentage-of-nodes-to-score=*)
      sched+=("${1%%=*}" "${1#*=}")
      ;;
    --bin-dir=* | --timeout=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" && continue ;;
    -h | --help) usage && exit 0 ;;
    *) die "start: unknown option '$1' (try --help)" ;;
    esac
    shift
  done
  [[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"
  if $audit; then
    cat >"$DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users:
  - system:serviceaccount:kube-system:extended-resource-scheduler-extender
  - system:serviceaccount:kube-system:extended-resource-controller
  - system:serviceaccount:kube-system:extended-resource-node-agent
- level: None
EOF
    APISERVER_EXTRA+=(--audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/audit.log")
  fi
  if ((${#sched[@]})) && [[ " ${sched[*]} " != *" --extender-url "* ]]; then
    die "scheduler options given without --extender-url"
  fi
  lock_dir
  any_running && die "a control plane is already running in $DIR (launch.sh stop $DIR first)"
  resolve_bin_dir

  trap on_start_exit EXIT
  # A node that was never stopped may have left mounts in DIR/node: never delete across them.
  [[ -z "$(mounts_under "$DIR")" ]] || die "mounts left under $DIR by an earlier node: launch.sh stop-node $DIR first"
  rm -f "$ENV_FILE" "$DIR"/*.pid "$DIR"/scheduler-*.yaml
  rm -rf "$DIR/node" "$DIR/nodes"
  $keep_data || rm -rf "$DIR/etcd-data"
  local k8s_version etcd_version
  k8s_version=$("$BIN_DIR/kube-apiserver" --version | awk '{ print $2 }')
  etcd_version=$("$BIN_DIR/etcd" --version | awk '/^etcd Version:/ { print "v" $3 }')
  env_set STATE starting CONTROLPLANE_DIR "$DIR" LAUNCHER "$LAUNCHER" BIN_DIR "$BIN_DIR" \
    KUBECTL "$BIN_DIR/kubectl" KUBERNETES_VERSION "$k8s_version" ETCD_VERSION "$etcd_version" \
    KUBECONFIG "$DIR/admin.kubeconfig" SCHEDULER_KUBECONFIG "$DIR/scheduler.kubeconfig" \
    CA_CERT "$DIR/pki/ca.crt" CA_KEY "$DIR/pki/ca.key" \
    ADMIN_CERT "$DIR/pki/admin.crt" ADMIN_KEY "$DIR/pki/admin.key" \
    SERVING_CERT "$DIR/pki/serving.crt" SERVING_KEY "$DIR/pki/serving.key" \
    SERVICE_CLUSTER_IP_RANGE 10.0.0.0/24 SCHEDULERS ''
  APISERVER_HOST=127.0.0.1 SERVING_EXTRA_SANS=''
  if $node_network; then
    node_network_up
    APISERVER_HOST=$NODE_HOST_IP
    SERVING_EXTRA_SANS=",IP:$NODE_HOST_IP,DNS:kubernetes.default.svc.cluster.local"
  fi
  make_pki
  env_set ADMIN_TOKEN "$(cut -d, -f1 "$DIR/pki/tokens.csv")"

  local t0=$SECONDS
  start_etcd
  start_apiserver
  env_set STATE running
  log "kube-apiserver $k8s_version ready at $(env_get APISERVER_URL) after $((SECONDS - t0))s (etcd $etcd_version at $(env_get ETCD_URL))"
  if ((${#sched[@]})); then
    start_scheduler "${sched[@]}"
  fi
  START_OK=true
  printf '%s\n' "$ENV_FILE"
}

# ---- schedulers ----------------------------------------------------------------------------

env_key() { # scheduler name -> SCHEDULER_<NAME>
  local k=${1^^}
  printf 'SCHEDULER_%s' "${k//-/_}"
}

yaml_str() { # a double-quoted YAML scalar
  local s=${1//\\/\\\\}
  printf '"%s"' "${s//\"/\\\"}"
}

check_bool() { [[ "$2" == true || "$2" == false ]] || die "$1 must be true or false, not '$2'"; }
# shellcheck source=lib/scheduler_checks.sh
source "$here/lib/scheduler_checks.sh"

start_scheduler() {
  local name=default profile=extended-resource-scheduler url='' node_cache=false ca='' client_cert='' client_key='' \
    filter=filter prioritize=prioritize bind=bind preempt=preempt weight=1 http_timeout=5s ignorable=false
  local managed=() extra=() no_extender=false qps='' burst='' percentage=100
  while (($#)); do
    if [[ "$1" == --no-extender ]]; then
      no_extender=true
      shift
      continue
    fi
    if [[ "$1" == --*=* ]]; then # --opt=value
      set -- "${1%%=*}" "${1#*=}" "${@:2}"
    fi
    (($# >= 2)) || die "$1 needs a value"
    case "$1" in
    --name) name=$2 ;;
    --scheduler-name) profile=$2 ;;
    --extender-url) url=$2 ;;
    --node-cache-capable) node_cache=$2 ;;
    --extender-ca) ca=$2 ;;
    --extender-client-cert) client_cert=$2 ;;
    --extender-client-key) client_key=$2 ;;
    --filter-verb) filter=$2 ;;
    --prioritize-verb) prioritize=$2 ;;
    --bind-verb) bind=$2 ;;
    --preempt-verb) preempt=$2 ;;
    --weight) weight=$2 ;;
    --http-timeout) http_timeout=$2 ;;
    --ignorable) ignorable=$2 ;;
    --managed-resource) managed+=("$2") ;;
    --scheduler-arg) extra+=("$2") ;;
    --client-qps) qps=$2 ;;
    --client-burst) burst=$2 ;;
    --percentage-of-nodes-to-score) percentage=$2 ;;
    --timeout) TIMEOUT=$2 ;;
    *) die "start-scheduler: unknown option '$1' (try --help)" ;;
    esac
    shift 2
  done
  [[ "$name" =~ ^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$ ]] || die "--name '$name' must be a short DNS label"
  if $no_extender; then
    [[ -z "$url" ]] || die "--no-extender and --extender-url exclude each other"
  else
    [[ "$url" =~ ^https?://[^[:space:]\"\\]+$ ]] || die "--extender-url must be an http(s) URL, got '$url'"
  fi
  check_bool --node-cache-capable "$node_cache"
  check_bool --ignorable "$ignorable"
  [[ "$weight" =~ ^[1-9][0-9]*$ ]] || die "--weight must be a positive integer"
  [[ -z "$qps" || "$qps" =~ ^[1-9][0-9]*(\.[0-9]+)?$ ]] || die "--client-qps must be a positive number"
  [[ -z "$burst" || "$burst" =~ ^[1-9][0-9]*$ ]] || die "--client-burst must be a positive integer"
  check_percentage_of_nodes_to_score --percentage-of-nodes-to-score "$percentage"
  [[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds"
  [[ -z "$ca" || -r "$ca" ]] || die "--extender-ca '$ca' is not readable"
  [[ -z "$ca" ]] || ca=$(cd "$(dirname "$ca")" && printf '%s/%s' "$(pwd -P)" "$(basename "$ca")")
  [[ -z "$client_cert" && -z "$client_key" ]] || [[ -r "$client_cert" && -r "$client_key" ]] ||
    die "--extender-client-cert and --extender-client-key go together and must be readable"
  if [[ "$(env_get STATE)" != running ]] || ! owns_pid "$(env_get APISERVER_PID)"; then
    die "no running control plane in $DIR (launch.sh start $DIR first)"
  fi
  BIN_DIR=$(env_get BIN_DIR)
  local key f="$DIR/scheduler-$name" m
  key=$(env_key "$name")
  [[ ! -f "$f.pid" ]] || ! owns_pid "$(<"$f.pid")" || die "scheduler '$name' is already running in $DIR"

  {
    printf '%s\n' 'apiVersion: kubescheduler.config.k8s.io/v1' 'kind: KubeSchedulerConfiguration' \
      'leaderElection:' '  leaderElect: false' 'clientConnection:' "  kubeconfig: $(yaml_str "$DIR/scheduler.kubeconfig")"
    [[ -z "$qps" ]] || printf '  qps: %s\n' "$qps"
    [[ -z "$burst" ]] || printf '  burst: %s\n' "$burst"
    printf '%s\n' 'profiles:' "- schedulerName: $(yaml_str "$profile")"
    [[ "$percentage" == default ]] || printf '  percentageOfNodesToScore: %s\n' "$percentage"
  } >"$f.yaml"
  $no_extender || {
    printf '%s\n' 'extenders:' "- urlPrefix: $(yaml_str "$url")"
    [[ -z "$filter" ]] || printf '  filterVerb: %s\n' "$(yaml_str "$filter")"
    [[ -z "$prioritize" ]] || printf '  prioritizeVerb: %s\n' "$(yaml_str "$prioritize")"
    [[ -z "$bind" ]] || printf '  bindVerb: %s\n' "$(yaml_str "$bind")"
    [[ -z "$preempt" ]] || printf '  preemptVerb: %s\n' "$(yaml_str "$preempt")"
    printf '  weight: %s\n  nodeCacheCapable: %s\n  httpTimeout: %s\n  ignorable: %s\n' \
      "$weight" "$node_cache" "$(yaml_str "$http_timeout")" "$ignorable"
    if [[ "$url" == https://* ]]; then
      printf '  enableHTTPS: true\n  tlsConfig:\n'
      if [[ -n "$ca" ]]; then
        printf '    caFile: %s\n' "$(yaml_str "$ca")"
      else
        printf '    insecure: true\n'
      fi
      if [[ -n "$client_cert" ]]; then
        printf '    certFile: %s\n    keyFile: %s\n' "$(yaml_str "$client_cert")" "$(yaml_str "$client_key")"
      fi
    fi
    if ((${#managed[@]})); then
      printf '  managedResources:\n'
      for m in "${managed[@]}"; do
        printf '  - name: %s\n' "$(yaml_str "${m%:ignored}")"
        [[ "$m" != *:ignored ]] || printf '    ignoredByScheduler: true\n'
      done
    fi
  } >>"$f.yaml"

  local attempt rc port
  for attempt in 1 2 3; do
    pick_port
    port=$PORT
    launch "scheduler-$name" "$BIN_DIR/kube-scheduler" --config="$f.yaml" \
      --bind-address=127.0.0.1 --secure-port="$port" \
      --tls-cert-file="$DIR/pki/serving.crt" --tls-private-key-file="$DIR/pki/serving.key" \
      --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics --v=2 "${extra[@]}"
    env_set "${key}_PID" "$LAUNCHED_PID" "${key}_URL" "https://127.0.0.1:$port" "${key}_CONFIG" "$f.yaml" \
      "${key}_LOG" "$f.log" "${key}_PROFILE" "$profile"
    rc=0
    wait_ready "$LAUNCHED_PID" "scheduler $name" "$TIMEOUT" scheduler_ready "https://127.0.0.1:$port" || rc=$?
    if ((rc == 0)); then
      local names
      names=$(env_get SCHEDULERS)
      [[ ",$names," == *",$name,"* ]] || names=${names:+$names,}$name
      env_set SCHEDULERS "$names"
      log "kube-scheduler '$name' (profile $profile, extender ${url:-none}) ready at https://127.0.0.1:$port"
      return 0
    fi
    if ((rc == 2)) && bind_failed "scheduler-$name"; then
      log "scheduler $name lost a port race (attempt $attempt); retrying on another port"
      continue
    fi
    stop_component "scheduler-$name"
    env_unset "${key}_PID" "${key}_URL" "${key}_CONFIG" "${key}_LOG" "${key}_PROFILE"
    tail_log "scheduler-$name"
    die "kube-scheduler '$name' did not become ready"
  done
  tail_log "scheduler-$name"
  die "kube-scheduler '$name' could not bind a free port in 3 attempts"
}

# ---- kube-controller-manager and service-account credentials -------------------------------

start_controller_manager() {
  local port rc attempt
  [[ "$(env_get STATE)" == running ]] || die "no running control plane in $DIR (launch.sh start $DIR first)"
  ! owns_pid "$(env_get CONTROLLER_MANAGER_PID)" || die "kube-controller-manager already runs in $DIR"
  BIN_DIR=$(env_get BIN_DIR)
  [[ -x "$BIN_DIR/kube-controller-manager" ]] || die "no kube-controller-manager in $BIN_DIR"
  local controllers=deployment,replicaset,garbagecollector,namespace,serviceaccount,serviceaccount-token
  [[ -z "${EXTRA_CONTROLLERS:-}" ]] || controllers+=",$EXTRA_CONTROLLERS"
  # kube-root-ca.crt ConfigMaps (projected ServiceAccount volumes), pods of a real node, its
  # Ready condition and not-ready taint, Service endpoints for kube-proxy.
  ! node_mode ||
    controllers+=,root-ca-cert-publisher,podgc,job,nodelifecycle,endpointslice,endpointslicemirroring,daemonset,statefulset,resourcequota
  for attempt in 1 2 3; do
    pick_port
    port=$PORT
    launch kube-controller-manager "$BIN_DIR/kube-controller-manager" \
      --kubeconfig="$(env_get KUBECONFIG)" --leader-elect=false \
      --controllers="$controllers" \
      --service-account-private-key-file="$DIR/pki/sa.key" --root-ca-file="$DIR/pki/ca.crt" \
      --bind-address=127.0.0.1 --secure-port="$port" \
      --tls-cert-file="$DIR/pki/serving.crt" --tls-private-key-file="$DIR/pki/serving.key" \
      --authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics --v=1
    env_set CONTROLLER_MANAGER_PID "$LAUNCHED_PID" CONTROLLER_MANAGER_URL "https://127.0.0.1:$port" \
      CONTROLLER_MANAGER_LOG "$DIR/kube-controller-manager.log"
    rc=0
    wait_ready "$LAUNCHED_PID" kube-controller-manager "$TIMEOUT" controller_manager_ready \
      "https://127.0.0.1:$port" || rc=$?
    if ((rc == 0)); then
      log "kube-controller-manager ready at https://127.0.0.1:$port"
      return 0
    fi
    if ((rc == 2)) && bind_failed kube-controller-manager; then
      continue
    fi
    break
  done
  stop_component kube-controller-manager
  tail_log kube-controller-manager
  die "kube-controller-manager did not become ready"
}

controller_manager_ready() { # url
  [[ "$(curl -fsS --max-time 5 --connect-timeout 2 --cacert "$DIR/pki/ca.crt" "$1/healthz")" == ok ]]
}

cmd_start_controller_manager() {
  set_dir "${1:-}"
  shift
  TIMEOUT=$DEFAULT_TIMEOUT EXTRA_CONTROLLERS=''
  while (($#)); do
    case "$1" in
    --timeout) TIMEOUT=${2:?--timeout needs a value} && shift ;;
    --timeout=*) TIMEOUT=${1#*=} ;;
    --extra-controllers) EXTRA_CONTROLLERS=${2:?--extra-controllers needs a value} && shift ;;
    --extra-controllers=*) EXTRA_CONTROLLERS=${1#*=} ;;
    *) die "start-controller-manager: unknown option '$1' (try --help)" ;;
    esac
    shift
  done
  lock_dir
  start_controller_manager
  printf '%s\n' "$ENV_FILE"
}

# The components then run as they would in a cluster: with sa-kubeconfig's tokens and exactly
# the rights deploy/ grants them.
cmd_apply_deploy_rbac() {
  set_dir "${1:-}"
  (($# == 1)) || die "usage: apply-deploy-rbac DIR"
  local f
  for f in "$here/../../deploy/extender.yaml" "$here/../../deploy/deployment.yaml" \
    "$here/../../deploy/node-agent.yaml"; do
    awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" } !/(^|\n)kind: (Deployment|DaemonSet)\n/' "$f" |
      "$(env_get BIN_DIR)/kubectl" --kubeconfig "$(env_get KUBECONFIG)" apply -f - >/dev/null ||
      die "applying the ServiceAccounts and RBAC of $f failed"
  done
}

# A token from the TokenRequest API, so a component runs with exactly the rights its
# ServiceAccount's RBAC grants.
cmd_sa_kubeconfig() {
  set_dir "${1:-}"
  (($# == 4 || $# == 5)) || die "usage: sa-kubeconfig DIR NAMESPACE SERVICEACCOUNT FILE [NODE]"
  local ns=$2 sa=$3 out=$4 node=${5:-} token bound=() kubectl
  kubectl=("$(env_get BIN_DIR)/kubectl" --kubeconfig "$(env_get KUBECONFIG)")
  if [[ -n "$node" ]]; then
    local uid
    uid=$("${kubectl[@]}" get node "$node" -o jsonpath='{.metadata.uid}') ||
      die "no node $node to bind the token of $ns/$sa to"
    bound=(--bound-object-kind Node --bound-object-name "$node" --bound-object-uid "$uid")
  fi
  token=$("${kubectl[@]}" create token "$sa" -n "$ns" --duration=24h "${bound[@]}") ||
    die "could not create a token for serviceaccount $ns/$sa"
  (
    umask 077
    cat >"$out" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kube-extended-resource
  cluster:
    server: $(env_get APISERVER_URL)
    certificate-authority-data: $(b64 "$DIR/pki/ca.crt")
users:
- name: $ns-$sa
  user:
    token: $token
contexts:
- name: kube-extended-resource
  context:
    cluster: kube-extended-resource
    user: $ns-$sa
    namespace: $ns
current-context: kube-extended-resource
KUBECONFIG
  )
  printf '%s\n' "$out"
}

cmd_start_scheduler() {
  set_dir "${1:-}"
  shift
  TIMEOUT=$DEFAULT_TIMEOUT
  lock_dir
  start_scheduler "$@"
  printf '%s\n' "$ENV_FILE"
}

stop_scheduler() { # name
  local key names
  key=$(env_key "$1")
  stop_component "scheduler-$1"
  env_unset "${key}_PID" "${key}_URL" "${key}_CONFIG" "${key}_LOG" "${key}_PROFILE"
  names=$(env_get SCHEDULERS)
  names=$(printf '%s' "$names" | tr ',' '\n' | grep -vx -- "$1" | paste -sd, -) || true
  [[ ! -f "$ENV_FILE" ]] || env_set SCHEDULERS "$names"
}

all_scheduler_names() {
  local f n
  for f in "$DIR"/scheduler-*.pid; do
    [[ -f "$f" ]] || continue
    n=${f##*/scheduler-}
    printf '%s\n' "${n%.pid}"
  done
}

cmd_stop_scheduler() {
  set_dir "${1:-}"
  shift
  local name=default all=false n
  while (($#)); do
    case "$1" in
    --name) name=${2:?--name needs a value} && shift ;;
    --name=*) name=${1#*=} ;;
    --all) all=true ;;
    *) die "stop-scheduler: unknown option '$1'" ;;
    esac
    shift
  done
  lock_dir
  if $all; then
    for n in $(all_scheduler_names); do stop_scheduler "$n"; done
  else
    [[ -f "$DIR/scheduler-$name.pid" ]] || log "no scheduler '$name' in $DIR"
    stop_scheduler "$name"
  fi
}

# ---- the node (start --node-network, start-node, stop-node) ----------------------------------
for lib in node_network node_config node_start node_stop node_extra; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

# ---- restart, stop, status -----------------------------------------------------------------

# Reads a command's one option, --timeout SECONDS, into TIMEOUT ($DEFAULT_TIMEOUT without it).
timeout_option_only() {
  local cmd=$1
  shift
  TIMEOUT=$DEFAULT_TIMEOUT
  while (($#)); do
    case "$1" in
    --timeout) TIMEOUT=${2:?--timeout needs a value} && shift ;;
    --timeout=*) TIMEOUT=${1#*=} ;;
    *) die "$cmd: unknown option '$1'" ;;
    esac
    shift
  done
}

cmd_restart_apiserver() {
  set_dir "${1:-}"
  shift
  timeout_option_only restart-apiserver "$@"
  lock_dir
  [[ "$(env_get STATE)" == running && -f "$DIR/kube-apiserver.args" ]] || die "no running control plane in $DIR"
  owns_pid "$(env_get ETCD_PID)" || die "etcd of $DIR is not running"
  BIN_DIR=$(env_get BIN_DIR)
  local port t0=$SECONDS rc=0
  port=$(env_get APISERVER_PORT)
  stop_component kube-apiserver
  # The same port is reused, so wait until the old listener is gone.
  wait_port_closed "$port" 30 || die "port $port still listening 30s after kube-apiserver stopped"
  run_apiserver || rc=$?
  if ((rc != 0)); then
    tail_log kube-apiserver
    ((rc == 2)) && bind_failed kube-apiserver && log "port $port was taken by another process meanwhile"
    die "kube-apiserver did not come back (the rest of $DIR keeps running; launch.sh stop $DIR cleans up)"
  fi
  log "kube-apiserver restarted on port $port in $((SECONDS - t0))s"
}

# restart-kubelet and restart-containerd: the node's daemon stopped (the kubelet with SIGTERM,
# containerd with SIGKILL, as a crash: the shims keep its containers running) and started again
# with the command it was launched with; waits until it serves again and the node is Ready.
cmd_restart_node_daemon() { # kubelet|containerd DIR [--node-name NAME] [--timeout SECONDS]
  local daemon=$1 name='' t0=$SECONDS rc=0 comp key pid args i port
  set_dir "${2:-}"
  shift 2
  TIMEOUT=$DEFAULT_TIMEOUT
  while (($#)); do
    case "$1" in
    --node-name) name=${2:?--node-name needs a value} && shift ;;
    --node-name=*) name=${1#*=} ;;
    --timeout) TIMEOUT=${2:?--timeout needs a value} && shift ;;
    --timeout=*) TIMEOUT=${1#*=} ;;
    *) die "restart-$daemon: unknown option '$1'" ;;
    esac
    shift
  done
  lock_dir
  key=${daemon^^}_PID
  [[ -n "$name" ]] || name=$(env_get NODE_NAME)
  if [[ "$name" == "$(env_get NODE_NAME)" ]]; then
    [[ "$(env_get NODE_STATE)" == running ]] || die "no running node in $DIR"
    comp=$daemon
    pid=$(env_get "$key")
  else
    [[ "$(extra_env_get "$name" NODE_STATE)" == running ]] || die "no running node $name in $DIR"
    comp=nodes/$name/$daemon
    pid=$(extra_env_get "$name" "$key")
    local NODE_CONTAINERD_SOCKET
    NODE_CONTAINERD_SOCKET=$(extra_env_get "$name" CONTAINERD_SOCKET)
  fi
  owns_pid "$pid" || die "the $daemon of node $name is not running"
  [[ -s "$DIR/$comp.cmd" ]] || die "no $DIR/$comp.cmd (started by an older launch.sh?)"
  mapfile -d '' -t args <"$DIR/$comp.cmd"
  if [[ "$daemon" == containerd ]]; then
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do is_alive "$pid" || break; sleep 0.1; done
    rm -f "$DIR/$comp.pid"
  else
    stop_component "$comp"
    # The first node's kubelet listens on host ports: wait until they are free again.
    if [[ "$comp" == kubelet ]]; then
      for port in $(env_get KUBELET_PORT) $(env_get KUBELET_HEALTHZ_URL | sed 's/.*:\([0-9]*\)\/.*/\1/'); do
        wait_port_closed "$port" 30 || die "port $port still listening 30s after the kubelet stopped"
      done
    fi
  fi
  launch "$comp" "${args[@]}"
  if [[ "$comp" == */* ]]; then extra_env_set "$name" "$key" "$LAUNCHED_PID"; else env_set "$key" "$LAUNCHED_PID"; fi
  if [[ "$daemon" == containerd ]]; then
    wait_ready "$LAUNCHED_PID" containerd "$TIMEOUT" ctr_node version || rc=$?
  elif [[ "$comp" == kubelet ]]; then
    wait_ready "$LAUNCHED_PID" kubelet "$TIMEOUT" kubelet_healthy "$(env_get KUBELET_HEALTHZ_URL)" || rc=$?
  else
    wait_ready "$LAUNCHED_PID" kubelet "$TIMEOUT" kubelet_healthy http://127.0.0.1:10248/healthz in_node_net "$name" || rc=$?
  fi
  ((rc == 0)) || { tail_log "$comp"; die "the $daemon of node $name did not come back"; }
  BIN_DIR=$(env_get BIN_DIR)
  wait_ready "$LAUNCHED_PID" "node $name" "$TIMEOUT" node_ready "$name" || rc=$?
  ((rc == 0)) || { tail_log "$comp"; die "node $name is not Ready after its $daemon restarted"; }
  log "the $daemon of node $name restarted in $((SECONDS - t0))s"
}

stop_all() {
  local n port rc=0
  stop_extra_nodes || rc=1
  [[ ! -d "$DIR/node" ]] || stop_node || rc=1
  for n in $(all_scheduler_names); do stop_scheduler "$n"; done
  stop_component kube-controller-manager
  env_unset CONTROLLER_MANAGER_PID
  port=$(env_get APISERVER_PORT)
  stop_component kube-apiserver
  stop_component etcd
  env_unset APISERVER_PID ETCD_PID
  [[ ! -f "$ENV_FILE" ]] || env_set STATE stopped
  for port in $port $(env_get ETCD_URL | sed 's/.*://') $(env_get ETCD_PEER_URL | sed 's/.*://'); do
    wait_port_closed "$port" 10 || log "port $port is still listening after stop"
  done
  # After kube-apiserver, which listens on the bridge's address.
  node_network_down
  return "$rc"
}

cmd_stop() {
  if [[ -n "${1:-}" && ! -d "$1" ]]; then
    log "no folder '$1': nothing to stop"
    return 0
  fi
  set_dir "${1:-}"
  (($# <= 1)) || die "stop takes only DIR"
  lock_dir
  stop_all || die "stopped, but not everything of the node could be undone (see above)"
  log "stopped the control plane in $DIR"
}

cmd_status() {
  set_dir "${1:-}"
  local ok=0 f name pid
  local optional=''
  [[ ! -f "$DIR/kube-controller-manager.pid" ]] || optional=kube-controller-manager
  [[ ! -f "$DIR/kubelet.pid" ]] || optional+=" containerd kubelet kube-proxy"
  for name in $(extra_node_names); do
    [[ "$(extra_env_get "$name" NODE_STATE)" == stopped ]] || optional+=" nodes/$name/containerd nodes/$name/kubelet nodes/$name/kube-proxy"
  done
  for name in etcd kube-apiserver $optional $(all_scheduler_names | sed 's/^/scheduler-/'); do
    f="$DIR/$name.pid"
    pid=$(cat "$f" 2>/dev/null || true)
    if owns_pid "$pid"; then
      printf '%-32s running (pid %s)\n' "$name" "$pid"
    else
      printf '%-32s not running\n' "$name"
      ok=1
    fi
  done
  return "$ok"
}

main() {
  local cmd=${1:-}
  (($#)) && shift
  case "$cmd" in
  start) cmd_start "$@" ;;
  start-scheduler) cmd_start_scheduler "$@" ;;
  stop-scheduler) cmd_stop_scheduler "$@" ;;
  start-controller-manager) cmd_start_controller_manager "$@" ;;
  start-node) cmd_start_node "$@" ;;
  load-image) cmd_load_image "$@" ;;
  stop-node) cmd_stop_node "$@" ;;
  apply-deploy-rbac) cmd_apply_deploy_rbac "$@" ;;
  sa-kubeconfig) cmd_sa_kubeconfig "$@" ;;
  restart-apiserver) cmd_restart_apiserver "$@" ;;
  restart-kubelet) cmd_restart_node_daemon kubelet "$@" ;;
  restart-containerd) cmd_restart_node_daemon containerd "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  -h | --help | help) usage ;;
  *)
    usage >&2
    exit 2
    ;;
  esac
}

main "$@"
