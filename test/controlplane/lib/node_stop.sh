# shellcheck shell=bash
# stop-node: stops the node and undoes what it did to the host.
# Sourced by launch.sh; uses its helpers (log, die, env_get, env_set, launch, ...).

# ---- stop-node: leave nothing behind -------------------------------------------------------

# Mount points (from /proc/self/mountinfo) at or under any of the given paths, deepest first.
mounts_under() {
  awk -v list="$*" 'BEGIN { n = split(list, p, " ") }
    { m = $5; gsub(/\\040/, " ", m); for (i = 1; i <= n; i++) if (m == p[i] || index(m, p[i] "/") == 1) { print m; break } }' \
    /proc/self/mountinfo | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2- | uniq
}

unmount_under() { # paths...
  local i m left
  for ((i = 0; i < 5; i++)); do
    left=$(mounts_under "$@")
    [[ -n "$left" ]] || return 0
    while IFS= read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done <<<"$left"
  done
  left=$(mounts_under "$@")
  [[ -z "$left" ]] || log "mounts left under $*: $(paste -sd' ' <<<"$left")"
  [[ -z "$left" ]]
}

kubepods_cgroups() { # every kubepods cgroup directory, deepest first
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -d "${h}kubepods" ]] && find "${h}kubepods" -depth -type d
  done
  return 0
}

# Kills every process in the cgroup directories LISTER prints (container processes, whoever
# started them).
kill_cgroup_processes() { # LISTER [ARG]
  local i pids
  for ((i = 0; i < 50; i++)); do
    pids=$("$@" | sed 's|$|/cgroup.procs|' | xargs -r cat 2>/dev/null | sort -u | paste -sd' ' -)
    [[ -n "$pids" ]] || return 0
    # shellcheck disable=SC2086 # a list of pids
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  log "processes still in the cgroups of $*: $pids"
  return 1
}

kill_pod_processes() { kill_cgroup_processes kubepods_cgroups; }

# Processes whose command line names FOLDER (a node's folder: its daemons, containerd's shims
# with -address FOLDER/...).
processes_naming() { # FOLDER
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    [[ "$cmd" == *"$1"* ]] && printf '%s\n' "${p#/proc/}"
  done
  return 0
}

# TERM, then KILL, every process naming FOLDER but this script.
stop_processes_naming() { # FOLDER
  local i pids
  for ((i = 0; i < 100; i++)); do
    pids=$(processes_naming "$1" | grep -vx "$$" | paste -sd' ' -)
    [[ -n "$pids" ]] || return 0
    # shellcheck disable=SC2086
    if ((i < 30)); then kill -TERM $pids 2>/dev/null || true; else kill -KILL $pids 2>/dev/null || true; fi
    sleep 0.1
  done
  log "processes of $1 still alive: $pids"
  return 1
}

# Deletes rules jumping to, and the chains named, KUBE-* and CNI-* in every table.
remove_kube_chains() { # iptables|ip6tables
  local save="$1-save" restore="$1-restore" script
  command -v "$save" >/dev/null || return 0
  script=$("$save" 2>/dev/null | awk '
    /^\*/ { tbl = $0; n = 0; next }
    /^:(KUBE|CNI)-/ { c = substr($1, 2); chains[tbl] = chains[tbl] c " "; has[tbl] = 1; next }
    /^-A / && ($2 !~ /^(KUBE|CNI)-/) && / -j (KUBE|CNI)-/ { sub(/^-A /, "-D "); dels[tbl] = dels[tbl] $0 "\n"; has[tbl] = 1; next }
    END {
      for (t in has) {
        print t; printf "%s", dels[t]
        k = split(chains[t], cs, " "); for (i = 1; i <= k; i++) print "-F " cs[i]
        for (i = 1; i <= k; i++) print "-X " cs[i]
        print "COMMIT"
      }
    }')
  [[ -n "$script" ]] || return 0
  "$restore" --noflush <<<"$script" || log "$restore could not remove every KUBE-/CNI- chain"
}

# "FAMILY TABLE" lines for the iptables tables that exist (ip filter, ip6 nat, ...).
iptables_tables() {
  { iptables-save 2>/dev/null | sed -n 's/^\*/ip /p'; ip6tables-save 2>/dev/null | sed -n 's/^\*/ip6 /p'; } | sort -u
}

# Deletes the tables iptables-nft created during the run (kube-proxy's chains need filter, nat,
# mangle) once they are empty again: built-in chains with policy ACCEPT, no rule, no other chain.
remove_new_empty_tables() { # file listing the tables that existed before
  local fam tbl save
  command -v nft >/dev/null || { log "no nft (Debian nftables): empty iptables tables stay"; return 0; }
  while read -r fam tbl; do
    grep -qx "$fam $tbl" "$1" && continue
    save=iptables-save
    [[ "$fam" == ip6 ]] && save=ip6tables-save
    "$save" -t "$tbl" 2>/dev/null | grep -Ev '^(#|\*|COMMIT$|:[A-Z]+ ACCEPT \[)' | grep -q . && continue
    nft delete table "$fam" "$tbl" 2>/dev/null || log "could not delete the empty $fam $tbl table"
  done < <(iptables_tables)
}

stop_node() {
  local n="$DIR/node" name deadline p s v left=0
  [[ -d "$n" && "$(env_get NODE_STATE)" != stopped ]] || return 0
  name=$(env_get NODE_NAME)
  env_set NODE_STATE stopping
  # 1. Pods first, while the kubelet still tears them down properly (CNI DEL, volumes).
  if [[ -n "$name" ]] && owns_pid "$(env_get KUBELET_PID)" && owns_pid "$(env_get APISERVER_PID)"; then
    # Cordoned first, so the replacements a ReplicaSet makes are not placed here meanwhile.
    kubectl_admin cordon "$name" >/dev/null 2>&1 || true
    kubectl_admin delete pods --all-namespaces --field-selector "spec.nodeName=$name" --grace-period=1 --wait=false >/dev/null 2>&1 || true
    deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
      [[ -z "$(kubectl_admin get pods --all-namespaces --field-selector "spec.nodeName=$name" -o name 2>/dev/null)" ]] && break
      sleep 0.5
    done
  fi
  # 2. The node's daemons, then whatever they left running.
  stop_component kube-proxy
  stop_component kubelet
  kill_pod_processes || left=1
  stop_component containerd
  stop_processes_naming "$DIR/node/" || left=1
  kill_pod_processes || left=1
  # 3. Mounts: the kubelet's bind mount of its root dir and pod volumes, container rootfs
  #    overlays, sandbox shm, network-namespace files.
  # (netns_mounts_under_state_dir keeps the pods' network namespaces under DIR/node, so
  # /run/netns, which podman and others use too, is never touched.)
  unmount_under "$n" /run/containerd /var/lib/kubelet || left=1
  # 4. Cgroups (empty once the processes are gone; retried while the kernel lets go of them).
  for ((p = 0; p < 50; p++)); do
    kubepods_cgroups | xargs -r rmdir 2>/dev/null || true
    [[ -z "$(kubepods_cgroups)" ]] && break
    sleep 0.1
  done
  [[ -z "$(kubepods_cgroups)" ]] || { log "kubepods cgroups left: $(kubepods_cgroups | head -n 3 | paste -sd' ' -)"; left=1; }
  # 5. Network: veths still on the bridge (their netns is gone, so normally none), iptables.
  if ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    for p in $(ip -o link show master "$NODE_BRIDGE" 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
      ip link del "$p" 2>/dev/null || true
    done
  fi
  if [[ -x "$(env_get BIN_DIR)/kube-proxy" ]] && [[ -f "$n/kube-proxy.yaml" ]]; then
    timeout 60 "$(env_get BIN_DIR)/kube-proxy" --cleanup --v=0 >>"$DIR/kube-proxy.log" 2>&1 || true
  fi
  remove_kube_chains iptables
  remove_kube_chains ip6tables
  [[ ! -f "$n/tables-before" ]] || remove_new_empty_tables "$n/tables-before"
  # 6. Sysctls the kubelet changed, back to the recorded values.
  if [[ -f "$n/saved-sysctls" ]]; then
    while IFS='=' read -r s v; do
      [[ -n "$s" && "$(sysctl_get "$s")" != "$v" ]] || continue
      printf '%s' "$v" >"/proc/sys/${s//.//}" || { log "could not restore $s=$v"; left=1; }
    done <"$n/saved-sysctls"
    ((left)) || rm -f "$n/saved-sysctls"
  fi
  # 7. Fixed host paths that did not exist before start-node (never across a mount).
  if [[ -f "$n/created-paths" ]]; then
    while IFS= read -r p; do
      [[ -e "$p" || -L "$p" ]] || continue
      if [[ -n "$(mounts_under "$p")" ]]; then
        log "not removing $p: something is still mounted under it"
        left=1
        continue
      fi
      rm -rf --one-file-system "$p"
    done <"$n/created-paths"
    ((left)) || rm -f "$n/created-paths" "$n/tables-before"
  fi
  env_unset "${NODE_KEYS[@]}"
  env_set NODE_STATE stopped
  ((left == 0)) || { log "stop-node could not undo everything (see above)"; return 1; }
}

cmd_stop_node() {
  set_dir "${1:-}"
  shift
  local name=''
  while (($#)); do
    case "$1" in
    --node-name) name=${2:?--node-name needs a value} && shift ;;
    --node-name=*) name=${1#*=} ;;
    *) die "stop-node: unknown option '$1' (try --help)" ;;
    esac
    shift
  done
  lock_dir
  if [[ -n "$name" && "$name" != "$(env_get NODE_NAME)" ]]; then
    [[ -f "$(extra_node_dir "$name")/env" ]] || die "no node $name in $DIR"
    stop_extra_node "$name" || die "stop-node $name left something behind"
    log "stopped node $name of $DIR"
    return 0
  fi
  # The first node last: the further ones use host folders it made.
  stop_extra_nodes || die "stop-node left something of a further node behind"
  stop_node || die "stop-node left something behind"
  env_unset NODES
  log "stopped the nodes of $DIR"
}
